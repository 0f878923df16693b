"""One warm scheduling cycle at 1k, 10k and 100k clusters (the first bars of docs/performance.md,
"Targets": <= 1 ms at 10k, <= 5 ms at 100k), and the same rules as a plain per-cluster Python loop
for the speed-up (>= 50x at 10k).

The placement has a label predicate, tolerations and Balance + Steady (+ the PreferNoSelect
penalty, an Additive default) + ResourceAllocatableCPU + AddOn, over a seeded synthetic fleet
whose other placements and this one already have decisions. The snapshot is built once, outside
the timed part; the warm case reuses what a snapshot computes on first use (cluster-set masks,
the taint table grouped by kind), the cold case times each cycle on a fresh copy of the snapshot
that has none of it. Run: `pytest perf/test_scheduling_bench.py --benchmark-enable`. With
`--benchmark-disable` (CI) each case runs once and the 100k size is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cache

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis.placements import Placement, Toleration
from placement.snapshot.fleet_snapshot import FleetSnapshot
from placement.testing import (
    MAINTENANCE,
    NOW,
    SCORE_RESOURCE,
    UNREACHABLE,
    SyntheticFleet,
    addon,
    builtin,
    placement,
    predicate,
    synthetic_fleet,
    toleration,
)
from plugins import default_scheduler

SEED = 20261122
SIZES = [
    pytest.param(1_000, id="1k"),
    pytest.param(10_000, id="10k"),
    pytest.param(100_000, id="100k", marks=pytest.mark.largest),
]
ENVS = ["prod", "staging"]


def bench_placement(size: int) -> Placement:
    return placement(
        "apps",
        "bench",
        numberOfClusters=size // 100,
        predicates=[predicate(expressions=[{"key": "env", "operator": "In", "values": ENVS}])],
        tolerations=[
            toleration(UNREACHABLE, "Exists", seconds=7200),
            toleration(MAINTENANCE, "Equal", "planned", effect="NoSelectIfNew"),
        ],
        prioritizerPolicy={
            "mode": "Additive",
            "configurations": [
                builtin("ResourceAllocatableCPU", 2),
                addon(SCORE_RESOURCE, "cpuAvailable", 1),
            ],
        },
    )


@cache
def world(size: int) -> tuple[SyntheticFleet, FleetSnapshot]:
    fleet = synthetic_fleet(size, SEED, decided={"bench": 0.02})
    return fleet, fleet.snapshot()


def skip_largest_unless_benchmarking(request: pytest.FixtureRequest, benchmarking: bool) -> None:
    if request.node.get_closest_marker("largest") and not benchmarking:
        pytest.skip("100k clusters only when benchmarking (--benchmark-enable)")


# --- the same rules, one cluster at a time, in plain Python --------------------------------------


@dataclass(frozen=True)
class PlainCluster:
    name: str
    labels: dict[str, str]
    taints: list[tuple[str, str, str, datetime | None]]
    cpu: float | None  # None unless both allocatable and capacity are reported
    score: int | None
    valid_until: datetime | None


@dataclass(frozen=True)
class PlainWorld:
    clusters: list[PlainCluster]
    counts: dict[str, int]  # decisions per cluster, other placements only
    mine: set[str]  # this placement's current decisions


def plain_world(fleet: SyntheticFleet, p: Placement) -> PlainWorld:
    scores = {s.namespace: s for s in fleet.scores if s.name == SCORE_RESOURCE}
    clusters = []
    for c in fleet.clusters:
        status = c.status
        alloc = status.allocatable if status else None
        cap = status.capacity if status else None
        cpu = (
            alloc["cpu"].approximate()
            if alloc and cap and "cpu" in alloc and "cpu" in cap
            else None
        )
        s = scores.get(c.name)
        value = None
        if s and s.status:
            for item in s.status.scores or []:
                if item.name == "cpuAvailable":
                    value = item.value
        clusters.append(
            PlainCluster(
                c.name,
                dict(c.metadata.labels or {}),
                [(t.key, t.value or "", t.effect, t.time_added) for t in c.spec.taints or []],
                cpu,
                value,
                s.status.valid_until if s and s.status else None,
            )
        )
    counts: dict[str, int] = {}
    mine: set[str] = set()
    for pd in fleet.decisions:
        own = (pd.metadata.labels or {}).get("cluster.open-cluster-management.io/placement")
        for d in pd.status.decisions if pd.status else []:
            if own == p.name and pd.namespace == p.namespace:
                mine.add(d.cluster_name)
            else:
                counts[d.cluster_name] = counts.get(d.cluster_name, 0) + 1
    return PlainWorld(clusters, counts, mine)


def tolerated(
    key: str,
    value: str,
    effect: str,
    added: datetime | None,
    tolerations: Sequence[Toleration],
    decided: bool,
    now: datetime,
) -> bool:
    if effect == "PreferNoSelect" or (effect == "NoSelectIfNew" and decided):
        return True
    for t in tolerations:
        if t.effect and t.effect != effect:
            continue
        if t.key and t.key != key:
            continue
        if t.operator in ("", "Equal"):
            if (t.value or "") != value:
                continue
        elif t.operator != "Exists":
            continue
        if t.toleration_seconds is None:
            return True
        if added is not None and now < added + timedelta(seconds=t.toleration_seconds):
            return True
    return False


def loop_schedule(p: Placement, plain: PlainWorld, now: datetime) -> list[str]:
    """Predicate, TaintToleration, Balance, Steady, PreferNoSelect, CPU, AddOn, TopN."""
    tolerations = p.spec.tolerations or []
    soft = [
        t.model_copy(update={"effect": None})
        for t in tolerations
        if t.effect in (None, "PreferNoSelect")
    ]
    feasible = []
    for c in plain.clusters:  # every cluster is in the bound `global` set
        if c.labels.get("env") not in ENVS:
            continue
        decided = c.name in plain.mine
        if all(tolerated(*t, tolerations, decided, now) for t in c.taints):
            feasible.append(c)
    cpus = [c.cpu for c in feasible if c.cpu is not None]
    low, high = (min(cpus), max(cpus)) if cpus else (0.0, 0.0)
    max_count = max(plain.counts.values(), default=0)
    ranked = []
    for c in feasible:
        count = plain.counts.get(c.name, 0)
        balance = 100 if count == 0 else 2 * int(100 * (0.5 - count / max_count))
        steady = 100 if c.name in plain.mine else 0
        prefer = 0
        for key, value, effect, added in c.taints:
            if effect == "PreferNoSelect":
                soft = [
                    t.model_copy(update={"effect": None})
                    for t in tolerations
                    if t.effect in (None, "PreferNoSelect")
                ]
                if not tolerated(key, value, "NoSelect", added, soft, False, now):
                    prefer = -100
        cpu = 0
        if c.cpu is not None:
            cpu = 100 if high == low else int(((c.cpu - low) / (high - low) - 0.5) * 2.0 * 100.0)
        fresh = c.valid_until is None or not now > c.valid_until
        score = c.score if c.score is not None and fresh else 0
        total = balance + steady + prefer + 2 * cpu + score
        ranked.append((-total, c.name.encode(), c.name))
    ranked.sort()
    wanted = p.spec.number_of_clusters
    return [name for _, _, name in ranked[:wanted]]


# --- tests and benchmarks ---------------------------------------------------------------------


@pytest.mark.parametrize("size", [pytest.param(1_000, id="1k"), pytest.param(10_000, id="10k")])
def test_loop_and_scheduler_select_the_same_clusters(size: int) -> None:
    fleet, snap = world(size)
    p = bench_placement(size)
    result = default_scheduler().schedule(p, snap, NOW)
    assert result.status.ok, result.status
    expected = loop_schedule(p, plain_world(fleet, p), NOW)
    assert len(expected) == size // 100
    assert snap.rows_to_names(result.selected) == expected


@pytest.mark.parametrize("size", SIZES)
def test_bench_scheduling_cycle(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, benchmarking: bool, size: int
) -> None:
    skip_largest_unless_benchmarking(request, benchmarking)
    _, snap = world(size)
    p = bench_placement(size)
    scheduler = default_scheduler()
    scheduler.schedule(p, snap, NOW)  # warm: cluster-set masks and the taint table are cached
    benchmark.group = "scheduling cycle"
    result = benchmark(scheduler.schedule, p, snap, NOW)
    assert len(result.selected) == size // 100


@pytest.mark.parametrize("size", SIZES)
def test_bench_scheduling_cycle_cold_snapshot(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, benchmarking: bool, size: int
) -> None:
    skip_largest_unless_benchmarking(request, benchmarking)
    _, snap = world(size)
    p = bench_placement(size)
    scheduler = default_scheduler()
    scheduler.schedule(p, snap, NOW)  # the scheduler has built its plugins

    def fresh() -> tuple[tuple[Placement, FleetSnapshot, datetime], dict[str, object]]:
        # Same columns, nothing computed on first use yet (set masks, taint table, by kind).
        return (p, replace(snap, _set_masks={}), NOW), {}

    benchmark.group = "scheduling cycle, cold snapshot"
    rounds = max(20, 2_000_000 // size)
    result = benchmark.pedantic(scheduler.schedule, setup=fresh, rounds=rounds, warmup_rounds=1)
    assert len(result.selected) == size // 100


@pytest.mark.parametrize("size", [pytest.param(1_000, id="1k"), pytest.param(10_000, id="10k")])
def test_bench_python_loop(benchmark: BenchmarkFixture, size: int) -> None:
    fleet, _ = world(size)
    p = bench_placement(size)
    plain = plain_world(fleet, p)
    benchmark.group = "per-cluster python loop"
    selected = benchmark(loop_schedule, p, plain, NOW)
    assert len(selected) == size // 100
