"""Capacity scheduling end to end: the capacity scheduling KEP's samples played step by step on
the embedded API server with simulated kubelets (its own process), the scheduler and the status
controller through the real client. Pods are created one at a time in the samples' order, each
settled (bound, or reported Pending) before the next, as the KEP tells the stories; victims go
through real deletions. Asserted after each step: which pods run, which were preempted, and the
quotas' `status.used`."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Namespace, Node, Pod
from apis.meta import KubeObject
from apis.scheduling import ElasticQuota, PriorityClass
from controllers.addons.gateway import PodGateway
from controllers.cli.crds import SAMPLES_DIR
from controllers.cli.manifests import load_paths
from tests.controllers.addons.cluster import server_process
from tests.controllers.addons.test_gang_e2e import controllers
from tests.controllers.embedded.hub import eventually

pytestmark = pytest.mark.asyncio

QUOTAS = SAMPLES_DIR / "pods" / "quotas"


def sample(name: str) -> list[KubeObject]:
    return [o.obj for o in load_paths([QUOTAS / name]).objects]


def quick(p: Pod) -> Pod:
    """The sample pod without its creation time (the server sets it) and with a 1 s grace
    period, so a victim goes in a second rather than thirty."""
    meta = p.metadata.model_copy(update={"creation_timestamp": None})
    spec = p.spec.model_copy(update={"termination_grace_period_seconds": 1})
    return p.model_copy(update={"metadata": meta, "spec": spec})


async def state(gw: PodGateway) -> dict[str, Any]:
    pods = (await gw.list(Pod)).items
    running = sorted(p.name for p in pods if p.spec.node_name and not p.metadata.deletion_timestamp)
    pending = sorted(p.name for p in pods if not p.spec.node_name)
    return {"running": running, "pending": pending, "names": {p.name for p in pods}}


async def used(gw: PodGateway) -> dict[str, dict[str, str]]:
    out = {}
    for q in (await gw.list(ElasticQuota)).items:
        status = q.status
        out[q.metadata.namespace or ""] = {
            k: str(v) for k, v in ((status.used if status else None) or {}).items()
        }
    return out


def reported(p: Pod) -> bool:
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False"
        for c in (p.status.conditions if p.status else None) or []
    )


async def play(gw: PodGateway, objects: list[KubeObject]) -> None:
    """Namespaces, nodes, quotas and priority classes first; then the pods in the file's
    order, each settled (bound, or reported Pending) before the next."""
    for obj in objects:
        if isinstance(obj, Namespace | Node | ElasticQuota | PriorityClass):
            await gw.create(obj)
    for obj in objects:
        if not isinstance(obj, Pod):
            continue
        await gw.create(quick(obj))
        name, ns = obj.metadata.name or "", obj.metadata.namespace

        async def settled(name: str = name, ns: str | None = ns) -> bool:
            got = await gw.get(Pod, name, ns)
            return bool(got.spec.node_name) or reported(got)

        await eventually(settled, timeout=30)


async def test_kep_story_1_borrows_reclaims_by_preemption_and_keeps_the_rest_pending() -> None:
    async with server_process("--kubelet") as (url, gw), controllers(url):
        await play(gw, sample("kep-story-1.yaml"))

        async def outcome() -> dict[str, Any]:
            now = await state(gw)
            done = (
                now["running"] == ["a1", "a2", "a3", "b1", "b2", "b3"] and "a4" not in now["names"]
            )
            return now if done else {}

        now = await eventually(outcome, timeout=60)
        assert now["pending"] == ["a5", "b4"]
        a5 = await gw.get(Pod, "a5", "kep1-a")
        b4 = await gw.get(Pod, "b4", "kep1-b")
        # a5 was over A's max when it came; once a4 went, A is back at its min and what holds
        # a5 (and b4) is the sum of the mins, all in use.
        for p in (a5, b4):
            message = str(p.status.conditions if p.status else "")
            assert "total ElasticQuota used is more than min" in message, message

        async def quotas() -> dict[str, dict[str, str]]:
            got = await used(gw)
            want = {"kep1-a": {"nvidia.com/gpu": "4"}, "kep1-b": {"nvidia.com/gpu": "6"}}
            return got if got == want else {}

        await eventually(quotas, timeout=30)


async def test_the_exactly_two_nodes_example_evicts_both_borrowers_for_quota2() -> None:
    async with server_process("--kubelet") as (url, gw), controllers(url):
        await play(gw, sample("cross-node.yaml"))

        async def outcome() -> dict[str, Any]:
            now = await state(gw)
            return now if now["running"] == ["nginx"] and now["names"] == {"nginx"} else {}

        await eventually(outcome, timeout=60)
        nginx = await gw.get(Pod, "nginx", "xnode-quota2")
        assert nginx.spec.node_name in ("xnode-node-1", "xnode-node-2")

        async def quotas() -> dict[str, dict[str, str]]:
            got = await used(gw)
            want = {"xnode-quota1": {"cpu": "0"}, "xnode-quota2": {"cpu": "2"}}
            return got if got == want else {}

        await eventually(quotas, timeout=30)


STORIES = [
    pytest.param(
        "kep-story-2-reclaim.yaml",
        {"a1", "a2", "a3", "b1", "b2", "b3", "b4", "c1", "c2", "c3"},
        {"a4"},
        set(),
        {"kep2-a": "3", "kep2-b": "4", "kep2-c": "3"},
        id="kep-story-2-reclaim",
    ),
    pytest.param(
        "kep-story-2-same-namespace.yaml",
        {"a1", "a2", "c1", "c2", "c3", "pod-b", "pod-c"},
        {"pod-a"},
        set(),
        {"kep2s-a": "2", "kep2s-b": "4", "kep2s-c": "3"},
        id="kep-story-2-same-namespace",
    ),
]


@pytest.mark.parametrize(("name", "running", "gone", "pending", "gpus"), STORIES)
async def test_kep_story_2_outcomes(
    name: str, running: set[str], gone: set[str], pending: set[str], gpus: dict[str, str]
) -> None:
    async with server_process("--kubelet") as (url, gw), controllers(url):
        await play(gw, sample(name))

        async def outcome() -> dict[str, Any]:
            now = await state(gw)
            done = set(now["running"]) == running and not gone & now["names"]
            return now if done else {}

        now = await eventually(outcome, timeout=60)
        assert set(now["pending"]) == pending

        async def quotas() -> dict[str, dict[str, str]]:
            got = await used(gw)
            want = {ns: {"nvidia.com/gpu": n} for ns, n in gpus.items()}
            return got if got == want else {}

        await eventually(quotas, timeout=30)


async def test_the_cross_namespace_example_stays_pending_and_preempts_nothing() -> None:
    async with server_process("--kubelet") as (url, gw), controllers(url):
        await play(gw, sample("cross-namespace.yaml"))
        pods = {f"{p.metadata.namespace}/{p.name}": p for p in (await gw.list(Pod)).items}
        bound = sorted(k for k, p in pods.items() if p.spec.node_name)
        assert len(bound) == 1 and len(pods) == 2
        assert not any(p.metadata.deletion_timestamp for p in pods.values())

        async def quotas() -> dict[str, dict[str, str]]:
            got = await used(gw)
            return got if got.get("xns-quota1") == {"cpu": "1"} else {}

        got = await eventually(quotas, timeout=30)
        assert got == {
            "xns-quota1": {"cpu": "1"},
            "xns-quota2": {"cpu": "0"},
            "xns-quota3": {"cpu": "0"},
        }
