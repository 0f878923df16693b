"""`placement run` and `placement scheduler run` against a hub or cluster that does not answer
(a closed local port), at the default log level: start-up retries until `--sync-timeout`, one
WARNING line per retry round naming every kind that failed (not one per kind per retry), then
exit 1 with one `error:` line naming the kinds and the cause. The scheduler used to give up at
its first refused connection."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.controllers.cli.test_bad_invocations import HUB_KINDS, clean_env, free_port, kubeconfig

PLACEMENT = str(Path(sys.executable).with_name("placement"))
GUARD = 120.0  # seconds: only so that a hung process fails the test instead of hanging it
REFUSED = r"Cannot connect to host 127\.0\.0\.1:\d+ .*"
# The optional kinds the scheduler asks about (PodGroup, ElasticQuota, ..., PriorityClass).
SCHEDULER_KINDS = r"PodGroup, ElasticQuota, (?:\w+, )*PriorityClass"
# Long enough for a first round of failures on a busy machine (each failed list is retried by
# the client first); the test counts rounds, it does not time them.
TIMEOUT = "5"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def stderr_of(argv: list[str], home: Path) -> tuple[int, list[str]]:
    done = subprocess.run(
        [PLACEMENT, *argv],
        capture_output=True,
        text=True,
        env=clean_env(home),
        stdin=subprocess.DEVNULL,
        timeout=GUARD,
        check=False,
    )
    return done.returncode, done.stderr.splitlines()


def assert_one_line_per_round(lines: list[str], pattern: str) -> None:
    """Every WARNING line is a round (`(attempt N)`, N counting 1, 2, 3, ...) matching
    `pattern`; at least one round before the end."""
    warnings = [line for line in lines if " WARNING " in line]
    attempts = []
    for line in warnings:
        match = re.fullmatch(rf".* WARNING \S+ {pattern}", line)
        assert match is not None, line
        attempts.append(int(match["attempt"]))
    assert attempts, lines
    assert attempts == list(range(1, len(attempts) + 1)), warnings


def test_run_against_an_unreachable_hub_says_each_retry_round_once(
    home: Path, tmp_path: Path
) -> None:
    closed = kubeconfig(tmp_path / "closed.yaml", f"http://127.0.0.1:{free_port()}")
    argv = ["run", "--kubeconfig", str(closed), "--sync-timeout", TIMEOUT]
    code, lines = stderr_of([*argv, "--http-addr", "127.0.0.1:0", "--debug-addr", ""], home)
    assert code == 1
    assert "Traceback" not in "\n".join(lines)
    assert_one_line_per_round(
        lines,
        rf"caches not synced \(attempt (?P<attempt>\d+)\): {HUB_KINDS}: list failed: {REFUSED}; "
        r"retrying in \S+",
    )
    assert re.fullmatch(
        rf"error: caches not synced after {TIMEOUT}s: {HUB_KINDS}: list failed: {REFUSED}",
        lines[-1],
    ), lines[-1]


def test_scheduler_run_against_an_unreachable_cluster_retries_as_run_does(
    home: Path, tmp_path: Path
) -> None:
    closed = kubeconfig(tmp_path / "closed.yaml", f"http://127.0.0.1:{free_port()}")
    argv = ["scheduler", "run", "--kubeconfig", str(closed), "--sync-timeout", TIMEOUT]
    code, lines = stderr_of([*argv, "--http-addr", "127.0.0.1:0"], home)
    assert code == 1
    assert "Traceback" not in "\n".join(lines)
    assert_one_line_per_round(
        lines,
        rf"cannot tell which kinds are served \(attempt (?P<attempt>\d+)\): {SCHEDULER_KINDS}: "
        rf"list failed: {REFUSED}; retrying in \S+",
    )
    assert re.fullmatch(
        rf"error: caches not synced after {TIMEOUT}s: {SCHEDULER_KINDS}: list failed: {REFUSED}",
        lines[-1],
    ), lines[-1]
