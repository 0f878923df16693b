"""The controller benchmarks' hub and runs (docs/performance.md, 'Targets'), shared by
`test_controller_bench.py` and the command line, which measures one cold start in a fresh process
(for its peak RSS) or profiles it.

The hub is OCM's benchmark shape at our sizes (`perf._controller_hub`); a `Manager` with a real
gateway starts against it.

    python -m perf.controller_run --clusters 5000 --placements 10000          # one process
    python -m perf.controller_run --clusters 5000 --placements 10000 --split  # server apart
    python -m perf.controller_run --clusters 5000 --placements 1000 --profile cold.prof

prints one JSON object: the timings, the peak RSS (`VmHWM`), the requests the controller
made and the writes the server stored; with `--split`, the server's peak RSS and the CPU it
spent while it served (`server_cpu_s`: which of the two processes bounds the cold start).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from apis.cluster import ManagedCluster
from apis.placements import Placement, PlacementDecision
from controllers.cli.run import tune_gc
from controllers.hub.manager import Manager, ManagerOptions
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway
from perf._controller_hub import (
    POOL,
    CountingFaults,
    Hub,
    Shape,
    cluster_name,
    decisions_on_server,
    hub_objects,
    peak_rss_mib,
    requests_by_resource,
    running_hub,
    stored_writes,
    until_idle,
)

__all__ = [
    "ColdStart",
    "ControllerRun",
    "CountingFaults",
    "Fanout",
    "FanoutRun",
    "Hub",
    "Shape",
    "cold_start",
    "fan_out",
    "hub_objects",
    "peak_rss_mib",
    "running_hub",
]


@dataclass
class ColdStart:
    """One cold start: seconds from `Manager.start()`, what was written, and the checks."""

    clusters: int
    placements: int
    workers: int
    synced_s: float  # caches listed (and the placements queued)
    decided_s: float  # every placement reconciled, queue idle: the figure
    events_s: float  # and every event recorded
    reconciles: int  # placement reconciles (more than placements if some keys ran twice)
    events_dropped: int
    placement_decisions: int = 0  # PDs on the server
    decided_ten: int = 0  # placements deciding 10 distinct clusters, all from pool=a
    selected_ten: int = 0  # placements whose status says 10 selected
    requests: dict[str, int] = field(default_factory=dict)  # by verb, the whole run
    by_resource: dict[str, int] = field(default_factory=dict)  # `resource[/sub] verb` -> count
    writes: dict[str, int] = field(default_factory=dict)  # stored by the controller
    peak_rss_mib: float = 0.0  # this process's peak so far (a figure only in a fresh process)
    cpu_s: float = 0.0  # this process's CPU time (user + system) during the cold start
    loaded_s: float = 0.0

    @property
    def per_placement(self) -> dict[str, float]:
        """Stored writes per placement, by `Kind VERB`."""
        return {k: round(v / self.placements, 3) for k, v in self.writes.items()}


class ControllerRun:
    """One controller against a hub, in phases a benchmark can time apart: `open` (untimed),
    `start` (the cold start: timed), `checked` (what the server holds), `close`."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.shape = hub.shape
        self._gateway: Gateway | None = None
        self._manager: Manager | None = None
        self.cold: ColdStart | None = None

    @property
    def gateway(self) -> Gateway:
        assert self._gateway is not None, "open() first"
        return self._gateway

    @property
    def manager(self) -> Manager:
        assert self._manager is not None, "open() first"
        return self._manager

    async def open(self) -> None:
        self._gateway = await Gateway.connect(ClusterAccess(url=self.hub.url))
        options = ManagerOptions(workers=self.shape.workers, http_addr=None)
        self._manager = Manager(self._gateway, options)

    async def start(self, profile: cProfile.Profile | None = None) -> ColdStart:
        """Start the manager; return once every placement ran, the queue is idle and every
        event is recorded."""
        manager, hub = self.manager, self.hub
        since = hub.server.store.rv if hub.server is not None else 0
        if hub.faults is not None:
            hub.faults.requests.clear()
        if hub.server is not None:
            hub.server.audit.clear()
        if profile is not None:
            profile.enable()
        began, cpu = time.perf_counter(), time.process_time()
        await manager.start(sync_timeout=600)
        synced = time.perf_counter() - began
        await until_idle(manager)
        decided = time.perf_counter() - began
        await manager.recorder.flush()
        events = time.perf_counter() - began
        if profile is not None:
            profile.disable()
        self.cold = ColdStart(
            clusters=self.shape.clusters,
            placements=self.shape.placements,
            workers=self.shape.workers,
            synced_s=synced,
            decided_s=decided,
            events_s=events,
            reconciles=len(manager.reconciler.history),
            events_dropped=manager.recorder.dropped,
            requests=dict(sorted(hub.faults.requests.items())) if hub.faults else {},
            writes=stored_writes(hub.server, since) if hub.server is not None else {},
            by_resource=requests_by_resource(hub.server) if hub.server is not None else {},
            peak_rss_mib=peak_rss_mib(),  # before the checks, whose lists would add to it
            cpu_s=time.process_time() - cpu,
            loaded_s=hub.loaded_s,
        )
        return self.cold

    async def checked(self) -> ColdStart:
        """The cold start's figures with what the server holds now."""
        assert self.cold is not None, "start() first"
        decisions = await decisions_on_server(self.gateway)
        pool_a = {cluster_name(i) for i in range(0, self.shape.clusters, 2)}
        placements = (await self.gateway.list(Placement)).items
        self.cold.placement_decisions = len((await self.gateway.list(PlacementDecision)).items)
        self.cold.decided_ten = sum(
            1 for chosen in decisions.values() if len(set(chosen)) == 10 and set(chosen) <= pool_a
        )
        self.cold.selected_ten = sum(
            1
            for p in placements
            if p.status is not None and p.status.number_of_selected_clusters == 10
        )
        return self.cold

    async def close(self) -> None:
        if self._manager is not None:
            await self._manager.stop()
        if self._gateway is not None:
            await self._gateway.close()


async def cold_start(hub: Hub, profile: cProfile.Profile | None = None) -> ColdStart:
    """Start a controller on `hub`, wait until every placement has its decisions, check."""
    run = ControllerRun(hub)
    await run.open()
    try:
        await run.start(profile)
        return await run.checked()
    finally:
        await run.close()


@dataclass
class Fanout:
    """One label change after a cold start: what it re-queued and how long until idle."""

    cluster: str
    seconds: float  # from the patch until every placement ran and the queue is idle
    requeued: int = 0  # placement keys reconciled after the change
    had_it: int = 0  # placements that decided the cluster before
    still_have_it: int = 0  # ... and after (0: it left the predicate)
    decided_ten: int = 0  # placements deciding 10 distinct clusters after
    changed: int = 0  # placements whose decided clusters changed
    writes: dict[str, int] = field(default_factory=dict)


class FanoutRun:
    """After a cold start (`prepare`, untimed), move the most decided cluster out of
    `pool=a` (`relabel`, timed): every placement is re-queued, and those that had the cluster
    must drop it (`checked`)."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.run = ControllerRun(hub)
        self.before: dict[str, list[str]] = {}
        self.target = ""
        self.since = 0
        self.result: Fanout | None = None

    async def prepare(self) -> ColdStart:
        await self.run.open()
        cold = await self.run.start()
        self.before = await decisions_on_server(self.run.gateway)
        counts = Counter(c for chosen in self.before.values() for c in chosen)
        self.target = counts.most_common(1)[0][0]
        await self.run.manager.wait_idle()
        self.run.manager.reconciler.history.clear()
        return cold

    async def relabel(self) -> Fanout:
        manager = self.run.manager
        keys = set(manager.fanout.all())
        self.since = self.hub.server.store.rv if self.hub.server is not None else 0
        patch = {"metadata": {"labels": {POOL: "b"}}}
        began = time.perf_counter()
        await self.run.gateway.merge_patch(ManagedCluster, self.target, patch)
        await until_idle(manager, keys)
        self.result = Fanout(self.target, time.perf_counter() - began)
        self.result.requeued = len(set(manager.reconciler.history))
        return self.result

    async def checked(self) -> Fanout:
        assert self.result is not None, "relabel() first"
        after = await decisions_on_server(self.run.gateway)
        had = [key for key, chosen in self.before.items() if self.target in chosen]
        result = self.result
        result.had_it = len(had)
        result.still_have_it = sum(1 for key in had if self.target in after.get(key, []))
        result.decided_ten = sum(1 for chosen in after.values() if len(set(chosen)) == 10)
        result.changed = sum(
            1 for key, chosen in after.items() if sorted(self.before.get(key, [])) != sorted(chosen)
        )
        if self.hub.server is not None:
            result.writes = stored_writes(self.hub.server, self.since)
        return result

    async def close(self) -> None:
        await self.run.close()


async def fan_out(hub: Hub) -> tuple[ColdStart, Fanout]:
    """Cold start, then one label change re-queuing every placement; both checked."""
    run = FanoutRun(hub)
    try:
        cold = await run.prepare()
        await run.relabel()
        return cold, await run.checked()
    finally:
        await run.close()


# --- the command line: one run in a fresh process ----------------------------------------------


async def _serve(shape: Shape) -> None:
    """Serve the shape's hub until stdin closes; print the URL first, then the peak RSS and the
    CPU the server spent while it served (the controller's cold start and its check)."""
    async with running_hub(shape) as hub:
        print(json.dumps({"url": hub.url, "loaded_s": hub.loaded_s}), flush=True)
        cpu = time.process_time()
        loop = asyncio.get_running_loop()
        closed = asyncio.Event()
        loop.add_reader(sys.stdin.fileno(), closed.set)
        await closed.wait()
        loop.remove_reader(sys.stdin.fileno())
        served_cpu = time.process_time() - cpu
    print(
        json.dumps({"server_peak_rss_mib": peak_rss_mib(), "server_cpu_s": served_cpu}),
        flush=True,
    )


async def _split(shape: Shape) -> dict[str, Any]:
    """The server in a child process, the controller alone in this one."""
    args = [sys.executable, "-m", "perf.controller_run", "--serve", *_shape_args(shape)]
    child = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        ready = json.loads(await asyncio.to_thread(child.stdout.readline))
        result = await cold_start(Hub(shape, ready["url"], loaded_s=ready["loaded_s"]))
        child.stdin.close()
        served = json.loads(await asyncio.to_thread(child.stdout.readline))
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
        child.wait(30)
    return {**asdict(result), **served}


async def _one(shape: Shape, profile_path: str | None) -> dict[str, Any]:
    profile = cProfile.Profile() if profile_path else None
    async with running_hub(shape) as hub:
        rss_loaded = peak_rss_mib()
        result = await cold_start(hub, profile)
    if profile is not None and profile_path:
        profile.dump_stats(profile_path)
    return {**asdict(result), "per_placement": result.per_placement, "loaded_rss_mib": rss_loaded}


def _shape_args(shape: Shape) -> list[str]:
    return [
        f"--clusters={shape.clusters}",
        f"--placements={shape.placements}",
        f"--workers={shape.workers}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.controller_run", description=__doc__)
    parser.add_argument("--clusters", type=int, default=5000)
    parser.add_argument("--placements", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--split", action="store_true", help="run the server in a child process")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", help="write cProfile stats of the timed part here")
    parser.add_argument(
        "--default-gc",
        action="store_true",
        help="keep Python's collector thresholds (placement run raises them)",
    )
    args = parser.parse_args(argv)
    shape = Shape(args.clusters, args.placements, args.workers)
    if not args.default_gc:
        tune_gc()
    if args.serve:
        asyncio.run(_serve(shape))
        return 0
    began = time.perf_counter()
    out = asyncio.run(_split(shape) if args.split else _one(shape, args.profile))
    out["pid"] = os.getpid()
    out["wall_s"] = time.perf_counter() - began
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
