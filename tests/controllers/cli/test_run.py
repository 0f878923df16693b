"""`placement run` options that need no hub: where the Lease lives, usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.cli.main import EXIT_ERROR, EXIT_USAGE, main
from controllers.cli.run import DEFAULT_LEASE_NAMESPACE, lease_namespace


def test_the_lease_namespace_comes_from_the_flag_then_the_pod_then_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.setattr("controllers.cli.run.SERVICE_ACCOUNT_NAMESPACE", Path("/nonexistent/ns"))
    assert lease_namespace(None) == DEFAULT_LEASE_NAMESPACE
    monkeypatch.setenv("POD_NAMESPACE", "hub-system")
    assert lease_namespace(None) == "hub-system"
    assert lease_namespace("explicit") == "explicit"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--workers", "0"], "--workers: must be at least 1 (got 0)", id="workers"),
        pytest.param(["--resync", "0"], "--resync: must be positive (got 0.0)", id="resync"),
    ],
)
def test_run_refuses_nonsense_numbers(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *argv]) == EXIT_ERROR
    assert message in capsys.readouterr().err


def test_run_with_an_unknown_log_format_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--log-format", "xml"])
    assert exit_info.value.code == EXIT_USAGE
    assert "--log-format" in capsys.readouterr().err
