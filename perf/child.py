"""Measurements the harness runs in a fresh process, one per call, each printing one JSON line.

    python -m perf.child fan-out --clusters 5000 --placements 1000
    python -m perf.child core --clusters 100000 --placements 10000
    python -m perf.child mixed --clusters 5000 --placements 1000

`fan-out`: a cold start of the controller against the embedded hub (OCM's benchmark shape,
`perf.controller_run`), then one cluster label change that re-queues every placement; the time
from the patch until every decision is updated. `core`: the scheduling core alone with the
in-memory index (DESIGN §9's memory target without the API machinery): a generated workload
(`perf.workload`) is loaded into a `FleetIndex`, the generated objects are dropped, and every
placement is scheduled in turn, its decisions written back into the index so later placements
see them (as the controller does). It reports the resident memory once the index holds the
fleet and the peak while scheduling. `mixed`: a controller cold start like `perf.controller_run`
but on the generated workload (spread policies, decision groups, Exact mode, tolerations, claims
...) instead of OCM's benchmark shape; every placement must end with a status, none
misconfigured, and its PlacementDecisions must hold what its status counts.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.meta import KubeObject
from apis.placements import PLACEMENT_LABEL, Placement, PlacementDecision
from controllers.embedded import EmbeddedApiServer
from controllers.run import tune_gc
from perf.controller_run import ControllerRun, CountingFaults, Hub, Shape, fan_out, running_hub
from placement.index import FleetIndex
from placement.outcome import outcome
from plugins import default_scheduler

__all__ = ["core", "main", "memory_mib", "reset_peak"]

STATUS = Path("/proc/self/status")
NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)  # the workload's scores are valid around it


def memory_mib(field: str = "VmHWM") -> float:
    """This process's resident memory (`VmRSS`) or its peak (`VmHWM`), in MiB."""
    for line in STATUS.read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{STATUS} has no {field}")


def reset_peak() -> None:
    """Start the peak (`VmHWM`) again from the current resident size (Linux >= 4.0)."""
    Path("/proc/self/clear_refs").write_text("5")


def _load(index: FleetIndex, obj: KubeObject) -> None:
    if isinstance(obj, ManagedCluster):
        index.upsert_cluster(obj)
    elif isinstance(obj, ManagedClusterSet):
        index.upsert_cluster_set(obj)
    elif isinstance(obj, ManagedClusterSetBinding):
        index.upsert_binding(obj)
    elif isinstance(obj, AddOnPlacementScore):
        index.upsert_score(obj)


def core(clusters: int, placements: int, seed: int) -> dict[str, Any]:
    from perf.workload import generate  # only the core measurement needs the generator

    floor_mib = memory_mib("VmRSS")  # the interpreter and the imports
    began = time.perf_counter()
    workload = generate(clusters, placements, seed, now=NOW)
    generated_s = time.perf_counter() - began
    index = FleetIndex()
    started = time.perf_counter()
    for obj in workload.fleet_objects():
        _load(index, obj)
    index.snapshot()
    loaded_s = time.perf_counter() - started
    todo = list(workload.placements)
    del workload, obj
    gc.collect()
    loaded_mib = memory_mib("VmRSS")
    reset_peak()
    scheduler = default_scheduler()
    verdicts: Counter[str] = Counter()
    selected = 0
    started = time.perf_counter()
    for p in todo:
        fleet = index.snapshot()
        result = scheduler.schedule(p, fleet, NOW)
        done = outcome(result, fleet, p.status, NOW)
        verdicts[done.status.code.name] += 1
        if done.paged is not None:
            selected += len(result.selected)
            for decision in done.paged.decisions:
                index.upsert_decision(decision)
    scheduled_s = time.perf_counter() - started
    return {
        "clusters": clusters,
        "placements": placements,
        "generated_s": generated_s,
        "loaded_s": loaded_s,
        "scheduled_s": scheduled_s,
        "ms_per_placement": 1000 * scheduled_s / max(len(todo), 1),
        "floor_rss_mib": floor_mib,
        "loaded_rss_mib": loaded_mib,
        "peak_rss_mib": memory_mib("VmHWM"),
        "selected": selected,
        "verdicts": dict(verdicts),
    }


async def _mixed(clusters: int, placements: int, seed: int, workers: int) -> dict[str, Any]:
    from perf.workload import generate

    workload = generate(clusters, placements, seed, now=datetime.now(UTC))
    history = 2 * clusters + 10 * placements + 10_000
    faults = CountingFaults()
    server = EmbeddedApiServer(faults=faults, history=history)
    began = time.perf_counter()
    server.add(workload.objects())
    loaded_s = time.perf_counter() - began
    del workload
    await server.start()
    try:
        hub = Hub(Shape(clusters, placements, workers), server.url, server, faults, loaded_s)
        run = ControllerRun(hub)
        await run.open()
        try:
            cold = await run.start()
            items = (await run.gateway.list(Placement)).items
            held: Counter[str] = Counter()
            for pd in (await run.gateway.list(PlacementDecision)).items:
                owner = (pd.metadata.labels or {}).get(PLACEMENT_LABEL, "")
                entries = pd.status.decisions if pd.status else []
                held[f"{pd.namespace}/{owner}"] += len(entries)
        finally:
            await run.close()
    finally:
        await server.stop()
    verdicts: Counter[str] = Counter()
    mismatched = 0
    for p in items:
        conditions = {c.type: c for c in (p.status.conditions or [])} if p.status else {}
        satisfied = conditions.get("PlacementSatisfied")
        misconfigured = conditions.get("PlacementMisconfigured")
        if satisfied is None:
            verdicts["no status"] += 1
        elif misconfigured is not None and misconfigured.status == "True":
            verdicts["misconfigured"] += 1
        else:
            verdicts[f"{satisfied.reason}"] += 1
        counted = p.status.number_of_selected_clusters if p.status else None
        if counted != held[f"{p.namespace}/{p.name}"]:
            mismatched += 1
    return {
        **asdict(cold),
        "verdicts": dict(verdicts),
        "status_and_decisions_disagree": mismatched,
        "decisions": sum(held.values()),
    }


async def _fan_out(shape: Shape) -> dict[str, Any]:
    async with running_hub(shape) as hub:
        cold, change = await fan_out(hub)
    return {"cold_start": asdict(cold), **asdict(change)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m perf.child",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("what", choices=["fan-out", "core", "mixed"], help="the measurement to run")
    parser.add_argument("--clusters", type=int, required=True, help="fleet size")
    parser.add_argument("--placements", type=int, required=True, help="number of placements")
    parser.add_argument("--seed", type=int, default=20261122, help="workload seed (core, mixed)")
    parser.add_argument("--workers", type=int, default=4, help="controller workers")
    args = parser.parse_args(argv)
    if args.clusters < 1 or args.placements < 1:
        parser.error("--clusters and --placements must be at least 1")
    tune_gc()
    if args.what == "core":
        out = core(args.clusters, args.placements, args.seed)
    elif args.what == "mixed":
        out = asyncio.run(_mixed(args.clusters, args.placements, args.seed, args.workers))
    else:
        out = asyncio.run(_fan_out(Shape(args.clusters, args.placements, args.workers)))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
