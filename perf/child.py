"""Measurements the harness runs in a fresh process, one per call, each printing one JSON line.

    python -m perf.child fan-out --clusters 5000 --placements 1000
    python -m perf.child core --clusters 100000 --placements 10000
    python -m perf.child mixed --clusters 5000 --placements 1000
    python -m perf.child mixed --clusters 5000 --placements 2000 --wide 0.2 --split
    python -m perf.child pod-engine --nodes 5000 --pods 10000
    python -m perf.child pod-preemption --nodes 5000 --pods 50000
    python -m perf.child pod-memory --nodes 5000 --pods 50000
    python -m perf.child pod-e2e --nodes 1000 --pods 5000

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

The pod scheduler's (DESIGN §9 "Local cluster", the cluster of `perf._pods_workload`):
`pod-engine` feeds nodes, running pods and pending pods to an `Engine` with the default profile,
then times `schedule()` in batches, each BindPod answered with a successful BindResult, until
the active queue is empty; every binding is checked (no node over-committed, no spot or
cordoned node misused). `pod-preemption`: full nodes of 10 running pods each at priorities 0..9
and, round after round, one pod of priority 1,000 whose cycle must preempt; the victims are then
replaced so every round starts from a full cluster. `pod-memory`: this process's resident memory
after the imports, once the engine holds every node and pod, and its peak after scheduling them
all. `pod-e2e`: the embedded API server and the scheduler (`python -m
controllers.addons.scheduler --url`) each in its own process, the nodes and pending pods created
first, timed from the scheduler's start until the server holds every pod bound.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from apis.core import Namespace, Pod
from apis.placements import Placement
from apis.registry import parse_as
from controllers.cli.run import tune_gc
from perf import _pods_workload as pods_workload
from perf._controller_hub import (
    Hub,
    Shape,
    decisions_on_server,
    requests_by_resource,
    running_hub,
    stored_writes,
)
from perf.controller_run import ControllerRun, fan_out
from placement.index import FleetIndex, cluster_row, score_row
from placement.outcome import outcome
from plugins import default_scheduler

__all__ = [
    "core",
    "core_run",
    "main",
    "memory_mib",
    "overcommitted",
    "pod_e2e",
    "pod_engine",
    "pod_memory",
    "pod_preemption",
]

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


_WRITES_PER_PLACEMENT = 200  # a wide placement writes up to 50 PDs, with three events each


def _mixed_objects(clusters: int, placements: int, seed: int, wide: float) -> Any:
    from perf.workload import generate  # only the mixed measurement needs the generator

    return generate(clusters, placements, seed, now=datetime.now(UTC), wide=wide).objects()


async def _mixed_serve(shape: Shape, seed: int, wide: float) -> None:
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


async def _mixed(
    clusters: int,
    placements: int,
    seed: int,
    workers: int,
    wide: float = 0.0,
    split: bool = False,
    profile_path: str | None = None,
) -> dict[str, Any]:
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


async def _fan_out(shape: Shape) -> dict[str, Any]:
    async with running_hub(shape) as hub:
        cold, change = await fan_out(hub)
    return {"cold_start": asdict(cold), **asdict(change)}


# --- the pod scheduler ---------------------------------------------------------------------------


def _pod_engine() -> Any:
    """An engine with the default profile over the built-in pod plugins, as the scheduler
    builds it (`controllers.addons.scheduler.scheduler_profile`)."""
    from placement.pods.config import build_profile, load_config
    from placement.pods.engine import Engine
    from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS

    config = load_config({"schedulerName": pods_workload.SCHEDULER}, POD_PLUGINS)
    profile = build_profile(
        config, POD_PLUGINS, defaults=DEFAULT_PLUGINS, default_weights=DEFAULT_SCORE_WEIGHTS
    )
    return Engine(profile)


def overcommitted(
    nodes: list[Any], pods: Mapping[str, Any], where: Mapping[str, str]
) -> dict[str, int]:
    """Bindings that break a node's rules: nodes whose pods request more than it has (cpu,
    memory, pod count), pods bound to a cordoned node or on a spot node without tolerating it.
    `where` maps a pod's key to its node; `pods` the key to the pod."""
    from placement.pods.requests import amount, pod_requests

    used: dict[str, Counter[str]] = {}
    wrong_node = 0
    by_name = {n.metadata.name: n for n in nodes}
    for key, node in where.items():
        pod = pods[key]
        counted = used.setdefault(node, Counter())
        counted.update(pod_requests(pod))
        counted["pods"] += 1
        if pod.spec.node_name is None:  # bound here, not running before: the node's rules hold
            n = by_name[node]
            spot = any(t.key == "spot" for t in n.spec.taints or [])
            tolerates = any(t.key == "spot" for t in pod.spec.tolerations or [])
            wrong_node += bool(n.spec.unschedulable) or (spot and not tolerates)
    over = 0
    for name, counted in used.items():
        allocatable = by_name[name].status.allocatable or {}
        have = {r: amount(r, q) for r, q in allocatable.items()}
        over += any(v > have.get(r, 0) for r, v in counted.items() if r in have or v)
    return {"overcommitted_nodes": over, "misplaced_pods": wrong_node}


def pod_engine(
    node_count: int, pending: int, per_node: int, seed: int, batch: int
) -> dict[str, Any]:
    """Schedule `pending` pods on `node_count` nodes already running `per_node` pods each."""
    from placement.pods.events import BindPod, BindResult, NodeEvent, ObjectEvent, PodEvent

    began = time.perf_counter()
    engine = _pod_engine()
    now = NOW
    maker = pods_workload.PodMaker()
    cluster = pods_workload.nodes(node_count, seed)
    for pc in pods_workload.priority_classes():
        engine.handle(ObjectEvent("Added", pc), now)
    for node in cluster:
        engine.handle(NodeEvent("Added", node), now)
    pods: dict[str, Any] = {}
    where: dict[str, str] = {}
    for pod in pods_workload.running_pods(cluster, per_node, seed, maker):
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        pods[key], where[key] = pod, str(pod.spec.node_name)
        engine.handle(PodEvent("Added", pod), now)
    for pod in pods_workload.pending_pods(pending, seed, maker):
        pods[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
        engine.handle(PodEvent("Added", pod), now)
    setup_s = time.perf_counter() - began
    bound = 0
    batches = 0
    began = time.perf_counter()
    while True:
        actions = engine.schedule(now, limit=batch)
        batches += 1
        for action in actions:
            if isinstance(action, BindPod):
                engine.handle(BindResult(action.key, action.uid, action.node, True), now)
                where[action.key] = action.node
                bound += 1
        if engine.queue_sizes()["active"] == 0:
            break
    seconds = time.perf_counter() - began
    return {
        "nodes": node_count,
        "pending": pending,
        "running": node_count * per_node,
        "setup_s": setup_s,
        "seconds": seconds,
        "bound": bound,
        "pods_per_s": bound / seconds if seconds > 0 else 0.0,
        "batches": batches,
        "queues": engine.queue_sizes(),
        "peak_rss_mib": memory_mib("VmHWM"),
        **overcommitted(cluster, pods, where),
    }


def pod_preemption(node_count: int, per_node: int, rounds: int) -> dict[str, Any]:
    """Milliseconds of `schedule()` for one preemptor at a time on a full cluster."""
    from placement.pods.events import DeletePod, NodeEvent, PodEvent

    engine = _pod_engine()
    now = NOW
    maker = pods_workload.PodMaker()
    cluster = pods_workload.full_nodes(node_count, cpu=8)
    for node in cluster:
        engine.handle(NodeEvent("Added", node), now)
    running: dict[str, Any] = {}
    made = 0

    def run(node: str, priority: int) -> None:
        nonlocal made
        shape = pods_workload.Shape("800m", "1Gi", priority=priority, scheduler="other")
        pod = maker.make(f"r-{made}", shape, node=node)
        made += 1
        running[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
        engine.handle(PodEvent("Added", pod), now)

    for node in cluster:
        for j in range(per_node):
            run(str(node.metadata.name), j % 10)
    big = pods_workload.Shape("2", "1Gi", priority=1_000)
    times: list[float] = []
    victims: list[int] = []
    for k in range(rounds):
        preemptor = maker.make(f"vip-{k}", big)
        engine.handle(PodEvent("Added", preemptor), now)
        began = time.perf_counter()
        actions = engine.schedule(now)
        times.append(time.perf_counter() - began)
        gone = [a for a in actions if isinstance(a, DeletePod)]
        victims.append(len(gone))
        for action in gone:  # the victims go and their node fills up again
            victim = running.pop(action.key)
            engine.handle(PodEvent("Deleted", victim), now)
            run(victim.spec.node_name or "", victim.spec.priority or 0)
        engine.handle(PodEvent("Deleted", preemptor), now)
    return {
        "nodes": node_count,
        "running": len(running),
        "ms": [1000 * t for t in times],
        "victims": victims,
        "preemption_attempts": getattr(engine.stats, "preemption_attempts", None),
        "peak_rss_mib": memory_mib("VmHWM"),
    }


def pod_memory(node_count: int, total_pods: int, per_node: int, seed: int) -> dict[str, Any]:
    """This process's memory once the engine holds `node_count` nodes and `total_pods` pods
    (`per_node` running on each, the rest pending), and its peak after scheduling them."""
    from placement.pods.events import BindPod, BindResult, NodeEvent, ObjectEvent, PodEvent

    engine = _pod_engine()  # imports everything the engine and the plugins need
    floor_mib = memory_mib("VmRSS")
    now = NOW
    maker = pods_workload.PodMaker()
    cluster = pods_workload.nodes(node_count, seed)
    for pc in pods_workload.priority_classes():
        engine.handle(ObjectEvent("Added", pc), now)
    for node in cluster:
        engine.handle(NodeEvent("Added", node), now)
    pending = total_pods - node_count * per_node
    for pod in pods_workload.running_pods(cluster, per_node, seed, maker):
        engine.handle(PodEvent("Added", pod), now)
    for pod in pods_workload.pending_pods(pending, seed, maker):
        engine.handle(PodEvent("Added", pod), now)
    del cluster
    loaded_mib = memory_mib("VmRSS")
    bound = 0
    began = time.perf_counter()
    while True:
        for action in engine.schedule(now, limit=1_000):
            if isinstance(action, BindPod):
                engine.handle(BindResult(action.key, action.uid, action.node, True), now)
                bound += 1
        if engine.queue_sizes()["active"] == 0:
            break
    return {
        "nodes": node_count,
        "pods": total_pods,
        "pending": pending,
        "bound": bound,
        "scheduled_s": time.perf_counter() - began,
        "floor_rss_mib": floor_mib,
        "loaded_rss_mib": loaded_mib,
        "rss_mib": memory_mib("VmRSS"),
        "peak_rss_mib": memory_mib("VmHWM"),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _get(session: Any, url: str) -> tuple[int, Any]:
    async with session.get(url) as response:
        body = await response.json() if response.content_type == "application/json" else None
        return response.status, body


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` so far (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_pid() -> int | None:
    """This process's child running the embedded API server."""
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in children.read_text().split():
            with contextlib.suppress(OSError):
                if b"controllers.embedded" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return int(pid)
    return None


async def _attempts(session: Any, url: str) -> dict[str, float]:
    """The scheduler's `scheduler_schedule_attempts_total` by result (scheduled,
    unschedulable, error): attempts beyond one per pod are retries."""
    async with session.get(url) as response:
        text = await response.text()
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("scheduler_schedule_attempts_total{"):
            labels, value = line.rsplit(" ", 1)
            result = labels.split('result="', 1)[1].split('"', 1)[0]
            found[result] = found.get(result, 0) + float(value)
    return found


async def _until_bound(url: str, unbound: str, timeout_s: float) -> dict[str, Any]:
    """Run the scheduler against `url` until `unbound` lists no pod: the seconds until it was
    ready and until all were bound (None when never), the seconds waited, the CPU seconds the
    scheduler and the server spent meanwhile (which of them is the bottleneck), its exit code
    and the last lines it logged. Polled every 0.1 s (a list of one pod: cheap for the server)."""
    import aiohttp

    port = _free_port()
    command = [
        sys.executable, "-m", "controllers.addons.scheduler", f"--url={url}",
        f"--http-addr=127.0.0.1:{port}", "--log-level=WARNING",
        # The scheduler's own throughput: the status controller (its own pod informer and
        # client in the same process) is measured apart, not mixed into these figures.
        "--status-controller=off",
    ]  # fmt: skip
    out: dict[str, Any] = {"ready_s": None, "all_bound_s": None}
    server = _server_pid()
    server_cpu = _cpu_seconds(server) if server is not None else None
    with tempfile.TemporaryFile(mode="w+") as log:
        async with aiohttp.ClientSession() as session:
            began = time.perf_counter()
            scheduler = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
            try:
                while time.perf_counter() - began < timeout_s and scheduler.poll() is None:
                    if out["ready_s"] is None:
                        with contextlib.suppress(aiohttp.ClientError):
                            status, _ = await _get(session, f"http://127.0.0.1:{port}/readyz")
                            if status == 200:
                                out["ready_s"] = time.perf_counter() - began
                    status, body = await _get(session, unbound)
                    if status == 200 and not body["items"]:
                        out["all_bound_s"] = time.perf_counter() - began
                        break
                    await asyncio.sleep(0.1)
                out["scheduler_cpu_s"] = _cpu_seconds(scheduler.pid)
                with contextlib.suppress(aiohttp.ClientError):
                    out["attempts"] = await _attempts(session, f"http://127.0.0.1:{port}/metrics")
                if server is not None and server_cpu is not None:
                    now_cpu = _cpu_seconds(server)
                    out["server_cpu_s"] = None if now_cpu is None else now_cpu - server_cpu
            finally:
                scheduler.terminate()
                try:
                    out["scheduler_exit"] = scheduler.wait(30)
                except subprocess.TimeoutExpired:
                    scheduler.kill()
                    out["scheduler_exit"] = scheduler.wait()
            out["waited_s"] = time.perf_counter() - began
        log.seek(0)
        out["scheduler_log_tail"] = [line for line in log.read().splitlines() if line.strip()][-3:]
    return out


async def pod_e2e(node_count: int, pending: int, seed: int, timeout_s: float) -> dict[str, Any]:
    """Create the cluster on an embedded API server (its own process), start the scheduler in
    another, and wait until the server holds every pod bound (or `timeout_s` passes)."""
    from tests.controllers.addons.cluster import create_all, server_process

    maker = pods_workload.PodMaker()
    cluster = pods_workload.nodes(node_count, seed)
    todo = list(pods_workload.pending_pods(pending, seed, maker))
    ns = pods_workload.NAMESPACE
    async with server_process() as (url, gateway):
        began = time.perf_counter()
        await gateway.create(
            parse_as(Namespace, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        )
        await create_all(gateway, [*pods_workload.priority_classes(), *cluster], width=64)
        await create_all(gateway, todo, width=64)
        created_s = time.perf_counter() - began
        unbound = f"{url}/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3D&limit=1"
        run = await _until_bound(url, unbound, timeout_s)
        pods = (await gateway.list(Pod, namespace=ns)).items
    where = {f"{ns}/{p.metadata.name}": p.spec.node_name for p in pods if p.spec.node_name}
    by_key = {f"{ns}/{p.metadata.name}": p.model_copy(update={"spec": p.spec.model_copy(
        update={"node_name": None})}) for p in pods}  # fmt: skip
    bound = len(where)
    ready_s, done_s, waited_s = run["ready_s"], run["all_bound_s"], run["waited_s"]
    span = (done_s - ready_s) if done_s is not None and ready_s is not None else None
    return {
        "nodes": node_count,
        "pending": pending,
        "created_s": created_s,
        **run,
        "bound": bound,
        "timed_out": done_s is None,
        "pods_per_s": pending / span if span else None,
        "pods_per_s_with_start": (pending if done_s else bound) / (done_s or waited_s),
        **overcommitted(cluster, by_key, where),
    }


HUB = ("fan-out", "core", "mixed")
PODS = ("pod-engine", "pod-preemption", "pod-memory", "pod-e2e")


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["core-run"] and len(argv) == 2:  # the second half of `core`, internal
        tune_gc()
        print(json.dumps(core_run(Path(argv[1]))))
        return 0
    if argv[:1] == ["mixed-serve"]:  # the server half of `mixed --split`, internal
        tune_gc()
        serve = argparse.ArgumentParser()
        for name in ("--clusters", "--placements", "--workers", "--seed"):
            serve.add_argument(name, type=int, required=True)
        serve.add_argument("--wide", type=float, required=True)
        a = serve.parse_args(argv[1:])
        asyncio.run(_mixed_serve(Shape(a.clusters, a.placements, a.workers), a.seed, a.wide))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m perf.child",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("what", choices=[*HUB, *PODS], help="the measurement to run")
    parser.add_argument("--clusters", type=int, help="fleet size (hub measurements)")
    parser.add_argument("--placements", type=int, help="number of placements (hub)")
    parser.add_argument("--nodes", type=int, help="number of nodes (pod measurements)")
    parser.add_argument(
        "--pods",
        type=int,
        help="pending pods (pod-engine, pod-e2e); running pods (pod-preemption); all (pod-memory)",
    )
    parser.add_argument("--per-node", type=int, default=4, help="running pods per node")
    parser.add_argument("--batch", type=int, default=500, help="pods per schedule() (pod-engine)")
    parser.add_argument("--rounds", type=int, default=20, help="preemptors (pod-preemption)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds (pod-e2e)")
    parser.add_argument("--seed", type=int, default=20261122, help="workload seed")
    parser.add_argument("--workers", type=int, default=4, help="controller workers")
    parser.add_argument(
        "--wide", type=float, default=0.0, help="share of wide placements (mixed; issue 20)"
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="serve the hub from a child process; the peak RSS is then the controller's alone "
        "(mixed)",
    )
    parser.add_argument("--profile", help="write cProfile stats of the cold start here (mixed)")
    args = parser.parse_args(argv)
    sized = ("clusters", "placements") if args.what in HUB else ("nodes", "pods")
    if any(getattr(args, name) is None or getattr(args, name) < 1 for name in sized):
        parser.error(f"--{sized[0]} and --{sized[1]} must be at least 1")
    tune_gc()
    out: dict[str, Any]
    if args.what == "core":
        out = core(args.clusters, args.placements, args.seed)
    elif args.what == "mixed":
        out = asyncio.run(
            _mixed(
                args.clusters,
                args.placements,
                args.seed,
                args.workers,
                args.wide,
                args.split,
                args.profile,
            )
        )
    elif args.what == "fan-out":
        out = asyncio.run(_fan_out(Shape(args.clusters, args.placements, args.workers)))
    elif args.what == "pod-engine":
        out = pod_engine(args.nodes, args.pods, args.per_node, args.seed, args.batch)
    elif args.what == "pod-preemption":
        out = pod_preemption(args.nodes, max(1, args.pods // args.nodes), args.rounds)
    elif args.what == "pod-memory":
        out = pod_memory(args.nodes, args.pods, args.per_node, args.seed)
    else:
        out = asyncio.run(pod_e2e(args.nodes, args.pods, args.seed, args.timeout))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
