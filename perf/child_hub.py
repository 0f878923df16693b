"""The hub's measurements of `python -m perf.child` (see there), each in the process it runs in:
`core` (the scheduling core alone with the in-memory index, its second half `core_run` in a
fresh process), `mixed` (a controller cold start on the generated workload, the hub served here
or, `--split`, by a child process running `mixed_serve`) and the fan-out after a cold start."""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import json
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from apis.placements import Placement
from perf._controller_hub import (
    Hub,
    Shape,
    decisions_on_server,
    requests_by_resource,
    running_hub,
    stored_writes,
)
from perf.controller_run import ControllerRun, fan_out
from perf.harness import memory_mib
from placement.index.fleet_index import FleetIndex, cluster_row, score_row
from placement.outcome import outcome
from placement.testing import NOW  # the generated workload's scores are valid around it
from plugins import default_scheduler

__all__ = ["core", "core_run", "fan_out_after_cold_start", "mixed", "mixed_serve"]


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


_WRITES_PER_PLACEMENT = 200  # a wide placement writes up to 50 PDs, with three events each


def _mixed_objects(clusters: int, placements: int, seed: int, wide: float) -> Any:
    from perf.workload import generate  # only the mixed measurement needs the generator

    return generate(clusters, placements, seed, now=datetime.now(UTC), wide=wide).objects()


async def mixed_serve(shape: Shape, seed: int, wide: float) -> None:
    """The server half of `mixed --split`: serve the generated hub; print its URL, then on each
    line read from stdin the requests and writes so far, and at end of input the peak RSS."""
    objects = _mixed_objects(shape.clusters, shape.placements, seed, wide)
    async with running_hub(shape, objects, _WRITES_PER_PLACEMENT) as hub:
        del objects
        assert hub.server is not None and hub.faults is not None
        since = hub.server.store.rv
        print(json.dumps({"url": hub.url, "loaded_s": hub.loaded_s}), flush=True)
        hub.faults.requests.clear()
        hub.server.audit.clear()
        cpu = time.process_time()
        lines: asyncio.Queue[str] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        loop.add_reader(sys.stdin.fileno(), lambda: lines.put_nowait(sys.stdin.readline()))
        while await lines.get():
            counts = {
                "requests": dict(sorted(hub.faults.requests.items())),
                "writes": stored_writes(hub.server, since),
                "by_resource": requests_by_resource(hub.server),
                "server_cpu_s": time.process_time() - cpu,
            }
            print(json.dumps(counts), flush=True)
        loop.remove_reader(sys.stdin.fileno())
    print(json.dumps({"server_peak_rss_mib": memory_mib()}), flush=True)


class _ServedHub:
    """The generated hub's server: in this process, or (`split`) a child process asked for
    its counts over stdin; `server` collects what that process reported (CPU, peak RSS)."""

    def __init__(self, hub: Hub, child: subprocess.Popen[str] | None = None) -> None:
        self.hub = hub
        self.child = child
        self.server: dict[str, Any] = {}

    async def counts(self) -> dict[str, Any]:
        """The requests (by verb and by resource) and the writes the server saw so far."""
        assert self.child is not None and self.child.stdin and self.child.stdout
        self.child.stdin.write("counts\n")
        self.child.stdin.flush()
        seen = dict(json.loads(await asyncio.to_thread(self.child.stdout.readline)))
        self.server["server_cpu_s"] = seen.pop("server_cpu_s")
        return seen


@contextlib.asynccontextmanager
async def _mixed_hub(
    shape: Shape, seed: int, wide: float, split: bool
) -> AsyncIterator[_ServedHub]:
    """The generated hub, served here or (`split`) by a child process."""
    if not split:
        objects = _mixed_objects(shape.clusters, shape.placements, seed, wide)
        async with running_hub(shape, objects, _WRITES_PER_PLACEMENT) as hub:
            del objects
            yield _ServedHub(hub)
        return
    args = [sys.executable, "-m", "perf.child", "mixed-serve", *_hub_args(shape, seed, wide)]
    child = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        line = await asyncio.to_thread(child.stdout.readline)
        if not line:
            raise RuntimeError(f"the server process exited {child.wait(30)} before serving")
        ready = json.loads(line)
        served = _ServedHub(Hub(shape, ready["url"], loaded_s=ready["loaded_s"]), child)
        yield served
        child.stdin.close()
        served.server.update(json.loads(await asyncio.to_thread(child.stdout.readline)))
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
        child.wait(30)


def _hub_args(shape: Shape, seed: int, wide: float) -> list[str]:
    return [
        f"--clusters={shape.clusters}",
        f"--placements={shape.placements}",
        f"--workers={shape.workers}",
        f"--seed={seed}",
        f"--wide={wide}",
    ]


async def mixed(
    clusters: int,
    placements: int,
    seed: int,
    workers: int,
    wide: float = 0.0,
    split: bool = False,
    profile_path: str | None = None,
) -> dict[str, Any]:
    """A controller cold start on the generated workload, served here or (`split`) by a child
    process; every placement's verdict and whether its decisions agree with its status."""
    shape = Shape(clusters, placements, workers)
    profile = cProfile.Profile() if profile_path else None
    async with _mixed_hub(shape, seed, wide, split) as served:
        run = ControllerRun(served.hub)
        await run.open()
        try:
            cold = await run.start(profile)
            if profile is not None and profile_path:
                profile.dump_stats(profile_path)
            if split:  # the server's counts at the same point as one process's
                seen = await served.counts()
                cold.requests, cold.writes = seen["requests"], seen["writes"]
                cold.by_resource = seen["by_resource"]
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
        **served.server,
        "split": split,
        "verdicts": dict(verdicts),
        "status_and_decisions_disagree": mismatched,
        "decisions": sum(held.values()),
        "widest": max(held.values(), default=0),
    }


async def fan_out_after_cold_start(shape: Shape) -> dict[str, Any]:
    """A cold start, then one cluster label change re-queuing every placement."""
    async with running_hub(shape) as hub:
        cold, change = await fan_out(hub)
    return {"cold_start": asdict(cold), **asdict(change)}
