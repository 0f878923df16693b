"""A placement with two CEL expressions against the same selection written with labels: one
whole scheduling cycle (Predicate, TaintToleration, Balance, Steady, TopN) at 10k and 100k
clusters, cold (no CEL result cached: the label tests answered from the columns, or, written as
one expression, every candidate cluster's object inflated from the index's row and evaluated)
and
warm (the results of the snapshot's stamps are cached, as in a controller's next cycle when
no cluster changed). Issue 18's target: warm CEL within 2x of the label placement.

Run: `pytest perf/test_cel_bench.py --benchmark-enable` (or `python -m perf.test_cel_bench`
for the table alone). With `--benchmark-disable` (CI) each case runs once at 10k and 100k is
skipped. Results: perf/RESULTS.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import cache

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis.placements import Placement
from placement.index import FleetIndex, cluster_row
from placement.scheduler import ScheduleResult
from placement.snapshot import CelInputs, FleetSnapshot
from placement.testing import NOW, placement, predicate, synthetic_fleet
from plugins import default_scheduler

SEED = 20261123
SIZES = [
    pytest.param(10_000, id="10k"),
    pytest.param(100_000, id="100k", marks=pytest.mark.largest),
]
CEL = [
    'managedCluster.metadata.labels["env"] in ["prod", "staging"]',
    'managedCluster.metadata.labels["provider"] != "alibaba"',
]
# The same selection in one expression: no label test, so the interpreter runs it per cluster
# (what every shape but label tests costs on a first evaluation).
CEL_INTERPRETED = [" && ".join(CEL)]


def cel_placement(size: int, expressions: list[str] = CEL) -> Placement:
    return placement(
        "apps", "bench-cel", numberOfClusters=size // 100, predicates=[predicate(cel=expressions)]
    )


def label_placement(size: int) -> Placement:
    expressions = [
        {"key": "env", "operator": "In", "values": ["prod", "staging"]},
        {"key": "provider", "operator": "NotIn", "values": ["alibaba"]},
    ]
    return placement(
        "apps",
        "bench-labels",
        numberOfClusters=size // 100,
        predicates=[predicate(expressions=expressions)],
    )


@cache
def world(size: int) -> FleetSnapshot:
    """The synthetic fleet through a `FleetIndex` fed as the controller feeds it (rows that
    carry each cluster's packed object)."""
    fleet = synthetic_fleet(size, SEED)
    index = FleetIndex()
    for c in fleet.clusters:
        index.upsert_cluster(cluster_row(c))
    for s in fleet.cluster_sets:
        index.upsert_cluster_set(s)
    for b in fleet.bindings:
        index.upsert_binding(b)
    for d in fleet.decisions:
        index.upsert_decision(d)
    for score in fleet.scores:
        index.upsert_score(score)
    return index.snapshot()


def cold(fleet: FleetSnapshot) -> FleetSnapshot:
    """The snapshot with an empty CEL results cache, as for clusters never evaluated before:
    every candidate's object is inflated from its row and evaluated (the stamps stay)."""
    inputs = fleet.cel
    assert inputs is not None
    return replace(fleet, cel=CelInputs(inputs.revisions, inputs.document, inputs.scores, {}))


def schedule(p: Placement, fleet: FleetSnapshot) -> ScheduleResult:
    return default_scheduler().schedule(p, fleet, NOW)


def skip_largest(request: pytest.FixtureRequest, benchmarking: bool) -> None:
    if request.node.get_closest_marker("largest") and not benchmarking:
        pytest.skip("100k clusters only when benchmarking (--benchmark-enable)")


@pytest.mark.parametrize("size", SIZES)
def test_label_placement_warm(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, benchmarking: bool, size: int
) -> None:
    skip_largest(request, benchmarking)
    fleet, p = world(size), label_placement(size)
    schedule(p, fleet)  # the warm state: set masks built
    result = benchmark(schedule, p, fleet)
    assert len(result.selected) == size // 100


@pytest.mark.parametrize("size", SIZES)
def test_cel_placement_warm(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, benchmarking: bool, size: int
) -> None:
    skip_largest(request, benchmarking)
    fleet, p = world(size), cel_placement(size)
    first = schedule(p, fleet)  # fills the CEL cache of this snapshot's stamps
    result = benchmark(schedule, p, fleet)
    assert list(result.selected) == list(first.selected)
    assert list(result.selected) == list(schedule(label_placement(size), fleet).selected)


@pytest.mark.parametrize("size", SIZES)
def test_cel_placement_cold(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, benchmarking: bool, size: int
) -> None:
    skip_largest(request, benchmarking)
    fleet, p = world(size), cel_placement(size)
    schedule(p, fleet)
    result = benchmark.pedantic(
        schedule, setup=lambda: ((p, cold(fleet)), {}), rounds=3 if benchmarking else 1
    )
    assert len(result.selected) == size // 100


def _best(run: Callable[[], object], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - began)
    return best


@pytest.mark.parametrize("size", SIZES)
def test_cel_placement_cold_interpreted(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, benchmarking: bool, size: int
) -> None:
    skip_largest(request, benchmarking)
    fleet, p = world(size), cel_placement(size, CEL_INTERPRETED)
    schedule(p, fleet)
    result = benchmark.pedantic(
        schedule, setup=lambda: ((p, cold(fleet)), {}), rounds=3 if benchmarking else 1
    )
    assert list(result.selected) == list(schedule(cel_placement(size), fleet).selected)


def _once(p: Placement, fleet: FleetSnapshot) -> float:
    began = time.perf_counter()
    schedule(p, fleet)
    return time.perf_counter() - began


def _row(size: int) -> str:
    fleet = world(size)
    labels, cel = label_placement(size), cel_placement(size)
    interpreted = cel_placement(size, CEL_INTERPRETED)
    schedule(labels, fleet)
    cold_ms = min(_once(cel, cold(fleet)) for _ in range(3)) * 1e3
    interpreted_ms = min(_once(interpreted, cold(fleet)) for _ in range(2)) * 1e3
    schedule(cel, fleet)
    label_ms = _best(lambda: schedule(labels, fleet), 20) * 1e3
    warm_ms = _best(lambda: schedule(cel, fleet), 20) * 1e3
    return (
        f"| {size:,} | {label_ms:.2f} ms | {warm_ms:.2f} ms | {cold_ms:.1f} ms "
        f"| {interpreted_ms:.0f} ms | {warm_ms / label_ms:.2f}x |"
    )


def main() -> None:
    """Print the table of perf/RESULTS.md: ms per cycle, best of several."""
    print(
        "| clusters | labels warm | CEL warm | CEL cold (label tests) | CEL cold (interpreter) "
        "| warm CEL / labels |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for size in (1_000, 10_000, 100_000):
        print(_row(size), flush=True)


if __name__ == "__main__":
    main()
