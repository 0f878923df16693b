"""`placement run` finds its hub as kubectl does, run as a user runs it (the console script, a
clean environment, a home of its own): `~/.kube/config` when nothing else is configured, and a
private embedded hub only when there is no kubeconfig at all, which one line on stderr says."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from controllers.cli.run import NO_HUB
from controllers.embedded import EmbeddedApiServer
from tests.controllers.cli.test_bad_invocations import PLACEMENT, QUIET, clean_env

GUARD = 60.0  # seconds: only so that a hung process fails the test instead of hanging it


async def until_running(home: Path, argv: list[str]) -> tuple[list[str], list[str]]:
    """Run `placement run ARGV` until its `controller running` line, then SIGTERM it (exit 0):
    its stdout and stderr lines."""
    process = await asyncio.create_subprocess_exec(
        PLACEMENT,
        "run",
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        env=clean_env(home),
        cwd=home,
    )
    assert process.stdout is not None
    out: list[str] = []
    try:
        async with asyncio.timeout(GUARD):
            while not out or not out[-1].startswith("controller running"):
                line = (await process.stdout.readline()).decode()
                assert line, f"ended before running: {out}"
                out.append(line.rstrip("\n"))
            process.send_signal(signal.SIGTERM)
            rest, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()
    return out + rest.decode().splitlines(), err.decode().splitlines()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.mark.asyncio
async def test_with_no_kubeconfig_at_all_run_says_it_starts_an_embedded_hub(home: Path) -> None:
    out, err = await until_running(home, QUIET)
    assert err == [NO_HUB]
    assert any(line.startswith("embedded hub listening on http://127.0.0.1:") for line in out)


@pytest.mark.asyncio
async def test_run_uses_the_default_kubeconfig_like_kubectl(home: Path) -> None:
    async with EmbeddedApiServer() as server:
        (home / ".kube").mkdir()
        server.kubeconfig(home / ".kube" / "config")
        out, err = await until_running(home, QUIET)
        listed = {entry.resource for entry in server.audit if entry.verb == "list"}
    assert {"placements", "managedclusters", "placementdecisions"} <= listed
    assert err == []
    assert not any("embedded hub" in line for line in out), out


@pytest.mark.asyncio
async def test_scheduler_run_kubelet_asks_for_an_embedded_server_even_with_a_kubeconfig(
    home: Path,
) -> None:
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\n")  # never read
    process = await asyncio.create_subprocess_exec(
        *(PLACEMENT, "scheduler", "run", "--kubelet", "--http-addr", "127.0.0.1:0"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        env=clean_env(home),
        cwd=home,
    )
    assert process.stdout is not None
    try:
        async with asyncio.timeout(GUARD):
            first = (await process.stdout.readline()).decode()
            process.send_signal(signal.SIGTERM)
            _, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert first.startswith("embedded API server with simulated kubelets listening on "), first
    assert process.returncode == 0, err.decode()
