"""`--leader-elect-lease-duration`, `--leader-elect-renew-deadline` and
`--leader-elect-retry-period` on `placement run` and `placement scheduler run`: Go durations or
seconds, checked by client-go's rules with the flags named, and handed to the Lease (over the
scheduler configuration's `leaderElection` when given)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controllers.addons.scheduler_options import leader_config, scheduler_options
from controllers.cli import run as run_cli
from controllers.cli import scheduler as scheduler_cli
from controllers.cli.common import EXIT_USAGE
from controllers.cli.main import main

FLAGS = [
    "--leader-elect-lease-duration",
    "5s",
    "--leader-elect-renew-deadline",
    "4",
    "--leader-elect-retry-period",
    "500ms",
]


def test_run_hands_the_timings_to_its_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    async def fake(options: Any) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(run_cli, "run_controller", fake)
    assert main(["run", "--embedded", "--leader-elect", *FLAGS]) == 0
    assert seen[0].lease.applied(15.0, 10.0, 2.0) == (5.0, 4.0, 0.5)


def test_scheduler_run_flags_override_the_configuration(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: true, leaseDuration: 30s, renewDeadline: 20s}\n"
    )
    seen: list[Any] = []

    async def fake(options: Any) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(scheduler_cli, "_run", fake)
    argv = ["scheduler", "run", "--embedded", "--config", str(config)]
    assert main([*argv, "--leader-elect-retry-period", "3s"]) == 0
    options = scheduler_options(seen[0])
    lease = leader_config(seen[0].config, options)
    assert lease is not None
    # The file's lease duration and renew deadline, the flag's retry period.
    assert (lease.lease_duration, lease.renew_deadline, lease.retry_period) == (30.0, 20.0, 3.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["run", "--leader-elect-lease-duration", "5s"],
            "--leader-elect-lease-duration (5.0s) must be greater than "
            "--leader-elect-renew-deadline (10.0s)",
        ),
        (
            ["run", "--leader-elect-renew-deadline", "2s"],
            "--leader-elect-renew-deadline (2.0s) must be greater than 1.2 x "
            "--leader-elect-retry-period (2.0s)",
        ),
        (["run", "--leader-elect-retry-period", "soon"], 'invalid duration "soon"'),
        (["scheduler", "run", "--leader-elect-lease-duration=-1s"], "must be positive"),
        (
            ["scheduler", "run", "--embedded", "--leader-elect-lease-duration", "3s"],
            "--leader-elect-lease-duration (3.0s) must be greater than "
            "--leader-elect-renew-deadline (10.0s)",
        ),
    ],
)
def test_bad_timings_are_one_line_naming_the_flags(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    assert code in (EXIT_USAGE, 1)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and message in err[-1], err
