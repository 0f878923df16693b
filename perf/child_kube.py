"""scheduler_perf's workloads (`perf.kube_workloads`) in a fresh process for the harness, one
JSON line per run, through the engine (no I/O) or end to end:

    python -m perf.child_kube SchedulingBasic --nodes 5000 --running 1000 --pods 10000
    python -m perf.child_kube SchedulingBasic --e2e --nodes 5000 --running 1000 --pods 10000
    python -m perf.child_kube gangs --e2e --nodes 1000 --running 100 --pods 50   # gangs x members

End to end, as scheduler_perf runs them: the embedded API server in its own process
(`python -m controllers.embedded`) gets the namespaces, the nodes and the pods running before
(bound already, by another scheduler's name); the scheduler process (`python -m
controllers.addons.scheduler --url`, the status controller off) starts and reports ready; then
this process watches the pods and creates the measured pods, and the clock runs from the first
measured pod's creation until the server holds every measured pod bound (gangs: as many members
bound as whole gangs fit). The bound count is kept after every watch event (the throughput
curve), with the CPU seconds the scheduler, the server and this process spent meanwhile.
Checks: every measured pod bound, none misplaced (the workload's own check, and no node
over-committed). `--profile FILE` runs the scheduler process under cProfile (stats written
when it stops).

The objects are created as scheduler_perf creates them (`perf.kube_creator`: encoded to JSON
before the clock starts, 30 POSTs in flight, answers checked for 201 but not parsed);
`--creator=gateway` creates them through the pydantic gateway instead, 64 at a time (the
previous harness), to compare. The watch parses only the lines that can change the count: a
pod with a node, or a deletion.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from apis.core import Namespace, Pod
from apis.registry import parse_as
from perf.child_pods import _cpu_seconds, _free_port, overcommitted, stop
from perf.harness import memory_mib
from perf.kube_creator import encode, post_all
from perf.kube_workloads import (
    GANG_CONFIG,
    WORKLOADS,
    _problems,
    gang_objects,
    gangs,
    objects,
    run,
)
from perf.test_pod_engine_bench import SCHEDULER

__all__ = ["BindWatch", "e2e", "main"]

CREATORS = ("raw", "gateway")
"""How the objects are created: scheduler_perf's way (`perf.kube_creator`), or through the
pydantic gateway (`tests.controllers.addons.cluster.create_all`, the previous harness)."""

# A watch line that can change the count: a deletion, or a pod with a node (a string, not null).
_DELETED = re.compile(rb'\{\s*"type"\s*:\s*"DELETED"')
_NODE = re.compile(rb'"nodeName"\s*:\s*"')


def _key(pod: Any) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


class BindWatch:
    """The pods' watch stream from `rv` on: which measured pods are bound (and where), how
    many other pods were deleted (preemption victims), the bound count over time."""

    def __init__(self, measured: set[str]) -> None:
        self.measured = measured
        self.bound: dict[str, str] = {}
        self.deleted = 0
        self.began: float | None = None
        self.timeline: list[tuple[float, int]] = []
        self.changed = asyncio.Event()
        self.lines = 0
        self.parsed = 0

    def _line(self, line: bytes) -> None:
        """A pod without a node (created, or changed before it is bound) cannot change the
        count: its line is not decoded."""
        self.lines += 1
        if _DELETED.match(line) or _NODE.search(line):
            self.parsed += 1
            self._seen(json.loads(line))

    def _seen(self, event: dict[str, Any]) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if event.get("type") == "DELETED":
            self.deleted += key not in self.measured
            return
        node = (obj.get("spec") or {}).get("nodeName")
        if node and key in self.measured and key not in self.bound:
            self.bound[key] = node
            if self.began is not None:
                self.timeline.append((time.perf_counter() - self.began, len(self.bound)))
            self.changed.set()

    async def run(self, session: Any, url: str, rv: str) -> None:
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "3600"}
        async with session.get(f"{url}/api/v1/pods", params=params, timeout=None) as response:
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._line(line)


async def _attempts(session: Any, port: int) -> dict[str, float]:
    """The scheduler's `scheduler_schedule_attempts_total` by result, from its /metrics (every
    attempt since it started: the pods before the measured ones need none); {} when it does
    not answer."""
    import aiohttp

    counts: dict[str, float] = {}
    with contextlib.suppress(aiohttp.ClientError, ValueError):
        async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
            for line in (await response.text()).splitlines():
                if line.startswith("scheduler_schedule_attempts_total{"):
                    labels, _, value = line.rpartition(" ")
                    result = labels.split('result="', 1)[1].split('"', 1)[0]
                    counts[result] = counts.get(result, 0.0) + float(value)
    return counts


async def _ready(session: Any, port: int, scheduler: subprocess.Popen[bytes], limit: float) -> bool:
    import aiohttp

    began = time.perf_counter()
    while time.perf_counter() - began < limit and scheduler.poll() is None:
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                if response.status == 200:
                    return True
        await asyncio.sleep(0.1)
    return False


def _cluster(workload: str, nodes: int, running: int, pending: int) -> tuple[Any, ...]:
    """Nodes, other objects (PodGroups), pods running before, measured pods, and how many
    measured pods end bound."""
    if workload == "gangs":
        cluster, groups, members = gang_objects(running, pending, nodes)
        fit = min(running, nodes * 4 // pending)
        return cluster, groups, [], members, fit * pending
    cluster, before, measured = objects(workload, nodes, running, pending)
    if workload != "PreemptionBasic":
        return cluster, [], before, measured, pending
    # The API server's priority admission computes the priority from the class: name it.
    classes = [_priority_class(f"prio-{v}", v) for v in (0, 1_000)]
    return cluster, classes, _classed(before), _classed(measured), pending


def _priority_class(name: str, value: int) -> Any:
    from apis.scheduling import PriorityClass

    doc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
    }
    return parse_as(PriorityClass, {**doc, "value": value})


def _classed(pods: list[Pod]) -> list[Pod]:
    return [
        p.model_copy(
            update={
                "spec": p.spec.model_copy(
                    update={"priority": None, "priority_class_name": f"prio-{p.spec.priority or 0}"}
                )
            }
        )
        for p in pods
    ]


async def e2e(
    workload: str,
    nodes: int,
    running: int,
    pending: int,
    timeout_s: float,
    profile: str | None,
    creator: str = "raw",
) -> dict[str, Any]:
    """One end to end run (module docstring). For `gangs`, `running` is the number of gangs and
    `pending` their members; `creator` one of `CREATORS`."""
    import aiohttp

    from tests.controllers.addons.cluster import create_all, server_process

    cluster, extra, before, measured, expected = _cluster(workload, nodes, running, pending)
    spaces = sorted({str(p.metadata.namespace) for p in (*before, *measured)})
    out: dict[str, Any] = {"workload": workload, "nodes": nodes, "running": running}
    out["pending"], out["expected"], out["creator"] = len(measured), expected, creator
    server: list[int] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.yaml"
        config.write_text(json.dumps({"schedulerName": SCHEDULER, **GANG_CONFIG}))
        log = (Path(tmp) / "scheduler.log").open("w+")
        async with server_process(started=server.append) as (url, gw):
            for ns in spaces:
                doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                await gw.create(parse_as(Namespace, doc))
            for batch in ([*cluster, *extra], before):  # the nodes before the pods on them
                if creator == "gateway":
                    await create_all(gw, batch, width=64)
                else:
                    await post_all(url, encode(batch))
            out["setup_s"] = round(time.perf_counter() - began, 2)
            port = _free_port()
            profiler = ["-m", "cProfile", "-o", profile] if profile else []
            command = [
                sys.executable, *profiler, "-m", "controllers.addons.scheduler", f"--url={url}",
                f"--http-addr=127.0.0.1:{port}", "--log-level=WARNING",
                "--status-controller=off", f"--config={config}",
            ]  # fmt: skip
            scheduler = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
            watch = BindWatch({_key(p) for p in measured})
            try:
                async with aiohttp.ClientSession() as session:
                    started = time.perf_counter()
                    if not await _ready(session, port, scheduler, 300):
                        raise RuntimeError("the scheduler never reported ready")
                    out["ready_s"] = round(time.perf_counter() - started, 2)
                    async with session.get(f"{url}/api/v1/pods", params={"limit": "1"}) as r:
                        rv = (await r.json())["metadata"]["resourceVersion"]
                    watching = asyncio.create_task(watch.run(session, url, rv))
                    requests = encode(measured) if creator != "gateway" else []
                    cpu = _cpu_seconds(scheduler.pid), _cpu_seconds(server[0])
                    own = time.process_time()
                    watch.began = time.perf_counter()
                    if creator == "gateway":
                        await create_all(gw, measured, width=64)
                    else:
                        await post_all(url, requests)
                    out["created_s"] = round(time.perf_counter() - watch.began, 3)
                    while len(watch.bound) < expected and scheduler.poll() is None:
                        if time.perf_counter() - watch.began > timeout_s:
                            break
                        watch.changed.clear()
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(watch.changed.wait(), 1.0)
                    seconds = time.perf_counter() - watch.began
                    after = _cpu_seconds(scheduler.pid), _cpu_seconds(server[0])
                    out["client_cpu_s"] = round(time.process_time() - own, 2)
                    out["attempts"] = await _attempts(session, port)
                    watching.cancel()
                    with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
                        await watching
            finally:
                out["scheduler_exit"] = stop(scheduler, 60)
            listed = [p for ns in spaces for p in (await gw.list(Pod, namespace=ns)).items]
        log.seek(0)
        out["scheduler_log_tail"] = [line for line in log.read().splitlines() if line.strip()][-3:]
        log.close()
    names = {_key(p) for p in measured}
    where = {_key(p): str(p.spec.node_name) for p in listed if p.spec.node_name}
    placed = {k: n for k, n in where.items() if k in names}
    unbound = {
        _key(p): p.model_copy(update={"spec": p.spec.model_copy(update={"node_name": None})})
        for p in listed
        if _key(p) in names
    }
    by_key = {**{_key(p): p for p in listed}, **unbound}
    bound = len(watch.bound)
    out.update(
        bound=bound,
        seconds=round(seconds, 3),
        timed_out=bound < expected,
        pods_per_s=round(bound / seconds, 1) if seconds > 0 else None,
        evicted=watch.deleted,
        watch_lines=[watch.lines, watch.parsed],
        scheduler_cpu_s=_delta(cpu[0], after[0]),
        server_cpu_s=_delta(cpu[1], after[1]),
        timeline=_thin(watch.timeline),
        problems=_checks(workload, nodes, running, pending, placed, watch.deleted, expected),
        **overcommitted(cluster, by_key, where),
    )
    if workload == "PreemptionBasic":
        out["preemptions_per_s"] = out["pods_per_s"]
    return out


def _delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else round(after - before, 2)


def _thin(timeline: list[tuple[float, int]], step: float = 0.05) -> list[tuple[float, int]]:
    """At most one point per `step` seconds (and the last one)."""
    kept: list[tuple[float, int]] = []
    for t, n in timeline:
        if not kept or t - kept[-1][0] >= step:
            kept.append((round(t, 3), n))
        else:
            kept[-1] = (kept[-1][0], n)
    return kept


def _checks(
    workload: str,
    nodes: int,
    running: int,
    pending: int,
    placed: dict[str, str],
    evicted: int,
    expected: int,
) -> list[str]:
    if workload != "gangs":
        return _problems(workload, nodes, running, pending, placed, evicted)
    problems = [] if len(placed) == expected else [f"{len(placed)} of {expected} bound"]
    per_gang = Counter(key.split("/", 1)[1].split("-m", 1)[0] for key in placed)
    partial = sum(1 for n in per_gang.values() if n != pending)
    return problems + ([f"{partial} gangs partly bound"] if partial else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.child_kube", description=__doc__)
    parser.add_argument("workload", choices=[*sorted(WORKLOADS), "gangs"])
    parser.add_argument("--e2e", action="store_true", help="end to end (else the engine alone)")
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--running", type=int, required=True, help="pods before (gangs: gangs)")
    parser.add_argument("--pods", type=int, required=True, help="measured pods (gangs: members)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds (end to end)")
    parser.add_argument("--profile", help="cProfile stats of the scheduler process (end to end)")
    parser.add_argument(
        "--creator", choices=CREATORS, default="raw", help="how objects are created (end to end)"
    )
    args = parser.parse_args(argv)
    from controllers.cli.run import tune_gc

    tune_gc()
    out: dict[str, Any]
    if args.e2e:
        sizes = (args.workload, args.nodes, args.running, args.pods)
        out = asyncio.run(e2e(*sizes, args.timeout, args.profile, args.creator))
    elif args.workload == "gangs":
        out = gangs(args.running, args.pods, args.nodes)
    else:
        out = run(args.workload, args.nodes, args.running, args.pods)
    out["peak_rss_mib"] = memory_mib("VmHWM")
    out["load_average"] = os.getloadavg()[0]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
