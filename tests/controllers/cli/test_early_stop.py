"""Ctrl-C or SIGTERM in the first moments of any verb (the command still importing its modules,
its own signal handling not in place yet) ends it quietly: exit code 0, nothing on stderr, no
traceback. Run as a user runs it (the console script); the signal is sent as soon as the
command has caught SIGTERM (`/proc/PID/status`, Linux), which `main` does first of all, so
what is measured is the command's handling, not Python's start-up."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controllers.cli.crds import SAMPLES_DIR
from tests.controllers.cli.test_bad_invocations import PLACEMENT, clean_env

GUARD = 60.0  # seconds: only so that a hung process fails the test instead of hanging it
HTTP = ["--http-addr", "127.0.0.1:0"]

VERBS = {
    "validate": ["validate", "-f", str(SAMPLES_DIR)],
    "simulate": ["simulate", "-f", str(SAMPLES_DIR / "hub")],
    "explain": ["explain", "-f", str(SAMPLES_DIR / "hub"), "--placement", "default/all"],
    "run": ["run", "--embedded", *HTTP, "--debug-addr", ""],
    "demo": ["demo"],
    "scheduler-simulate": ["scheduler", "simulate", "-f", str(SAMPLES_DIR / "pods")],
    "scheduler-run": ["scheduler", "run", "--embedded", *HTTP],
    "webhook-certs": ["webhook", "certs", "--service", "s", "--namespace", "n", "--out", "OUT"],
    "webhook-run": ["webhook", "run", "--tls-cert-file", "c", "--tls-key-file", "k"],
}


def catches(pid: int, sig: signal.Signals) -> bool:
    """Whether process `pid` has a handler for `sig` (its SigCgt mask)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:  # ended
        return False
    (mask,) = [line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")]
    return bool(int(mask, 16) >> (sig - 1) & 1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("verb", list(VERBS))
def test_a_stop_in_the_first_moments_of_a_verb_exits_0_quietly(
    verb: str, sig: signal.Signals, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    argv = [str(tmp_path / "certs") if word == "OUT" else word for word in VERBS[verb]]
    with subprocess.Popen(
        [PLACEMENT, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=clean_env(home),
        cwd=home,
    ) as process:
        deadline = time.monotonic() + GUARD
        while not catches(process.pid, signal.SIGTERM):
            assert process.poll() is None, "ended before catching SIGTERM"
            assert time.monotonic() < deadline, "SIGTERM never caught"
            time.sleep(0.001)
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=GUARD)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert stderr == "", stderr
