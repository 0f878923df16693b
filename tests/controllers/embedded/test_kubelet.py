"""The kubelet simulation of the embedded server (`--kubelet`, `KubeletOptions`): nodes Ready,
bound pods Running after the start delay, pods on a node that does not exist Pending until it
does, deleted pods Terminating for their grace period (capped) and then gone. Timers run on the
server's loop; with a zero delay the tests wait only for loop turns (bounded by `eventually`)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from apis.core import Node, Pod
from apis.registry import parse_as
from controllers.embedded import EmbeddedApiServer, KubeletOptions
from controllers.embedded.__main__ import main
from controllers.kube.errors import NotFoundError
from controllers.kube.gateway import Gateway, WatchEvent
from tests.controllers.embedded.hub import WAIT, eventually, hub, kubectl, pod
from tests.controllers.embedded.test_tables import lines

pytestmark = pytest.mark.asyncio

FAST = KubeletOptions(start_delay=0.0, grace_cap=0.0)


def node(name: str, **status: Any) -> Node:
    """A Node as a test writes it; without status fields, with `status: null` on the wire."""
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    doc["status"] = status or None
    return parse_as(Node, doc)


def conditions(obj: Pod | Node) -> dict[str, str]:
    found = (obj.status.conditions if obj.status is not None else None) or []
    return {c["type"]: c["status"] for c in found}


async def phase(gw: Gateway, name: str) -> str | None:
    got = await gw.get(Pod, name, "default")
    return got.status.phase if got.status is not None else None


async def test_a_node_gets_ready_once_with_allocatable_and_an_address() -> None:
    async with hub(kubelet=FAST) as (server, gw):
        await gw.create(node("n1", capacity={"cpu": "4", "memory": "8Gi"}))
        ready = await _eventually_node(gw, "n1")
        assert conditions(ready) == {
            "MemoryPressure": "False",
            "DiskPressure": "False",
            "PIDPressure": "False",
            "Ready": "True",
        }
        assert ready.status is not None and ready.status.allocatable is not None
        assert ready.status.allocatable["cpu"].milli() == 4000
        wire = ready.to_wire()["status"]
        assert wire["addresses"][0]["type"] == "InternalIP"
        await server.kubelet.idle()
        # Posted once, no heartbeat: the node does not change any more.
        assert (await gw.get(Node, "n1")).metadata.resource_version == (
            ready.metadata.resource_version
        )


async def _eventually_node(gw: Gateway, name: str) -> Node:
    async def ready() -> bool:
        return conditions(await gw.get(Node, name)).get("Ready") == "True"

    await eventually(ready)
    return await gw.get(Node, name)


async def test_a_node_created_not_ready_stays_so() -> None:
    async with hub(kubelet=FAST) as (server, gw):
        down = {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}
        await gw.create(node("n1", conditions=[down]))
        await server.kubelet.idle()
        assert conditions(await gw.get(Node, "n1")) == {"Ready": "False"}


async def test_a_bound_pod_runs_and_an_unbound_one_stays_pending() -> None:
    async with hub(kubelet=FAST) as (server, gw):
        await gw.create(node("n1"))
        await gw.create(pod("web", containers=[{"name": "c", "image": "nginx"}]))
        await gw.create(pod("waiting"))
        await gw.bind("default", "web", "n1")
        await eventually(lambda: _is_running(gw, "web"))
        running = await gw.get(Pod, "web", "default")
        assert conditions(running) == {
            "PodScheduled": "True",
            "PodReadyToStartContainers": "True",
            "Initialized": "True",
            "ContainersReady": "True",
            "Ready": "True",
        }
        wire = running.to_wire()["status"]
        assert wire["startTime"] and wire["podIP"] and wire["hostIP"]
        (container,) = wire["containerStatuses"]
        assert (container["name"], container["ready"], container["restartCount"]) == ("c", True, 0)
        assert "running" in container["state"]
        await server.kubelet.idle()
        assert await phase(gw, "waiting") == "Pending"
        listed = await gw.list(Pod, field_selector="status.phase=Running")
        assert [p.name for p in listed.items] == ["web"]


async def _is_running(gw: Gateway, name: str) -> bool:
    return await phase(gw, name) == "Running"


async def test_a_pod_bound_to_a_missing_node_runs_once_the_node_exists() -> None:
    async with hub(kubelet=FAST) as (server, gw):
        await gw.create(pod("p1"))
        await gw.bind("default", "p1", "later")
        await server.kubelet.idle()
        assert await phase(gw, "p1") == "Pending"
        await gw.create(node("later"))
        await eventually(lambda: _is_running(gw, "p1"))


async def test_the_start_delay_holds_the_pod_pending_until_it_has_passed() -> None:
    async with hub(kubelet=KubeletOptions(start_delay=3600.0)) as (server, gw):
        await gw.create(node("n1"))
        await gw.create(pod("p1"))
        await gw.bind("default", "p1", "n1")
        await asyncio.sleep(0.05)  # loop turns for anything due now (nothing is)
        assert await phase(gw, "p1") == "Pending"
        assert server.kubelet.pending == 1  # its start, an hour away


async def test_a_deleted_pod_terminates_then_goes() -> None:
    async with hub(kubelet=FAST) as (server, gw):
        await gw.create(node("n1"))
        await gw.create(pod("p1", terminationGracePeriodSeconds=45))
        await gw.bind("default", "p1", "n1")
        await eventually(lambda: _is_running(gw, "p1"))
        rv = (await gw.list(Pod)).resource_version
        watching = asyncio.create_task(_collect(gw, rv, 2))
        await server.wait_for_watchers(1)
        await gw.delete(Pod, "p1", "default")
        terminating, deleted = await watching
        assert terminating.type == "MODIFIED" and terminating.object is not None
        assert terminating.object.metadata.deletion_grace_period_seconds == 45
        assert deleted.type == "DELETED"
        with pytest.raises(NotFoundError):
            await gw.get(Pod, "p1", "default")


async def _collect(gw: Gateway, rv: str, count: int) -> list[WatchEvent[Pod]]:
    out: list[WatchEvent[Pod]] = []
    async with asyncio.timeout(WAIT):
        async for event in gw.watch(Pod, rv, bookmarks=False):
            out.append(event)
            if len(out) == count:
                break
    return out


async def test_without_a_cap_a_pod_terminates_for_its_whole_grace_period() -> None:
    async with hub(kubelet=KubeletOptions(start_delay=0.0)) as (server, gw):
        await gw.create(node("n1"))
        await gw.create(pod("p1"))
        await gw.bind("default", "p1", "n1")
        await eventually(lambda: _is_running(gw, "p1"))
        async with client.ApiClient(client.Configuration(host=server.url)) as api:
            await client.CoreV1Api(api).delete_namespaced_pod("p1", "default")
        held = await gw.get(Pod, "p1", "default")
        assert held.metadata.deletion_grace_period_seconds == 30  # the pod's default
        assert server.kubelet.pending == 1  # its removal, 30 s away
        assert held.metadata.deletion_timestamp is not None


async def test_kubectl_shows_running_pods_and_ready_nodes(tmp_path: Path) -> None:
    async with hub(kubelet=FAST) as (server, gw):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        await gw.create(node("n1"))
        await gw.create(pod("web"))
        await gw.bind("default", "web", "n1")
        await eventually(lambda: _is_running(gw, "web"))
        code, out, err = await kubectl(config, "get", "nodes")
        assert code == 0, err
        assert lines(out)[1][:2] == ["n1", "Ready"]
        code, out, err = await kubectl(config, "get", "pods", "-o", "wide")
        assert code == 0, err
        row = lines(out)[1]
        assert row[:3] == ["web", "1/1", "Running"]
        assert row[6] == "n1"


async def test_the_snapshot_is_caught_up_at_start(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: default}\n"
        "spec: {nodeName: n1, containers: [{name: c}]}\nstatus: {phase: Pending}\n"
    )
    server = EmbeddedApiServer(snapshot=tmp_path, kubelet=FAST)
    await server.start()
    try:
        await server.kubelet.idle()
        pods = server.store.objects[("", "pods")]
        assert pods[("default", "p1")]["status"]["phase"] == "Running"
    finally:
        await server.stop()
    assert server.kubelet.pending == 0


async def test_the_command_line_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--kubelet-grace-cap", "1"])
    assert exit_.value.code == 2
    assert "need --kubelet" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--kubelet", "--kubelet-start-delay", "-1"])
    assert "must be 0 or more seconds" in capsys.readouterr().err


async def test_the_standalone_server_runs_the_kubelet(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controllers.embedded",
        "--kubelet",
        "--kubelet-start-delay",
        "0",
        "--kubelet-grace-cap",
        "0",
        "--kubeconfig",
        str(config),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            printed = [(await process.stdout.readline()).decode() for _ in range(3)]
        assert "listening on http://127.0.0.1:" in printed[0]
        assert "kubelet simulation: pods start 0s after binding, grace period cap 0s" in printed[1]
        assert printed[2].startswith("export KUBECONFIG=")
        code, _, err = await kubectl(
            config,
            "apply",
            "-f",
            "-",
            stdin="apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
        )
        assert code == 0, err

        async def ready() -> bool:
            code, out, _ = await kubectl(config, "get", "nodes", "--no-headers")
            return code == 0 and out.split()[1:2] == ["Ready"]

        await eventually(ready, timeout=30)
    finally:
        process.terminate()
        await process.wait()
