"""The harness's scenarios (issue 7), each a list of steps at the sizes of the chosen run.

1. `cycle`: one warm scheduling cycle against fleet size, and the same rules as a per-cluster
   Python loop (`perf/test_scheduling_bench.py`); both must select the same clusters.
2. `spread`: EvenSpread picking n of N over 3 topology levels, against the line-by-line oracle
   (`tests/plugins/spread_oracle.py`); both must pick the same sequence.
3. `cold-start`: the controller on the embedded hub, fresh process per run
   (`perf.controller_run`, OCM's benchmark shape), until every placement has its decisions;
   every placement must decide 10 clusters. Also on the generated workload (`perf.workload`:
   spread, decision groups, Exact, tolerations, claims; `perf.child mixed`): every placement
   must have a status, none misconfigured, its decisions what its status counts.
4. `fan-out`: after a cold start, one cluster label change re-queuing every placement, until all
   decisions are updated (`perf.child fan-out`); the cluster must leave every placement.
5. `memory`: peak RSS of the scheduling core with the in-memory index over a generated
   workload (`perf.child core`), and of the controller alone at the target size (full run).
6. Growth exponents are fitted from these curves by `perf.report`.

Steps 7-10, the local cluster's pod scheduler, are `perf.pod_scenarios`, and 11, kube
scheduler_perf's workloads by their names (`pod-SchedulingBasic` ...), `perf.kube_scenarios`;
12, `pod-vs-kube`, our scheduler beside kube-scheduler on a real kube-apiserver (`perf.vs_kube`);
13, `hub-vs-ocm`, the hub controller beside OCM's placement controller on a real kube-apiserver
(`perf.vs_ocm`);
the scenario names, the targets (docs/performance.md, 'Targets') and the sizes of each run
mode are `perf.targets`.
`plan` lists the steps of a run.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Sequence
from functools import cache, partial
from typing import Any

from perf.harness import Case, Settings, Step, children, repeat
from perf.kube_scenarios import kube_steps
from perf.pod_scenarios import pod_e2e, pod_engine, pod_memory, pod_preemption, vs_kube_step
from perf.targets import (
    COLD,
    CYCLE,
    FANOUT,
    FULL,
    HUB_VS_OCM,
    MEMORY,
    OCM_SHAPE,
    POD_E2E,
    POD_ENGINE,
    POD_MEMORY,
    POD_PREEMPTION,
    POD_VS_KUBE,
    QUICK,
    SCENARIOS,
    SMOKE,
    SPREAD,
    WIDE,
    WIDE_SHARE,
)

__all__ = ["plan"]


# --- 1. one scheduling cycle, and the per-cluster loop -------------------------------------------


@cache
def _cycle_world(size: int) -> Any:
    from perf.test_scheduling_bench import bench_placement, world

    fleet, snap = world(size)
    return fleet, snap, bench_placement(size)


@cache
def _plain(size: int) -> Any:
    from perf.test_scheduling_bench import plain_world

    fleet, _, p = _cycle_world(size)
    return plain_world(fleet, p)


@contextlib.contextmanager
def _controller_gc() -> Iterator[None]:
    """The collector as the hub controller's process sets it (`HUB_GC_THRESHOLDS`) while a cycle
    is timed: under Python's default thresholds a collection of the harness's large heap lands in
    most cycles and the median measures it, not the cycle (2026-11-27: 287 against 190 µs at
    10k)."""
    from controllers.runtime.process import HUB_GC_THRESHOLDS

    before = gc.get_threshold()
    gc.set_threshold(*HUB_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _cycle(size: int, settings: Settings) -> Case:
    from placement.testing import NOW
    from plugins import default_scheduler

    _, snap, p = _cycle_world(size)
    scheduler = default_scheduler()
    case = Case(CYCLE, "scheduler", size, baseline=("loop", size, 1))
    with _controller_gc():
        case.values = repeat(lambda: scheduler.schedule(p, snap, NOW), budget_s=settings.budget_s)
    result = scheduler.schedule(p, snap, NOW)
    case.details["selected"] = len(result.selected)
    return case


def _loop(size: int, settings: Settings) -> Case:
    from perf.test_scheduling_bench import loop_schedule
    from placement.testing import NOW
    from plugins import default_scheduler

    _, snap, p = _cycle_world(size)
    plain = _plain(size)
    case = Case(CYCLE, "loop", size)
    with _controller_gc():
        case.values = repeat(lambda: loop_schedule(p, plain, NOW), budget_s=settings.budget_s)
    expected = loop_schedule(p, plain, NOW)
    got = snap.rows_to_names(default_scheduler().schedule(p, snap, NOW).selected)
    if got != expected:
        case.error = "the loop and the scheduler selected different clusters"
    return case


# --- 2. EvenSpread against its oracle ------------------------------------------------------------


@cache
def _spread_world(size: int) -> Any:
    from perf.test_spread_bench import topology_fleet

    return topology_fleet(size, 3)


def _spread(size: int, settings: Settings) -> Case:
    from perf.test_spread_bench import select, spread_placement

    fleet, total = _spread_world(size)
    p = spread_placement(3, size // 10)
    case = Case(SPREAD, "vectorized", size, baseline=("oracle", size, 1))
    case.values = repeat(lambda: select(fleet, total, p), budget_s=settings.budget_s, least=3)
    case.details["picked"] = len(select(fleet, total, p))
    return case


def _oracle(size: int, settings: Settings) -> Case:
    import time

    from perf.test_spread_bench import oracle_inputs, select, spread_placement
    from tests.plugins.spread_oracle import Term, oracle_select

    fleet, total = _spread_world(size)
    terms = [Term(1, False), Term(1, False), Term(1, True)]
    candidates = oracle_inputs(fleet, total, 3)
    case = Case(SPREAD, "oracle", size)
    picked: list[str] = []
    for _ in range(1 if settings.mode != "full" else 2):
        began = time.perf_counter()
        picked = oracle_select(candidates, terms, 2, size // 10)
        case.values.append(time.perf_counter() - began)
    fast = select(fleet, total, spread_placement(3, size // 10))
    if picked != fleet.rows_to_names(fast):
        case.error = "the oracle and EvenSpread picked different sequences"
    return case


# --- 3-5. fresh processes ------------------------------------------------------------------------


def _sized(clusters: int, placements: int) -> list[str]:
    return [f"--clusters={clusters}", f"--placements={placements}"]


def _cold(clusters: int, placements: int, settings: Settings, times: int) -> Case:
    def read(out: Any, case: Case) -> float:
        for key in ("synced_s", "reconciles", "peak_rss_mib", "per_placement"):
            case.details.setdefault(key, []).append(out.get(key))
        per_placement = out.get("per_placement") or {}
        case.details.setdefault("writes_per_placement", []).append(sum(per_placement.values()))
        if out["decided_ten"] != placements or out["selected_ten"] != placements:
            case.error = f"only {out['decided_ten']} of {placements} placements decided 10 clusters"
        return float(out["decided_s"])

    ocm = (OCM_SHAPE, 1_000, placements) if clusters != 1_000 else None
    case = Case(COLD, OCM_SHAPE, clusters, placements, baseline=ocm, speedup=False)
    timeout = 120 + placements * 0.05 + clusters * 0.002
    return children(
        case, "perf.controller_run", _sized(clusters, placements), settings, times, read, timeout
    )


def _mixed(clusters: int, placements: int, settings: Settings, wide: float = 0.0) -> Case:
    def read(out: Any, case: Case) -> float:
        keys = ("synced_s", "reconciles", "peak_rss_mib", "verdicts", "decisions")
        for key in (*keys, "widest", "cpu_s", "server_cpu_s", "server_peak_rss_mib"):
            case.details.setdefault(key, []).append(out.get(key))
        writes = out.get("writes") or {}
        created = writes.get("PlacementDecision ADDED", 0)
        case.details.setdefault("placement_decisions", []).append(created)
        case.details.setdefault("events", []).append(writes.get("Event ADDED", 0))
        writing = ("create", "update", "patch", "delete")
        by_resource = out.get("by_resource") or {}
        sent = sum(n for what, n in by_resource.items() if what.split()[-1] in writing)
        case.details.setdefault("requests_per_pd", []).append(sent / created if created else None)
        verdicts = out["verdicts"]
        bad = verdicts.get("no status", 0) + verdicts.get("misconfigured", 0)
        if bad or out["status_and_decisions_disagree"]:
            case.error = (
                f"{bad} placements without a status or misconfigured, "
                f"{out['status_and_decisions_disagree']} whose decisions disagree with the status"
            )
        return float(out["decided_s"])

    name = (
        WIDE
        if wide == WIDE_SHARE
        else f"wide workload ({wide:.0%} wide)"
        if wide
        else "mixed workload"
    )
    case = Case(COLD, name, clusters, placements)
    args = ["mixed", *_sized(clusters, placements), f"--seed={settings.seed}", f"--wide={wide}"]
    if wide:  # issue 20's bars are the controller's alone: the server runs in its own process
        args.append("--split")
    timeout = 120 + placements * 0.1 + clusters * 0.005
    return children(case, "perf.child", args, settings, 1, read, timeout)


def _fanout(clusters: int, placements: int, settings: Settings, times: int) -> Case:
    def read(out: Any, case: Case) -> float:
        for key in ("requeued", "had_it", "changed"):
            case.details.setdefault(key, []).append(out.get(key))
        if out["still_have_it"] != 0 or out["requeued"] != placements:
            case.error = (
                f"{out['still_have_it']} placements kept the relabelled cluster; "
                f"{out['requeued']} of {placements} re-queued"
            )
        return float(out["seconds"])

    case = Case(FANOUT, "controller", clusters, placements)
    timeout = 120 + placements * 0.05 + clusters * 0.002
    args = ["fan-out", *_sized(clusters, placements)]
    return children(case, "perf.child", args, settings, times, read, timeout)


def _core_memory(clusters: int, placements: int, settings: Settings) -> Case:
    def read(out: Any, case: Case) -> float:
        keys = ("floor_rss_mib", "loaded_rss_mib", "ms_per_placement", "generated_s", "verdicts")
        for key in keys:
            case.details.setdefault(key, []).append(out.get(key))
        return float(out["peak_rss_mib"])

    case = Case(MEMORY, "core", clusters, placements, unit="MiB")
    args = ["core", *_sized(clusters, placements), f"--seed={settings.seed}"]
    timeout = 120 + placements * 0.1 + clusters * 0.005
    return children(case, "perf.child", args, settings, 1, read, timeout)


def _controller_memory(clusters: int, placements: int, settings: Settings) -> Case:
    def read(out: Any, case: Case) -> float:
        for key in ("decided_s", "reconciles", "cpu_s", "server_cpu_s", "server_peak_rss_mib"):
            case.details.setdefault(key, []).append(out.get(key))
        if out["decided_ten"] != placements:
            case.error = f"only {out['decided_ten']} of {placements} placements decided"
        return float(out["peak_rss_mib"])

    core = ("core", clusters, placements)
    case = Case(
        MEMORY, "controller", clusters, placements, unit="MiB", baseline=core, speedup=False
    )
    args = [*_sized(clusters, placements), "--split"]
    timeout = 300 + placements * 0.1 + clusters * 0.01
    return children(case, "perf.controller_run", args, settings, 1, read, timeout)


# --- the plan ------------------------------------------------------------------------------------


def plan(settings: Settings, only: Sequence[str] = SCENARIOS) -> list[Step]:
    """The steps of a run, in order; `weight` is a rough cost used by the progress bar."""
    sizes = {"smoke": SMOKE, "quick": QUICK}.get(settings.mode, FULL)
    reps = settings.repetitions if settings.mode == "full" else 1
    steps: list[Step] = []

    def add(scenario: str, label: str, n: int, p: int, run: Callable[[], Case], w: float) -> None:
        if scenario in only:
            steps.append(Step(scenario, label, n, p, run, w))

    for n in sizes.cycle:
        add(CYCLE, "scheduler", n, 1, partial(_cycle, n, settings), 2 + n / 5_000)
        if n in sizes.loop:
            add(CYCLE, "loop", n, 1, partial(_loop, n, settings), 2 + n / 50_000)
    for n in sizes.spread:
        add(SPREAD, "vectorized", n, 1, partial(_spread, n, settings), 2 + n / 10_000)
    for n in sizes.oracle:
        add(SPREAD, "oracle", n, 1, partial(_oracle, n, settings), (n / 500) ** 2)
    for n, p in sizes.cold:
        times = reps if (n, p) in ((5_000, 10_000), (1_000, 1_000), (1_000, 10_000)) else 1
        w = times * (3 + p / 250 + n / 2_000)
        add(COLD, OCM_SHAPE, n, p, partial(_cold, n, p, settings, times), w)
    for n, p in sizes.mixed:
        add(COLD, "mixed workload", n, p, partial(_mixed, n, p, settings), 3 + p / 150 + n / 2_000)
    for n, p in sizes.wide:
        wide = partial(_mixed, n, p, settings, WIDE_SHARE)
        add(COLD, "wide workload", n, p, wide, 3 + p / 30 + n / 500)
    for n, p in sizes.fanout:
        times = reps if p == 1_000 else 1
        w = times * (3 + p / 250 + n / 2_000)
        add(FANOUT, "controller", n, p, partial(_fanout, n, p, settings, times), w)
    for n, p in sizes.core:
        add(MEMORY, "core", n, p, partial(_core_memory, n, p, settings), 3 + n / 2_000)
    for n, p in sizes.controller_memory:
        w = 10 + n / 600
        add(MEMORY, "controller", n, p, partial(_controller_memory, n, p, settings), w)
    for n, p in sizes.pod_engine:
        times = reps if (n, p) == (5_000, 10_000) else 1
        w = times * (3 + n / 1_000 + p / 2_000)
        add(POD_ENGINE, "engine", n, p, partial(pod_engine, n, p, settings, times), w)
    for n, p in sizes.pod_preemption:
        add(POD_PREEMPTION, "engine", n, p, partial(pod_preemption, n, p, settings), 3 + p / 5_000)
    for n, p in sizes.pod_e2e:
        add(POD_E2E, "scheduler", n, p, partial(pod_e2e, n, p, settings), 8 + n / 250 + p / 200)
    for n, p in sizes.pod_memory:
        add(POD_MEMORY, "engine", n, p, partial(pod_memory, n, p, settings), 3 + p / 5_000)
    if POD_VS_KUBE in only:
        steps.append(vs_kube_step(settings))
    if HUB_VS_OCM in only:
        from perf.vs_ocm import harness_step

        steps.append(harness_step(settings))
    return steps + kube_steps(settings, list(only))
