"""Measurements the harness runs in a fresh process, one per call, each printing one JSON line.

    python -m perf.child fan-out --clusters 5000 --placements 1000
    python -m perf.child core --clusters 100000 --placements 10000
    python -m perf.child mixed --clusters 5000 --placements 1000

`fan-out`: a cold start of the controller against the embedded hub (OCM's benchmark shape,
`perf.controller_run`), then one cluster label change that re-queues every placement; the time
from the patch until every decision is updated. `core`: the scheduling core alone with the
in-memory index (DESIGN §9's memory target without the API machinery): a generated workload
(`perf.workload`) is handed, as the rows the controller's caches keep, to a second fresh process
that loads it into a `FleetIndex` and schedules every placement in turn, its decisions written
back into the index so later placements see them (as the controller does). It reports that
process's resident memory once the index holds the fleet, and its peak. `mixed`: a controller
cold start like `perf.controller_run` but on the generated workload (spread policies, decision
groups, Exact mode, tolerations, claims ...) instead of OCM's benchmark shape; every placement
must end with a status, none misconfigured, and its PlacementDecisions must hold what its status
counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from apis.placements import Placement
from controllers.cli.run import tune_gc
from perf._controller_hub import Shape, decisions_on_server, running_hub
from perf.controller_run import ControllerRun, fan_out
from placement.index import FleetIndex, cluster_row, score_row
from placement.outcome import outcome
from plugins import default_scheduler

__all__ = ["core", "core_run", "main", "memory_mib"]

STATUS = Path("/proc/self/status")
NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)  # the workload's scores are valid around it


def memory_mib(field: str = "VmHWM") -> float:
    """This process's resident memory (`VmRSS`) or its peak (`VmHWM`), in MiB."""
    for line in STATUS.read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{STATUS} has no {field}")


class _Pickler(pickle.Pickler):
    """Rows share one empty read-only mapping, which pickle cannot store: a dict will do."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, MappingProxyType):
            return dict, (dict(obj),)
        return NotImplemented


def core(clusters: int, placements: int, seed: int) -> dict[str, Any]:
    """Generate the workload here, hand the fleet over as the rows the controller's caches keep
    (plus the placements), and measure `core_run` in a fresh process: freed models would
    otherwise stay in this one's heap (CPython rarely returns small-object arenas)."""
    from perf.workload import generate  # only the core measurement needs the generator

    began = time.perf_counter()
    workload = generate(clusters, placements, seed, now=NOW)
    generated_s = time.perf_counter() - began
    fleet = (
        [cluster_row(c) for c in workload.clusters],
        [score_row(s) for s in workload.scores],
        list(workload.cluster_sets),
        list(workload.bindings),
        list(workload.placements),
    )
    with tempfile.TemporaryDirectory(prefix="perf-core-") as folder:
        path = Path(folder) / "fleet.pickle"
        with path.open("wb") as out:
            _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(fleet)
        del workload, fleet
        done = subprocess.run(
            [sys.executable, "-m", "perf.child", "core-run", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise RuntimeError(f"core-run exited {done.returncode}")
    return {
        "clusters": clusters,
        "placements": placements,
        "generated_s": generated_s,
        **json.loads(done.stdout.splitlines()[-1]),
    }


def core_run(path: Path) -> dict[str, Any]:
    """Load the handed-over fleet into a `FleetIndex` and schedule every placement in turn, its
    decisions written back into the index; this process's memory is the core's."""
    floor_mib = memory_mib("VmRSS")  # the interpreter and the imports
    started = time.perf_counter()
    with path.open("rb") as source:
        rows, scores, sets, bindings, todo = pickle.load(source)
    index = FleetIndex()
    for row in rows:
        index.upsert_cluster(row)
    for score in scores:
        index.upsert_score(score)
    for cluster_set in sets:
        index.upsert_cluster_set(cluster_set)
    for binding in bindings:
        index.upsert_binding(binding)
    del rows, scores
    index.snapshot()
    loaded_s = time.perf_counter() - started
    loaded_mib = memory_mib("VmRSS")
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
    async with running_hub(Shape(clusters, placements, workers), workload.objects()) as hub:
        del workload
        run = ControllerRun(hub)
        await run.open()
        try:
            cold = await run.start()
            items = (await run.gateway.list(Placement)).items
            held = {
                key: len(chosen) for key, chosen in (await decisions_on_server(run.gateway)).items()
            }
        finally:
            await run.close()
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
        if counted != held.get(f"{p.namespace}/{p.name}", 0):
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
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["core-run"] and len(argv) == 2:  # the second half of `core`, internal
        tune_gc()
        print(json.dumps(core_run(Path(argv[1]))))
        return 0
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
