"""`FleetIndex` per watch event at 10k and 100k clusters: O(changed rows) per event
(docs/architecture.md, 'The hub controller').

(a) one cluster's label changes, then `snapshot()`; (b) one PlacementDecision of 100 entries
changes, then `snapshot()`; (c) a cold start: every object of the fleet upserted one by one,
then one `snapshot()`, against `FleetSnapshot.build` of the same objects; (d) one cluster added
and deleted again, with a snapshot after each (rows move: the batched, vectorized path).

The objects are built outside the timed part, so only the index's work is measured. Run:
`pytest perf/test_index_bench.py --benchmark-enable`. With `--benchmark-disable` (CI) each case
runs once and the 100k size is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis.cluster import ManagedCluster
from apis.meta import KubeObject
from apis.placements import PlacementDecision
from placement.index.fleet_index import FleetIndex
from placement.snapshot.fleet_snapshot import FleetSnapshot
from placement.testing import SyntheticFleet, cluster, decision, synthetic_fleet

SEED = 20261122
SIZES = [
    pytest.param(10_000, id="10k"),
    pytest.param(100_000, id="100k", marks=pytest.mark.largest),
]


@cache
def world(size: int) -> SyntheticFleet:
    return synthetic_fleet(size, SEED, other_placements=20)


def skip_largest_unless_benchmarking(request: pytest.FixtureRequest, benchmarking: bool) -> None:
    if request.node.get_closest_marker("largest") and not benchmarking:
        pytest.skip("100k clusters only when benchmarking (--benchmark-enable)")


def feed(index: FleetIndex, fleet: SyntheticFleet) -> FleetIndex:
    for c in fleet.clusters:
        index.upsert_cluster(c)
    for s in fleet.cluster_sets:
        index.upsert_cluster_set(s)
    for b in fleet.bindings:
        index.upsert_binding(b)
    for d in fleet.decisions:
        index.upsert_decision(d)
    for score in fleet.scores:
        index.upsert_score(score)
    return index


def cold_start(fleet: SyntheticFleet) -> FleetSnapshot:
    return feed(FleetIndex(), fleet).snapshot()


def relabelled(c: ManagedCluster, env: str) -> ManagedCluster:
    labels = {**(c.metadata.labels or {}), "env": env}
    return c.model_copy(update={"metadata": c.metadata.model_copy(update={"labels": labels})})


def alternate(index: FleetIndex, objects: Sequence[KubeObject]) -> Callable[[], FleetSnapshot]:
    """A callable that upserts the next of `objects` (round robin) and takes a snapshot."""
    turn = iter(range(1 << 62))

    def step() -> FleetSnapshot:
        obj = objects[next(turn) % len(objects)]
        if isinstance(obj, ManagedCluster):
            index.upsert_cluster(obj)
        else:
            assert isinstance(obj, PlacementDecision)
            index.upsert_decision(obj)
        return index.snapshot()

    return step


@pytest.mark.parametrize("size", SIZES)
def test_bench_one_label_change(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, benchmarking: bool, size: int
) -> None:
    skip_largest_unless_benchmarking(request, benchmarking)
    fleet = world(size)
    index = feed(FleetIndex(), fleet)
    index.snapshot()
    target = fleet.clusters[size // 2]
    versions = [relabelled(target, "canary"), relabelled(target, "prod")]
    benchmark.group = f"index: one label change + snapshot ({size:,})"
    snap = benchmark(alternate(index, versions))
    row = snap.index[target.name]
    assert snap.labels["env"].value_at(row) in ("canary", "prod")
    assert snap.size == size


@pytest.mark.parametrize("size", SIZES)
def test_bench_one_decision_change(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, benchmarking: bool, size: int
) -> None:
    skip_largest_unless_benchmarking(request, benchmarking)
    fleet = world(size)
    index = feed(FleetIndex(), fleet)
    index.snapshot()
    names = [c.name for c in fleet.clusters]
    versions = [decision(fleet.namespace, "bench", names[k : k + 100]) for k in (0, 50)]
    benchmark.group = f"index: one PlacementDecision + snapshot ({size:,})"
    snap = benchmark(alternate(index, versions))
    assert snap.decisions.rows_of(fleet.namespace, "bench").size == 100


@pytest.mark.parametrize("size", SIZES)
def test_bench_add_and_delete_one_cluster(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, benchmarking: bool, size: int
) -> None:
    skip_largest_unless_benchmarking(request, benchmarking)
    fleet = world(size)
    index = feed(FleetIndex(), fleet)
    index.snapshot()
    newcomer = cluster("gcp-r1b-new", labels={"env": "prod"}, cpu="8")

    def add_and_delete() -> int:
        index.upsert_cluster(newcomer)
        grown = index.snapshot().size
        index.delete_cluster(newcomer.name)
        index.snapshot()
        return grown

    benchmark.group = f"index: add + delete one cluster, two snapshots ({size:,})"
    assert benchmark(add_and_delete) == size + 1
    assert index.snapshot().size == size


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    "how", [pytest.param("index", id="index"), pytest.param("build", id="build")]
)
def test_bench_cold_start(
    benchmark: BenchmarkFixture,
    request: pytest.FixtureRequest,
    benchmarking: bool,
    size: int,
    how: str,
) -> None:
    skip_largest_unless_benchmarking(request, benchmarking)
    fleet = world(size)
    benchmark.group = f"index: cold start ({size:,})"
    if how == "index":
        snap = benchmark.pedantic(cold_start, args=(fleet,), rounds=3, iterations=1)
    else:
        snap = benchmark.pedantic(fleet.snapshot, rounds=3, iterations=1)
    assert snap.size == size
    assert snap.decisions.totals.sum() == sum(
        len(d.status.decisions) for d in fleet.decisions if d.status
    )
