"""`placement run --leader-elect` and `placement scheduler run --leader-elect` whose Lease
cannot be created (its namespace does not exist): not a silent standby for ever, but an ERROR
line at the default log level naming the Lease and the server's answer, and `/readyz` saying
why (503), as a user runs them: the console script against an embedded API server, through the
real client."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from controllers.embedded import EmbeddedApiServer
from tests.controllers.cli.test_bad_invocations import clean_env

PLACEMENT = str(Path(sys.executable).with_name("placement"))
GUARD = 60.0  # seconds: only so that a hung process fails the test instead of hanging it
MISSING = "no-such-namespace"
RUNNING = re.compile(r" running.*; http on (\S+)")
ERROR_LINE = re.compile(
    r".* ERROR controllers\.runtime\.leader leader election: cannot create lease "
    rf"{MISSING}/(?P<lease>\S+): .*namespaces \"{MISSING}\" not found.*; retrying every \S+"
)


@asynccontextmanager
async def started(argv: list[str], home: Path) -> AsyncIterator[tuple[str, list[str]]]:
    """The command running (its `... running ...; http on ADDR` line seen): its HTTP address, and
    the lines of its stderr, complete once the block ends (SIGTERM, exit 0)."""
    process = await asyncio.create_subprocess_exec(
        PLACEMENT,
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        env=clean_env(home),
    )
    assert process.stdout is not None and process.stderr is not None
    stderr: list[str] = []
    try:
        async with asyncio.timeout(GUARD):
            while not (running := RUNNING.search((await process.stdout.readline()).decode())):
                assert not process.stdout.at_eof(), "the command ended before running"
        yield running[1], stderr
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(GUARD):
            _, err = await process.communicate()
        stderr.extend(err.decode().splitlines())
        assert process.returncode == 0, stderr
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def readiness_explained(address: str) -> tuple[int, str]:
    """/readyz once it says something other than `ok (standby)` (before the first attempt a
    standby is ready), within the guard."""
    async with aiohttp.ClientSession() as session, asyncio.timeout(GUARD):
        while True:
            async with session.get(f"http://{address}/readyz") as response:
                status, text = response.status, await response.text()
            if text != "ok (standby)":
                return status, text
            await asyncio.sleep(0.05)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.mark.asyncio
async def test_run_with_a_missing_lease_namespace_logs_an_error_and_is_not_ready(
    home: Path, tmp_path: Path
) -> None:
    async with EmbeddedApiServer() as server:
        kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
        argv = ["run", "--kubeconfig", str(kubeconfig), "--leader-elect"]
        argv += ["--lease-namespace", MISSING, "--http-addr", "127.0.0.1:0", "--debug-addr", ""]
        async with started(argv, home) as (address, stderr):
            status, text = await readiness_explained(address)
    assert status == 503
    assert text.startswith(f"not ready (leader election: cannot create lease {MISSING}/"), text
    errors = [line for line in stderr if " ERROR " in line]
    assert len(errors) == 1, stderr
    match = ERROR_LINE.fullmatch(errors[0])
    assert match is not None, errors[0]
    assert match["lease"] == "placement-controller"
    assert "Traceback" not in "\n".join(stderr)


@pytest.mark.asyncio
async def test_scheduler_run_with_a_missing_lease_namespace_logs_an_error_and_is_not_ready(
    home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"leaderElection: {{leaderElect: true, resourceNamespace: {MISSING}}}\n"
    )
    async with EmbeddedApiServer() as server:
        kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
        argv = ["scheduler", "run", "--kubeconfig", str(kubeconfig), "--config", str(config)]
        argv += ["--http-addr", "127.0.0.1:0"]
        async with started(argv, home) as (address, stderr):
            status, text = await readiness_explained(address)
    assert status == 503
    assert text.startswith(f"not ready (leader election: cannot create lease {MISSING}/"), text
    errors = [line for line in stderr if " ERROR " in line]
    leases = set()
    for line in errors:
        match = ERROR_LINE.fullmatch(line)
        assert match is not None, line
        leases.add(match["lease"])
    # The scheduler's Lease and its status controller's, each said once.
    assert len(errors) == len(leases) == 2, stderr
    assert "Traceback" not in "\n".join(stderr)
