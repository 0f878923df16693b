"""The pod scheduler's measurements of `python -m perf.child` (see there), over the cluster of
`perf._pods_workload`: `pod_engine` (throughput of the engine without I/O), `pod_preemption`
(one preemption decision on a full cluster), `pod_memory` (the engine's resident memory) and
`pod_e2e` (the scheduler process against the embedded API server process); `overcommitted`
checks every binding against its node's rules."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apis.core import Namespace, Pod
from apis.registry import parse_as
from perf import _pods_workload as pods_workload
from perf.harness import memory_mib
from placement.testing import NOW  # the engine's clock

__all__ = ["overcommitted", "pod_e2e", "pod_engine", "pod_memory", "pod_preemption", "stop"]


def _pod_engine() -> Any:
    """An engine with the default profile over the built-in pod plugins, as the scheduler
    builds it (`controllers.addons.scheduler.scheduler_profile`)."""
    from placement.pods.config.scheduler_config import build_profile, load_config
    from placement.pods.scheduler.engine import Engine
    from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS

    config = load_config({"schedulerName": pods_workload.SCHEDULER}, POD_PLUGINS)
    profile = build_profile(
        config, POD_PLUGINS, defaults=DEFAULT_PLUGINS, default_weights=DEFAULT_SCORE_WEIGHTS
    )
    return Engine(profile)


def stop(process: subprocess.Popen[Any], grace: float) -> int:
    """SIGTERM, then SIGKILL after `grace` seconds: the process's exit code."""
    process.terminate()
    try:
        return process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def overcommitted(
    nodes: list[Any], pods: Mapping[str, Any], where: Mapping[str, str]
) -> dict[str, int]:
    """Bindings that break a node's rules: nodes whose pods request more than it has (cpu,
    memory, pod count), pods bound to a cordoned node or on a spot node without tolerating it.
    `where` maps a pod's key to its node; `pods` the key to the pod."""
    from placement.pods.cluster.requests import amount, pod_requests

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
    from placement.pods.framework.events import (
        BindPod,
        BindResult,
        NodeEvent,
        ObjectEvent,
        PodEvent,
    )

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
    from placement.pods.framework.events import DeletePod, NodeEvent, PodEvent

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
    from placement.pods.framework.events import (
        BindPod,
        BindResult,
        NodeEvent,
        ObjectEvent,
        PodEvent,
    )

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
                out["scheduler_exit"] = stop(scheduler, 30)
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
