"""A placement with two CEL expressions against the same selection written with labels: one
whole scheduling cycle (Predicate, TaintToleration, Balance, Steady, TopN) at 10k and 100k
clusters, cold (no CEL result cached: the label tests answered from the columns, or, written
with optional selections, every candidate cluster's object inflated from the index's row and
evaluated) and warm (the results of the snapshot's stamps are cached, as in a controller's
next cycle when no cluster changed). Issue 18's target: warm CEL within 2x of the label
placement.

`python -m perf.test_cel_bench` prints issue 33's table instead: the first evaluation of one
selector of each shape (`SHAPES`, add-on scores included since issue 46) on every cluster of a
fleet whose CEL cache is empty, at 1k, 10k and 100k clusters, with the load average at the
time. Target: ≤ 65 ms at 10k. `--sizes 10000` limits the sizes.

Run: `pytest perf/test_cel_bench.py --benchmark-enable`. With `--benchmark-disable` (CI) each
case runs once at 10k and 100k is skipped. Results: perf/RESULTS.md.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from functools import cache

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis.cluster import ClusterClaim
from apis.placements import Placement
from placement.cel import compile_selector
from placement.index.fleet_index import FleetIndex, cluster_row
from placement.scheduler import ScheduleResult
from placement.selectors import cel_mask
from placement.snapshot.fleet_snapshot import FleetSnapshot
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
# The same selection (every synthetic cluster has both labels) in a form neither the columns
# nor the label-value groups answer, so the interpreter runs it on every cluster's object.
CEL_INTERPRETED = [
    'managedCluster.metadata.?labels.?env.orValue("") in ["prod", "staging"]',
    'managedCluster.metadata.?labels.?provider.orValue("") != "alibaba"',
]
_LABELS = "managedCluster.metadata.labels"
SHAPES = {
    "label tests": CEL,
    "and, or, not of label tests": [
        f'({_LABELS}["env"] in ["prod", "staging"] && !({_LABELS}["provider"] == "alibaba"))'
        ' || managedCluster.metadata.name == "none"'
    ],
    "quantities (cpu, memory)": [
        'quantity(managedCluster.status.allocatable.cpu).compareTo(quantity("64")) >= 0',
        'quantity(managedCluster.status.capacity.memory).isGreaterThan(quantity("256Gi"))',
    ],
    "label values (matches, endsWith)": [
        f'{_LABELS}["zone"].endsWith("a") && {_LABELS}["region"].matches("-r[0-2]$")'
    ],
    "claim (claims-list groups)": [
        'managedCluster.status.clusterClaims.exists(c, c.name == "rack" && c.value == "rack-3")'
    ],
    "annotation (interpreter)": ['managedCluster.metadata.?annotations["a"].orValue("") == ""'],
    "add-on score, one item (projected groups)": [
        'managedCluster.scores("resource-usage-score").exists(s, s.name == "cpuAvailable" && '
        "s.value > 50)"
    ],
    "add-on score, filter(...)[0] and a label (projected groups)": [
        f'{_LABELS}["env"] == "prod" && managedCluster.scores("resource-usage-score")'
        '.filter(s, s.name == "memAvailable")[0].value > 0'
    ],
    "add-on score, whole list (groups of both values)": [
        'managedCluster.scores("resource-usage-score").all(s, s.value > -50)'
    ],
}
"""Issue 33's shapes, each a selector whose first evaluation the table measures."""
UNIQUE_ID_SHAPES = {
    "claim, unique id.k8s.io per cluster (projected on the name)": [
        'managedCluster.status.clusterClaims.exists(c, c.name == "rack" && c.value == "rack-3")'
    ],
    "claim, unique id.k8s.io per cluster (filter(...)[0], projected)": [
        'managedCluster.status.clusterClaims.filter(c, c.name == "rack")[0].value == "rack-3"'
    ],
    "claim, unique id.k8s.io per cluster (name test second: whole lists)": [
        'managedCluster.status.clusterClaims.exists(c, c.value == "rack-3" && c.name == "rack")'
    ],
    "annotation by literal key (groups)": [
        'managedCluster.metadata.annotations["example.com/tier"] == "gold"'
    ],
}
"""Shapes on the fleet whose every cluster also reports its own `id.k8s.io` claim (as the
registration agent does on a real hub: every claims list is distinct) and has two annotations
(`open-cluster-management/created-via`, `example.com/tier`: one of three)."""


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


TIERS = ("gold", "silver", "bronze")


@cache
def world(size: int, unique_ids: bool = False) -> FleetSnapshot:
    """The synthetic fleet through a `FleetIndex` fed as the controller feeds it (rows that
    carry each cluster's packed object); with `unique_ids`, each cluster's claims begin with
    an `id.k8s.io` claim of its own, and it has two annotations."""
    fleet = synthetic_fleet(size, SEED)
    index = FleetIndex()
    for i, c in enumerate(fleet.clusters):
        if unique_ids and c.status is not None:
            claims = [ClusterClaim(name="id.k8s.io", value=f"{i:08x}-5c1e-4b7a-9d3e-{i:012x}")]
            claims += c.status.cluster_claims or []
            status = c.status.model_copy(update={"cluster_claims": claims})
            notes = {
                "open-cluster-management/created-via": "other",
                "example.com/tier": TIERS[i % 3],
            }
            metadata = c.metadata.model_copy(update={"annotations": notes})
            c = c.model_copy(update={"status": status, "metadata": metadata})
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
    return replace(fleet, cel=replace(inputs, cache={}))


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


def _first_evaluation(expressions: list[str], fleet: FleetSnapshot) -> tuple[float, int]:
    """ms of the first evaluation of `expressions` on every cluster, and how many match."""
    selector = compile_selector(expressions)
    fresh = cold(fleet)
    began = time.perf_counter()
    mask = cel_mask(selector, fresh, np.ones(fresh.size, dtype=bool))
    return (time.perf_counter() - began) * 1e3, int(mask.sum())


def main() -> None:
    """Print issue 33's table: ms of the first evaluation per shape (best of 3; 1 for the
    interpreter at 100k), the load average (1 min) before each size's runs."""
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    if "--sizes" in sys.argv:
        sizes = tuple(int(n) for n in sys.argv[sys.argv.index("--sizes") + 1].split(","))
    results: dict[str, list[str]] = {shape: [] for shape in {**SHAPES, **UNIQUE_ID_SHAPES}}
    loads = []
    for size in sizes:
        loads.append(f"{os.getloadavg()[0]:.1f}")
        for shape, expressions in [*SHAPES.items(), *UNIQUE_ID_SHAPES.items()]:
            fleet = world(size, shape in UNIQUE_ID_SHAPES)
            slow = "interpreter" in shape or "whole lists" in shape
            repeat = 1 if size == 100_000 and slow else 3
            runs = [_first_evaluation(expressions, fleet) for _ in range(repeat)]
            ms = min(r[0] for r in runs)
            results[shape].append(f"{ms:,.1f} ms" if ms < 100 else f"{ms:,.0f} ms")
        print(f"{size:,} clusters done", file=sys.stderr, flush=True)
    print("| shape | " + " | ".join(f"{s:,}" for s in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for shape, cells in results.items():
        print(f"| {shape} | " + " | ".join(cells) + " |")
    print("| load average (1 min) | " + " | ".join(loads) + " |")


if __name__ == "__main__":
    main()
