"""kube-scheduler's scheduler_perf workloads, by their names there, through the pod engine
without I/O (issue 29): the shapes of scheduler_perf's `performance-config.yaml` at the sizes
the issue names, one JSON line per run. Nodes have 4 cpu, 32Gi and 110 pods.

* `SchedulingBasic`: 5,000 nodes, 1,000 pods bound by another scheduler, then 10,000 measured
  pods of 100m / 500Mi.
* `SchedulingPodAntiAffinity`: 5,000 hostname-labelled nodes, 1,000 green pods one per node,
  then 1,000 green pods each anti-affine to green on the hostname.
* `TopologySpreading`: 5,000 nodes in 3 zones, 1,000 matching pods, then 5,000 pods with one
  zone constraint (DoNotSchedule, maxSkew 1).
* `PreemptionBasic`: 5,000 nodes with 4 low-priority pods of 900m each (3.6 of 4 cpu), then
  1,000 high-priority pods of 900m: each must evict one.

Every bind is answered with a successful BindResult, every eviction with the victim's deletion,
until every measured pod is bound (a virtual clock steps past the preemptors' backoff); the
figures are pods/s over that time (and ms per preemptor), and pods per CPU-second of the
scheduling thread (steadier when other work shares the cores). Checks: every measured pod bound,
none where it must not be (anti-affinity: alone, never beside a green pod; spread: zones
within the skew; preemption: at most one eviction per preemptor). `--smoke` runs every
workload at a tiny size (CI: `perf/test_kube_workloads.py`).

```
python -m perf.kube_workloads                       # every workload at the issue's sizes
python -m perf.kube_workloads --only SchedulingBasic --nodes 5000 --pods 10000
python -m perf.kube_workloads --smoke
```

`objects` gives the same workload as objects (nodes, running pods, measured pods) for the end to
end runs of the harness (`perf.child_kube`); `gangs` runs the gang row (G gangs of M members of
1 cpu on N nodes of 4 cpu, Coscheduling on) through the engine, and `run` keeps a timeline of
the bound count after every `schedule()` batch (the harness's throughput curve). Not here: the
RSS row (`python -m perf.child pod-memory --nodes 5000 --pods 50000`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from apis.core import Node, Pod
from controllers.runtime.process import tune_gc
from perf.test_pod_antiaffinity_bench import _node as anti_node
from perf.test_pod_antiaffinity_bench import _pod as anti_pod
from perf.test_pod_antiaffinity_bench import _template as anti_template
from perf.test_pod_engine_bench import SCHEDULER, T0, _profile
from perf.test_pod_spread_bench import _events as spread_events
from placement.pods.framework.events import (
    BindPod,
    BindResult,
    ClusterEvent,
    DeletePod,
    NodeEvent,
    PodEvent,
)
from placement.pods.scheduler.engine import Engine

__all__ = [
    "GANG_SIZES",
    "GANG_SMOKE",
    "SIZES",
    "SMOKE",
    "WORKLOADS",
    "gang_objects",
    "gangs",
    "objects",
    "run",
]

KUBE_PODS_PER_S = {  # kube's scheduler_perf thresholds at 5,000 nodes (issue 29; perf/targets.py)
    "SchedulingBasic": 680,
    "SchedulingPodAntiAffinity": 60,
    "TopologySpreading": 460,
}
SIZES = {  # nodes, running before, measured
    "SchedulingBasic": (5_000, 1_000, 10_000),
    "SchedulingPodAntiAffinity": (5_000, 1_000, 1_000),
    "TopologySpreading": (5_000, 1_000, 5_000),
    "PreemptionBasic": (5_000, 4, 1_000),  # running: per node
}
SMOKE = {
    "SchedulingBasic": (50, 20, 100),
    "SchedulingPodAntiAffinity": (60, 20, 30),
    "TopologySpreading": (60, 30, 90),
    "PreemptionBasic": (20, 4, 10),
}


def _node(i: int) -> Node:
    name = f"node-{i:05d}"
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": 110}},
        }
    )


def _pod(name: str, cpu: str, scheduler: str, node: str | None = None, priority: int = 0) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "sched-0", "uid": f"uid-{name}"},
            "spec": {
                "schedulerName": scheduler,
                "nodeName": node,
                "priority": priority,
                "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}}}
                ],
            },
        }
    )


def objects(
    workload: str, nodes: int, running: int, pending: int
) -> tuple[list[Node], list[Pod], list[Pod]]:
    """The workload as objects: its nodes, the pods running before (bound by another scheduler)
    and the measured pods, in the order they are fed or created."""
    cluster = [_node(i) for i in range(nodes)]
    if workload == "SchedulingBasic":
        before = [_pod(f"init-{i}", "100m", "x", f"node-{i % nodes:05d}") for i in range(running)]
        measured = [_pod(f"m-{i}", "100m", SCHEDULER) for i in range(pending)]
    elif workload == "SchedulingPodAntiAffinity":
        cluster = [anti_node(i) for i in range(nodes)]
        bound, waiting = anti_template("other"), anti_template(SCHEDULER)
        stride = max(1, nodes // max(1, running))
        before = [
            anti_pod(bound, f"init-{i}", "sched-0", f"node-{(i * stride) % nodes:05d}")
            for i in range(running)
        ]
        measured = [anti_pod(waiting, f"m-{i}", "sched-1") for i in range(pending)]
    elif workload == "TopologySpreading":
        events = spread_events(nodes, running, pending)
        cluster = [e.node for e in events if isinstance(e, NodeEvent)]
        pods = [e.pod for e in events if isinstance(e, PodEvent)]
        before, measured = pods[:running], pods[running:]
    elif workload == "PreemptionBasic":  # `running` counts low-priority pods per node here
        before = [
            _pod(f"low-{i}-{j}", "900m", "x", f"node-{i:05d}", priority=0)
            for i in range(nodes)
            for j in range(running)
        ]
        measured = [_pod(f"high-{i}", "900m", SCHEDULER, priority=1_000) for i in range(pending)]
    else:
        raise ValueError(f"unknown workload {workload!r}")
    return cluster, before, measured


def _engine(workload: str, nodes: int, running: int, pending: int) -> Engine:
    cluster, before, measured = objects(workload, nodes, running, pending)
    events: list[ClusterEvent] = [NodeEvent("Added", n) for n in cluster]
    events.extend(PodEvent("Added", p) for p in (*before, *measured))
    engine = Engine(_profile())
    engine.handle_many(events, T0)
    return engine


WORKLOADS: dict[str, Callable[[int, int, int], Engine]] = {
    name: partial(_engine, name)
    for name in (
        "SchedulingBasic",
        "SchedulingPodAntiAffinity",
        "TopologySpreading",
        "PreemptionBasic",
    )
}


def _drive(
    engine: Engine, pods: dict[str, Pod], timeline: list[tuple[float, int]] | None = None
) -> tuple[dict[str, str], int, int]:
    """Schedule until nothing moves: binds answered, victims deleted. Returns where each pod
    was bound, the evictions and the schedule() calls; `timeline` gets (seconds, bound) after
    every call."""
    placed: dict[str, str] = {}
    evicted = calls = 0
    now = T0
    began = time.perf_counter()
    while True:
        calls += 1
        actions = engine.schedule(now, limit=500)
        moved = False
        for action in actions:
            if isinstance(action, BindPod):
                engine.handle(BindResult(action.key, action.uid, action.node, True), now)
                placed[action.key] = action.node
                moved = True
            elif isinstance(action, DeletePod):
                victim = pods.get(action.key)
                if victim is not None:
                    engine.handle(PodEvent("Deleted", victim), now)
                    evicted += 1
                    moved = True
        if timeline is not None:
            timeline.append((time.perf_counter() - began, len(placed)))
        queues = engine.queue_sizes()
        if queues["active"] == 0:
            if (not queues["backoff"] and not moved) or calls > 100 + len(pods) + len(placed):
                return placed, evicted, calls  # done, or stuck (the check reports it)
            now += timedelta(seconds=10)  # a virtual clock: past the preemptors' backoff


def run(workload: str, nodes: int, running: int, pending: int) -> dict[str, Any]:
    """One workload in this process: setup, then the measured schedule until every pod is bound."""
    began = time.perf_counter()
    engine = WORKLOADS[workload](nodes, running, pending)
    _, before, _ = objects(workload, nodes, running, pending)
    victims = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in before}
    setup_s = time.perf_counter() - began
    timeline: list[tuple[float, int]] = []
    began, cpu = time.perf_counter(), time.thread_time()
    placed, evicted, calls = _drive(engine, victims, timeline)
    seconds, cpu_s = time.perf_counter() - began, time.thread_time() - cpu
    out: dict[str, Any] = {
        "workload": workload,
        "nodes": nodes,
        "running": running,
        "pending": pending,
        "bound": len(placed),
        "evicted": evicted,
        "schedule_calls": calls,
        "setup_s": round(setup_s, 3),
        "seconds": round(seconds, 3),
        "pods_per_s": round(len(placed) / seconds, 1) if seconds > 0 else None,
        "cpu_s": round(cpu_s, 3),  # this thread's CPU: steadier than the wall on shared cores
        "pods_per_cpu_s": round(len(placed) / cpu_s, 1) if cpu_s > 0 else None,
        "kube_pods_per_s": KUBE_PODS_PER_S.get(workload),
        "problems": _problems(workload, nodes, running, pending, placed, evicted),
        "load_average": os.getloadavg()[0],
        "timeline": [(round(t, 4), n) for t, n in timeline],
    }
    if workload == "PreemptionBasic":
        out["ms_per_preemptor"] = round(1000 * seconds / max(1, len(placed)), 3)
    return out


GANG_CONFIG = {"pluginArgs": {"Coscheduling": {"podGroupBackoffSeconds": 1}}}
"""Competing gangs settle with a group backoff of one second (as `perf/test_gang_bench.py`)."""
GANG_SIZES = (100, 50, 1_000)  # gangs, members, nodes of 4 cpu (members ask 1 cpu: 80 fit)
GANG_SMOKE = (5, 4, 4)


def gang_objects(groups: int, members: int, nodes: int) -> tuple[list[Node], list[Any], list[Pod]]:
    """Nodes of 4 cpu, the PodGroups (minMember = members) and their members of 1 cpu each."""
    from apis.registry import parse_as
    from apis.scheduling import POD_GROUP_LABEL, PodGroup

    made = []
    for g in range(groups):
        doc = {"name": f"g{g:03d}", "namespace": "sched-0"}
        made.append(
            parse_as(
                PodGroup,
                {
                    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                    "kind": "PodGroup",
                    "metadata": doc,
                    "spec": {"minMember": members},
                },
            )
        )
    pods = []
    for g in range(groups):
        for j in range(members):
            p = _pod(f"g{g:03d}-m{j:03d}", "1", SCHEDULER)
            meta = p.metadata.model_copy(update={"labels": {POD_GROUP_LABEL: f"g{g:03d}"}})
            pods.append(p.model_copy(update={"metadata": meta}))
    return [_node(i) for i in range(nodes)], made, pods


def gangs(groups: int, members: int, nodes: int) -> dict[str, Any]:
    """The gang row through the engine: seconds of `schedule()` until every gang is placed whole
    or rejected (as many members bound as whole gangs fit, every member tried at least once).
    A virtual clock steps past the group backoff (1 s) whenever the active queue is empty."""
    from placement.pods.config.scheduler_config import build_profile, load_config
    from placement.pods.framework.events import ObjectEvent
    from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS

    began = time.perf_counter()
    config = load_config({"schedulerName": SCHEDULER, **GANG_CONFIG})
    profile = build_profile(
        config, POD_PLUGINS, defaults=DEFAULT_PLUGINS, default_weights=DEFAULT_SCORE_WEIGHTS
    )
    engine = Engine(profile)
    cluster, made, pods = gang_objects(groups, members, nodes)
    events: list[ClusterEvent] = [NodeEvent("Added", n) for n in cluster]
    events += [ObjectEvent("Added", g) for g in made]
    events += [PodEvent("Added", p) for p in pods]
    engine.handle_many(events, T0)
    setup_s = time.perf_counter() - began
    fit = min(groups, nodes * 4 // members)
    keys = [f"sched-0/{p.metadata.name}" for p in pods]
    placed: dict[str, str] = {}
    timeline: list[tuple[float, int]] = []
    now, calls = T0, 0
    began, cpu = time.perf_counter(), time.thread_time()
    while calls < 10_000:
        calls += 1
        for action in engine.schedule(now, limit=500):
            if isinstance(action, BindPod):
                engine.handle(BindResult(action.key, action.uid, action.node, True), now)
                placed[action.key] = action.node
        timeline.append((time.perf_counter() - began, len(placed)))
        tried = all(engine.stats.pod_attempts.get(k, 0) for k in keys)
        if len(placed) >= fit * members and tried:
            break
        if engine.queue_sizes()["active"] == 0:
            now += timedelta(seconds=1)
    seconds, cpu_s = time.perf_counter() - began, time.thread_time() - cpu
    per_gang = Counter(key.split("/", 1)[1].split("-m", 1)[0] for key in placed)
    partial_gangs = sum(1 for n in per_gang.values() if n != members)
    problems = [] if len(placed) == fit * members else [f"{len(placed)} of {fit * members} bound"]
    if partial_gangs:
        problems.append(f"{partial_gangs} gangs partly bound")
    return {
        "workload": "gangs",
        "gangs": groups,
        "members": members,
        "nodes": nodes,
        "fit": fit,
        "bound": len(placed),
        "whole_gangs": sum(1 for n in per_gang.values() if n == members),
        "partial_gangs": partial_gangs,
        "schedule_calls": calls,
        "setup_s": round(setup_s, 3),
        "seconds": round(seconds, 3),
        "cpu_s": round(cpu_s, 3),
        "problems": problems,
        "load_average": os.getloadavg()[0],
        "timeline": [(round(t, 4), n) for t, n in timeline],
    }


def _problems(
    workload: str, nodes: int, running: int, pending: int, placed: dict[str, str], evicted: int
) -> list[str]:
    problems = [] if len(placed) == pending else [f"{len(placed)} of {pending} bound"]
    if workload == "SchedulingPodAntiAffinity":
        stride = max(1, nodes // max(1, running))
        taken = {f"node-{(i * stride) % nodes:05d}" for i in range(running)}
        if len(set(placed.values())) != len(placed) or taken & set(placed.values()):
            problems.append("a green pod beside another")
    if workload == "TopologySpreading":
        zones = Counter(int(n.rsplit("-", 1)[1]) % 3 for n in placed.values())
        if zones and max(zones.values()) - min(zones.values()) > 1:
            problems.append(f"zones out of skew: {dict(zones)}")
    if workload == "PreemptionBasic" and evicted > len(placed):
        problems.append(f"{evicted} evictions for {len(placed)} preemptors")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.kube_workloads", description=__doc__)
    parser.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), help="workloads to run")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does it run? (CI)")
    parser.add_argument("--nodes", type=int, help="override the nodes")
    parser.add_argument("--pods", type=int, help="override the measured pods")
    args = parser.parse_args(argv)
    tune_gc()  # the collector as the scheduler process sets it
    failed = False
    for name in args.only or list(WORKLOADS):
        nodes, running, pending = (SMOKE if args.smoke else SIZES)[name]
        out = run(name, args.nodes or nodes, running, args.pods or pending)
        failed = failed or bool(out["problems"])
        print(json.dumps(out), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
