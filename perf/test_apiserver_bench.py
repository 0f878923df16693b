"""Embedded API server throughput with the real kubernetes_asyncio client over HTTP: creates/s,
merge patches/s, watch events delivered/s (live, while the writes happen, and replayed from a
resourceVersion) and one list, with 5,000 ManagedClusters.

Run: `pytest perf/test_apiserver_bench.py --benchmark-enable -s` (or `python -m
perf.test_apiserver_bench`). With the default `--benchmark-disable` (CI) it runs 200 objects,
only to prove it still works. Results: perf/RESULTS.md.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pytest_benchmark.fixture import BenchmarkFixture

from apis import ManagedCluster, parse_as
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway

CONCURRENCY = 32  # requests in flight, as a controller with a few workers would have


def _cluster(i: int) -> ManagedCluster:
    doc = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {
            "name": f"cluster-{i:05d}",
            "labels": {"region": f"r{i % 7}", "zone": f"z{i % 31}"},
        },
        "spec": {"hubAcceptsClient": True},
    }
    return parse_as(ManagedCluster, doc)


async def _bounded(calls: list[Any]) -> float:
    """Run the coroutine factories with CONCURRENCY in flight; seconds taken."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(call: Any) -> None:
        async with gate:
            await call()

    began = time.perf_counter()
    await asyncio.gather(*(one(call) for call in calls))
    return time.perf_counter() - began


async def _count_events(gw: Gateway, rv: str, expected: int) -> float:
    """Seconds until `expected` typed events arrived on a watch from `rv`."""
    began = time.perf_counter()
    seen = 0
    async for event in gw.watch(ManagedCluster, rv, bookmarks=False):
        if event.type != "BOOKMARK":
            seen += 1
            if seen == expected:
                break
    return time.perf_counter() - began


async def measure(n: int) -> dict[str, float]:
    """The figures for `n` objects: rates per second, and the list time in seconds."""
    async with (
        EmbeddedApiServer() as server,
        await Gateway.connect(ClusterAccess(url=server.url)) as gw,
        await Gateway.connect(ClusterAccess(url=server.url)) as watcher,
    ):
        # A first object, so that `start` names a real resourceVersion ("0" would mean "now").
        await gw.create(_cluster(n))
        start = (await gw.list(ManagedCluster)).resource_version
        live = asyncio.create_task(_count_events(watcher, start, 2 * n))
        await server.wait_for_watchers(1)
        clusters = [_cluster(i) for i in range(n)]
        create_s = await _bounded([lambda c=c: gw.create(c) for c in clusters])
        patch = {"metadata": {"labels": {"tier": "gold"}}}
        patch_s = await _bounded(
            [lambda c=c: gw.merge_patch(ManagedCluster, c.name, patch) for c in clusters]
        )
        live_s = await asyncio.wait_for(live, 300)
        replay_s = await asyncio.wait_for(_count_events(watcher, start, 2 * n), 300)
        began = time.perf_counter()
        listed = await gw.list(ManagedCluster)
        list_s = time.perf_counter() - began
        assert len(listed.items) == n + 1
    return {
        "objects": n,
        "creates_per_s": n / create_s,
        "patches_per_s": n / patch_s,
        "live_watch_events_per_s": 2 * n / live_s,
        "replayed_watch_events_per_s": 2 * n / replay_s,
        "list_s": list_s,
    }


def test_embedded_apiserver_throughput(benchmark: BenchmarkFixture, benchmarking: bool) -> None:
    n = 5000 if benchmarking else 200
    figures: dict[str, float] = {}

    def run() -> None:
        figures.update(asyncio.run(measure(n)))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print({k: round(v, 3) for k, v in figures.items()})
    assert figures["creates_per_s"] > 0 and figures["replayed_watch_events_per_s"] > 0


if __name__ == "__main__":
    print(asyncio.run(measure(5000)))
