"""Inter-pod affinity end to end: `placement scheduler run`'s scheduler against the embedded API
server in a separate process. kube's web-store / cache example with the caches in a namespace
the web servers select by its labels (the Namespace informer): one cache and one web server per
node, and the fourth cache reported with kube-scheduler's message."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Namespace, Pod
from apis.registry import parse_as
from tests.controllers.addons.cluster import create_all, node, pod, server_process
from tests.controllers.addons.test_scheduler_e2e import condition, pods, scheduler
from tests.controllers.embedded.hub import eventually

HOST = "kubernetes.io/hostname"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
FOURTH = (
    "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
    "no new claims to deallocate, "
    "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
)


def labelled(p: Pod, **labels: str) -> Pod:
    return p.model_copy(update={"metadata": p.metadata.model_copy(update={"labels": labels})})


def term(labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": HOST, **extra}


def cache(i: int) -> Pod:
    spec: dict[str, Any] = {"affinity": {"podAntiAffinity": {REQ: [term({"app": "store"})]}}}
    return labelled(pod(f"redis-cache-{i}", namespace="team-a", **spec), app="store")


def web(i: int) -> Pod:
    in_team_a = {"namespaceSelector": {"matchLabels": {"team": "a"}}}
    spec: dict[str, Any] = {
        "affinity": {
            "podAffinity": {REQ: [term({"app": "store"}, **in_team_a)]},
            "podAntiAffinity": {REQ: [term({"app": "web-store"})]},
        }
    }
    return labelled(pod(f"web-server-{i}", **spec), app="web-store")


@pytest.mark.asyncio
async def test_web_store_and_cache_through_the_scheduler_process() -> None:
    async with server_process() as (url, gw):
        team = {"metadata": {"name": "team-a", "labels": {"team": "a"}}}
        await gw.create(parse_as(Namespace, {"apiVersion": "v1", "kind": "Namespace", **team}))
        await create_all(gw, [node(f"node-{i}", cpu="4") for i in range(3)])
        await create_all(gw, [web(i) for i in range(3)])  # before their caches exist
        async with scheduler(url):
            await create_all(gw, [cache(i) for i in range(3)])

            async def all_bound() -> dict[str, Pod]:
                now = {
                    **await pods(gw),
                    **{p.name: p for p in (await gw.list(Pod, "team-a")).items},
                }
                placed = [p for p in now.values() if p.spec.node_name]
                return now if len(placed) == 6 else {}

            now = await eventually(all_bound, timeout=30)
            caches = sorted(now[f"redis-cache-{i}"].spec.node_name or "" for i in range(3))
            webs = sorted(now[f"web-server-{i}"].spec.node_name or "" for i in range(3))
            assert caches == webs == ["node-0", "node-1", "node-2"]

            await gw.create(cache(3))

            async def reported() -> Pod | None:
                found = (await gw.list(Pod, "team-a")).items
                [fourth] = [p for p in found if p.name == "redis-cache-3"]
                return fourth if condition(fourth).get("message") else None

            fourth = await eventually(reported, timeout=20)
            assert fourth is not None and not fourth.spec.node_name
            got = condition(fourth)
            assert (got["reason"], got["message"]) == ("Unschedulable", FOURTH)
