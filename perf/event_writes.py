"""Writes per placement on the embedded hub (issue 31): what the server stored, by `Kind VERB`,
for one new placement (10 clusters, one PlacementDecision), one wide placement (5,000 clusters,
50 PlacementDecisions) and one placement re-decided many times (its best cluster swapped by
AddOnPlacementScores, each time a DecisionUpdate and a ScoreUpdate). Events are counted apart:
created, and patched (client-go's series).

    python -m perf.event_writes            # prints one JSON object per scenario

Uses only the hub's public seams (Manager, Gateway, the server's history), so the same file
measures an older commit (copied into its tree) for the before/after in perf/RESULTS.md.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from apis.cluster import AddOnPlacementScore
from apis.core import Namespace
from apis.meta import KubeObject
from controllers.addons.emitter import EventEmitter
from controllers.addons.gateway import PodGateway
from controllers.embedded import EmbeddedApiServer
from controllers.hub.manager import Manager, ManagerOptions
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.kube.gateway import Gateway
from perf._controller_hub import stored_writes, until_idle
from placement.testing import addon, cluster, global_set, placement, score

__all__ = ["SCENARIOS", "measure"]

NS = "apps"
UNTIL = datetime.now(UTC) + timedelta(days=1)


async def _hub_with(server: EmbeddedApiServer, objects: list[KubeObject]) -> Gateway:
    gw = await Gateway.connect(ClusterAccess(url=server.url), backoff=0.01)
    await gw.create(Namespace.model_validate({"metadata": {"name": NS}}))
    for obj in objects:
        await gw.create(obj)
    return gw


def _events(writes: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in writes.items() if k.startswith("Event ")}


def _others(writes: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in writes.items() if not k.startswith("Event ")}


async def _run(clusters: int, spec: dict[str, Any], swaps: int) -> dict[str, Any]:
    server = EmbeddedApiServer()
    await server.start()
    objects: list[KubeObject] = [cluster(f"c{i:05d}") for i in range(clusters)]
    objects += global_set(NS)
    if swaps:
        objects += [
            Namespace.model_validate({"metadata": {"name": f"c{i:05d}"}}) for i in range(clusters)
        ]
        objects += [
            score(f"c{i:05d}", "usage", {"free": i}, valid_until=UNTIL) for i in range(clusters)
        ]
    gw = await _hub_with(server, objects)
    manager = Manager(gw, ManagerOptions(workers=1, http_addr=None))
    try:
        await manager.start(sync_timeout=60)
        await until_idle(manager)
        since = server.store.rv
        await gw.create(placement(NS, "p", **spec))
        await asyncio.sleep(0.05)
        await until_idle(manager)
        await manager.recorder.flush()
        new = stored_writes(server, since)
        new.pop("Placement ADDED", None)  # the scenario's own create
        since = server.store.rv
        for k in range(swaps):
            # The best cluster alternates between the last two: each swap re-decides.
            hi, lo = (clusters - 1, clusters - 2) if k % 2 else (clusters - 2, clusters - 1)
            for i, value in ((hi, 100), (lo, 0)):
                await gw.merge_patch(
                    AddOnPlacementScore,
                    "usage",
                    {"status": {"scores": [{"name": "free", "value": value}]}},
                    f"c{i:05d}",
                    status=True,
                )
            await asyncio.sleep(0.05)
            await until_idle(manager)
        await manager.recorder.flush()
        again = stored_writes(server, since)
        again.pop("AddOnPlacementScore MODIFIED", None)  # the scenario's own patches
    finally:
        await manager.stop()
        await gw.close()
        await server.stop()
    out: dict[str, Any] = {
        "new_placement": {"writes": _others(new), "events": _events(new)},
    }
    if swaps:
        out["re_decided"] = {"swaps": swaps, "writes": _others(again), "events": _events(again)}
    return out


async def _pod_retries(retries: int) -> dict[str, Any]:
    """The pod scheduler's FailedScheduling for one pod retried `retries` times while nothing
    changes (its queue drained between retries, as backoff spaces them)."""
    server = EmbeddedApiServer()
    await server.start()
    gw = PodGateway(await new_api_client(ClusterAccess(url=server.url)))
    try:
        await gw.create(Namespace.model_validate({"metadata": {"name": NS}}))
        since = server.store.rv
        emitter = EventEmitter(gw, controller="ocm-pod-scheduler", instance="s-1")
        ref = {"apiVersion": "v1", "kind": "Pod", "namespace": NS, "name": "web", "uid": "u1"}
        for _ in range(retries):
            emitter.emit(
                ref | {"resourceVersion": "7"},
                None,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                "0/3 nodes are available: 3 Insufficient cpu.",
            )
            await emitter.flush()
        return {"pod_retries": {"retries": retries, "events": stored_writes(server, since)}}
    finally:
        await gw.close()
        await server.stop()


SCENARIOS: dict[str, tuple[int, dict[str, Any], int]] = {
    "new": (20, {"numberOfClusters": 10}, 0),
    "wide": (5000, {}, 0),
    "re_decided": (
        5,
        {
            "numberOfClusters": 1,
            "prioritizerPolicy": {"mode": "Exact", "configurations": [addon("usage", "free")]},
        },
        20,
    ),
}


def measure(name: str) -> dict[str, Any]:
    if name == "pod_retries":
        return asyncio.run(_pod_retries(20))
    clusters, spec, swaps = SCENARIOS[name]
    return asyncio.run(_run(clusters, spec, swaps))


if __name__ == "__main__":
    for scenario in [*SCENARIOS, "pod_retries"]:
        print(json.dumps({scenario: measure(scenario)}, default=str))
