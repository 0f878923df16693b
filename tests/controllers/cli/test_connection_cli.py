"""Connecting to a cluster, as a newcomer meets it (the console script, a clean environment, a
home of its own): `webhook run` with no cluster says every place it looked, in one line, exit 1;
against a cluster that does not answer it retries one WARNING line per round and gives up after
`--sync-timeout` as `placement run` does (it used to retry for ever, a line per kind every
time); `placement run`, `scheduler run` and `webhook run` say at INFO which kubeconfig, context
and server they chose, never the token."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from controllers.addons.webhook_certs import mint, write_bundle
from tests.controllers.cli.test_bad_invocations import free_port, kubeconfig
from tests.controllers.cli.test_unreachable_cluster import (
    REFUSED,
    assert_one_line_per_round,
    stderr_of,
)

WEBHOOK_KINDS = "ReplicaSet, Deployment, StatefulSet, Pod"
TOKEN = "do-not-print-this-token"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The TLS flags of `webhook run`, with a pair made for 127.0.0.1."""
    paths = write_bundle(mint(["127.0.0.1"], days=1), tmp_path_factory.mktemp("certs"))
    return ["--tls-cert-file", str(paths["cert"]), "--tls-key-file", str(paths["key"])]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def webhook(certs: list[str], *argv: str) -> list[str]:
    return ["webhook", "run", *certs, "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", *argv]


def closed_cluster(path: Path) -> tuple[Path, str]:
    """A kubeconfig of a server nothing listens on, with a token: (the file, its server)."""
    server = f"http://127.0.0.1:{free_port()}"
    kubeconfig(path, server)
    doc = yaml.safe_load(path.read_text())
    doc["users"][0]["user"]["token"] = TOKEN
    path.write_text(yaml.safe_dump(doc))
    return path, server


def test_webhook_with_no_cluster_says_every_place_it_looked(home: Path, certs: list[str]) -> None:
    code, lines = stderr_of(webhook(certs), home)
    assert code == 1
    assert lines == [
        "webhook: no cluster to connect to: --kubeconfig not given, $KUBECONFIG not set, not in "
        "a pod ($KUBERNETES_SERVICE_HOST not set), ~/.kube/config "
        f"({home}/.kube/config) does not exist"
    ]


def test_webhook_against_an_unreachable_cluster_gives_up_after_sync_timeout(
    home: Path, tmp_path: Path, certs: list[str]
) -> None:
    closed, server = closed_cluster(tmp_path / "closed.yaml")
    code, lines = stderr_of(
        webhook(certs, "--kubeconfig", str(closed), "--sync-timeout", "2"), home
    )
    assert code == 1
    text = "\n".join(lines)
    assert "Traceback" not in text and TOKEN not in text
    assert any(
        line.endswith(
            f' INFO controllers.kube.config cluster: kubeconfig {closed}, context "hub" '
            f"(its current-context), server {server}"
        )
        for line in lines
    ), lines
    assert_one_line_per_round(
        lines,
        rf"caches not synced \(attempt (?P<attempt>\d+)\): {WEBHOOK_KINDS}: list failed: "
        rf"{REFUSED}; retrying in \S+",
    )
    assert re.fullmatch(
        rf"webhook: caches not synced after 2s: {WEBHOOK_KINDS}: list failed: {REFUSED}",
        lines[-1],
    ), lines[-1]


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["run", "--debug-addr", ""], id="placement-run"),
        pytest.param(["scheduler", "run"], id="scheduler-run"),
    ],
)
def test_the_daemons_say_which_kubeconfig_context_and_server_they_chose(
    command: list[str], home: Path, tmp_path: Path
) -> None:
    closed, server = closed_cluster(tmp_path / "closed.yaml")
    argv = [*command, "--http-addr", "127.0.0.1:0", "--sync-timeout", "0.5"]
    code, lines = stderr_of([*argv, "--kubeconfig", str(closed), "--context", "hub"], home)
    assert code == 1
    chosen = [line for line in lines if " INFO controllers.kube.config " in line]
    assert len(chosen) == 1, lines  # once, though the scheduler opens two clients
    assert chosen[0].endswith(f'cluster: kubeconfig {closed}, context "hub", server {server}')
    assert TOKEN not in "\n".join(lines)
