"""Bad invocations of the `placement` command, run as a user runs it (the console script, in a
subprocess, with a clean environment and an empty home): each ends with its exit code (2 for a
usage error, 1 for an error) and the one line on stderr that says what is wrong, never a
traceback. A usage error prints argparse's usage block before its one error line.

`placement run`'s start-up failures are here too: a missing or broken kubeconfig, an unknown
context, an HTTP address taken, an unreachable hub and a hub without the CRDs (caught by a short
`--sync-timeout`), and a signal during start-up, which stops it at once.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from controllers.cli.crds import SAMPLES_DIR
from controllers.embedded import EmbeddedApiServer

PLACEMENT = str(Path(sys.executable).with_name("placement"))
GUARD = 120.0  # seconds: only so that a hung process fails the test instead of hanging it
HUB_KINDS = (
    "ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding, AddOnPlacementScore, "
    "PlacementDecision, Placement"
)
# Quiet logs: what is left on stderr is what a person must read.
QUIET = ["--log-level", "ERROR", "--http-addr", "127.0.0.1:0", "--debug-addr", "127.0.0.1:0"]


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stderr.splitlines()


def clean_env(home: Path) -> dict[str, str]:
    """The caller's environment without any hub configured, with `home` as $HOME."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "POD_NAMESPACE")}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    env["HOME"] = str(home)
    return env


def placement(argv: list[str], home: Path, **env: str) -> Outcome:
    done = subprocess.run(
        [PLACEMENT, *argv],
        capture_output=True,
        text=True,
        env={**clean_env(home), **env},
        cwd=home,
        stdin=subprocess.DEVNULL,
        timeout=GUARD,
        check=False,
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def assert_one_error_line(outcome: Outcome, code: int, pattern: str) -> None:
    """Exit `code`, no traceback, and exactly one line on stderr, matching `pattern`."""
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert outcome.code == code, outcome.stderr
    assert len(outcome.lines) == 1, outcome.stderr
    assert re.fullmatch(pattern, outcome.lines[0]), outcome.lines[0]


def assert_usage_error(outcome: Outcome, pattern: str) -> None:
    """Exit 2, no traceback, argparse's usage block then exactly one error line."""
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert outcome.code == 2, outcome.stderr
    *usage, last = outcome.lines
    assert re.fullmatch(r"placement( \w+)?: error: " + pattern, last), last
    assert all(line.startswith(("usage:", " ")) for line in usage), outcome.stderr


def free_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def kubeconfig(path: Path, server: str, current: str | None = "hub") -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "hub", "context": {"cluster": "c", "user": "u"}}],
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def dangling(path: Path) -> Path:
    """A kubeconfig whose context names a cluster the file does not have."""
    kubeconfig(path, "http://x")
    doc = yaml.safe_load(path.read_text())
    doc["contexts"][0]["context"]["cluster"] = "gone"
    path.write_text(yaml.safe_dump(doc))
    return path


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def unreachable(tmp_path: Path) -> Path:
    """A kubeconfig whose server is a closed local port."""
    return kubeconfig(tmp_path / "closed.yaml", f"http://127.0.0.1:{free_port()}")


@pytest.fixture
def listening() -> Iterator[int]:
    """A local port something already listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        pytest.param([], "the following arguments are required: COMMAND", id="no-verb"),
        pytest.param(["bogus"], r"argument COMMAND: invalid choice: 'bogus' .*", id="bad-verb"),
        pytest.param(["validate"], "the following arguments are required: -f/--filename", id="f"),
        pytest.param(
            ["simulate", "-f", str(SAMPLES_DIR), "-o", "bogus"],
            r"argument -o/--output: invalid choice: 'bogus' .*",
            id="simulate-output",
        ),
        pytest.param(
            ["explain", "-f", str(SAMPLES_DIR), "--placement", "noslash"],
            r"--placement: expected NAMESPACE/NAME \(got 'noslash'\)",
            id="explain-placement",
        ),
        pytest.param(["demo", "--bogus"], "unrecognized arguments: --bogus", id="demo-flag"),
        pytest.param(
            ["run", "--http-addr", "nonsense"],
            r"argument --http-addr: invalid listen address 'nonsense': expected host:port, "
            r":port or \[ipv6\]:port",
            id="run-http-addr",
        ),
        pytest.param(
            ["run", "--http-addr", "127.0.0.1:99999"],
            r"argument --http-addr: invalid listen address '127.0.0.1:99999': port must be .*",
            id="run-http-port",
        ),
        pytest.param(
            ["run", "--workers", "0"],
            r"argument --workers: expected a whole number above 0 \(got '0'\)",
            id="run-workers",
        ),
        pytest.param(
            ["run", "--resync", "soon"],
            r"argument --resync: expected a number above 0 \(got 'soon'\)",
            id="run-resync",
        ),
        pytest.param(
            ["run", "--sync-timeout", "-5"],
            r"argument --sync-timeout: expected a number above 0 \(got '-5'\)",
            id="run-sync-timeout",
        ),
        pytest.param(
            ["run", "--log-level", "LOUD"], r"argument --log-level: invalid choice: .*", id="log"
        ),
        pytest.param(
            ["run", "--load", ".", "--kubeconfig", "hub.yaml"],
            r"--load only applies to the embedded hub, and a hub is configured .*: add --embedded",
            id="run-load-with-a-hub",
        ),
    ],
)
def test_a_usage_error_exits_2_with_one_error_line(
    argv: list[str], pattern: str, home: Path
) -> None:
    assert_usage_error(placement(argv, home), pattern)


def test_validating_a_missing_file_names_it(home: Path) -> None:
    outcome = placement(["validate", "-f", "/nonexistent"], home)
    assert "Traceback" not in outcome.stderr
    assert outcome.code == 1
    assert outcome.lines[0] == "/nonexistent: no such file or directory"


def test_explaining_an_unknown_placement_names_it(home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    outcome = placement(["explain", "-f", str(empty), "--placement", "apps/nope"], home)
    assert_one_error_line(outcome, 1, f"Placement apps/nope: not found in {re.escape(str(empty))}")


@pytest.mark.parametrize(
    ("setup", "pattern"),
    [
        pytest.param(
            lambda d: ["--kubeconfig", str(d / "missing.yaml")],
            r"error: kubeconfig \S+/missing.yaml: no such file",
            id="kubeconfig-missing",
        ),
        pytest.param(
            lambda d: ["--kubeconfig", str(d)],
            r"error: kubeconfig \S+: cannot read: Is a directory",
            id="kubeconfig-a-folder",
        ),
        pytest.param(
            lambda d: ["--kubeconfig", str(write(d / "bad.yaml", "clusters: [\n"))],
            r"error: kubeconfig \S+/bad.yaml: invalid YAML: .*",
            id="kubeconfig-not-yaml",
        ),
        pytest.param(
            lambda d: ["--kubeconfig", str(write(d / "list.yaml", "- a\n- b\n"))],
            r"error: kubeconfig \S+/list.yaml: not a kubeconfig \(expected a mapping .*\)",
            id="kubeconfig-not-a-mapping",
        ),
        pytest.param(
            lambda d: [
                "--kubeconfig",
                str(kubeconfig(d / "k.yaml", "http://x")),
                "--context",
                "no",
            ],
            r'error: kubeconfig \S+/k.yaml: context "no" does not exist \(contexts: hub\)',
            id="context-unknown",
        ),
        pytest.param(
            lambda d: ["--kubeconfig", str(kubeconfig(d / "k.yaml", "http://x", current=None))],
            r"error: kubeconfig \S+/k.yaml: no current-context set; pass --context "
            r"\(contexts: hub\)",
            id="context-none-current",
        ),
        pytest.param(
            lambda d: ["--kubeconfig", str(dangling(d / "k.yaml"))],
            r'error: kubeconfig \S+/k.yaml: context "hub": .*\bgone\b.*',
            id="context-of-a-missing-cluster",
        ),
        pytest.param(
            lambda d: ["--context", "hub"],
            r"error: kubeconfig \S+/home/.kube/config: no such file",
            id="context-alone-reads-the-default-kubeconfig",
        ),
        pytest.param(
            lambda d: ["--embedded", "--load", str(d / "nowhere")],
            r"error: embedded hub: \S+/nowhere: no such file or directory",
            id="embedded-load-missing",
        ),
    ],
)
def test_run_says_which_file_or_context_failed_in_one_line(
    setup: Callable[[Path], list[str]], pattern: str, home: Path, tmp_path: Path
) -> None:
    argv = setup(tmp_path)
    assert_one_error_line(placement(["run", *argv, *QUIET], home), 1, pattern)


def test_run_in_a_pod_without_a_service_account_says_so(home: Path) -> None:
    # KUBERNETES_SERVICE_HOST says "in a pod"; the token file is not there.
    outcome = placement(
        ["run", *QUIET], home, KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT="1"
    )
    assert_one_error_line(outcome, 1, r"error: in-cluster service account: .*")


def test_run_names_the_http_address_it_cannot_listen_on_and_leaves_no_folder(
    home: Path, listening: int
) -> None:
    argv = ["run", "--embedded", "--log-level", "ERROR", "--http-addr", f"127.0.0.1:{listening}"]
    outcome = placement(argv, home)
    assert_one_error_line(
        outcome, 1, f"error: HTTP endpoint 127.0.0.1:{listening}: cannot listen: .*"
    )
    (folder,) = re.findall(r"export KUBECONFIG=(\S+)/kubeconfig", outcome.stdout)
    assert not Path(folder).exists()


def test_run_against_an_unreachable_hub_names_every_kind_it_could_not_list(
    home: Path, unreachable: Path
) -> None:
    argv = ["run", "--kubeconfig", str(unreachable), "--sync-timeout", "0.5", *QUIET]
    outcome = placement(argv, home)
    port = yaml.safe_load(unreachable.read_text())["clusters"][0]["cluster"]["server"]
    port = port.rsplit(":", 1)[1]
    assert_one_error_line(
        outcome,
        1,
        rf"error: caches not synced after 0.5s: {HUB_KINDS}: list failed: "
        rf"Cannot connect to host 127.0.0.1:{port} .*",
    )


@pytest.mark.asyncio
async def test_run_against_a_hub_without_the_crds_says_they_are_not_served(
    home: Path, tmp_path: Path
) -> None:
    no_crds = tmp_path / "no-crds"
    no_crds.mkdir()
    async with EmbeddedApiServer(crd_dir=no_crds) as server:
        config = server.kubeconfig(tmp_path / "kubeconfig")
        process = await asyncio.create_subprocess_exec(
            PLACEMENT,
            *["run", "--kubeconfig", str(config), "--sync-timeout", "0.5", *QUIET],
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
            env=clean_env(home),
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), GUARD)
    outcome = Outcome(process.returncode or 0, stdout.decode(), stderr.decode())
    assert_one_error_line(
        outcome,
        1,
        rf"error: caches not synced after 0.5s: {HUB_KINDS}: not served by the server "
        r"\(404 on list: is its CRD installed\?\)",
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_start_up_stops_run_at_once_with_exit_0(
    sig: signal.Signals, home: Path, unreachable: Path
) -> None:
    # The hub never answers and the sync timeout is ten minutes: only the signal can end it
    # before the guard, and it must end it as a clean stop, not as a start-up failure.
    argv = ["run", "--kubeconfig", str(unreachable), "--sync-timeout", "600"]
    argv += ["--http-addr", "127.0.0.1:0", "--debug-addr", "127.0.0.1:0"]
    with subprocess.Popen(
        [PLACEMENT, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=clean_env(home),
    ) as process:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # the endpoint listens once the handlers are in place
            seen.append(line)
            if "HTTP endpoint listening" in line:
                break
        process.send_signal(sig)
        _, rest = process.communicate(timeout=GUARD)
    stderr = "".join(seen) + rest
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "error:" not in stderr
    assert "stopped by a signal during start-up" in stderr


def test_run_removes_the_embedded_hubs_kubeconfig_folder_when_stopped(home: Path) -> None:
    argv = ["run", "--embedded", "--load", str(SAMPLES_DIR), *QUIET]
    with subprocess.Popen(
        [PLACEMENT, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=clean_env(home),
    ) as process:
        assert process.stdout is not None
        folder = None
        for line in process.stdout:
            if line.startswith("export KUBECONFIG="):
                folder = Path(line.removeprefix("export KUBECONFIG=").strip()).parent
                assert folder.is_dir()
            if line.startswith("controller running"):
                break
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=GUARD)
    assert process.returncode == 0, stderr
    assert stderr == ""
    assert folder is not None
    assert not folder.exists()
