"""EvenSpread benchmarks: pick 1,000 of 10,000 clusters over 3 and 8 topology levels, and the
vectorized selector against the line-by-line oracle at a size the oracle can finish.

Run: `pytest perf/test_spread_bench.py --benchmark-only`. With `--benchmark-disable` (CI) the
sizes shrink so the file only proves it still runs.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis import ManagedCluster, Placement, parse_as
from placement.framework import Cycle
from placement.snapshot.fleet_snapshot import FleetSnapshot
from plugins.evenspread.evenspread import EvenSpread
from tests.plugins.spread_oracle import Candidate, Term, oracle_select

NOW = datetime(2026, 11, 22, tzinfo=UTC)
LEVEL_KEYS = ["provider", "region", "zone", "rack", "row", "pdu", "switch", "host-group"]


def topology_fleet(
    size: int, levels: int, seed: int = 7
) -> tuple[FleetSnapshot, np.ndarray[Any, Any]]:
    """5 providers x 4 regions each x 5 zones each (100 zones), deeper levels random."""
    rnd = random.Random(seed)
    clusters = []
    for i in range(size):
        provider = i % 5
        region = (i // 5) % 4
        zone = (i // 20) % 5
        values = [f"p{provider}", f"p{provider}-r{region}", f"p{provider}-r{region}-z{zone}"]
        values += [f"v{rnd.randrange(3)}" for _ in range(levels - 3)]
        labels = dict(zip(LEVEL_KEYS[:levels], values[:levels], strict=True))
        clusters.append(
            parse_as(
                ManagedCluster,
                {
                    "apiVersion": "cluster.open-cluster-management.io/v1",
                    "kind": "ManagedCluster",
                    "metadata": {"name": f"cluster-{i:06d}", "labels": labels},
                },
            )
        )
    fleet = FleetSnapshot.build(clusters)
    total = np.asarray([rnd.randrange(-3, 4) * 50 for _ in range(size)], dtype=np.int64)
    return fleet, total


def spread_placement(levels: int, n: int) -> Placement:
    terms = [
        {
            "topologyKey": key,
            "topologyKeyType": "Label",
            "maxSkew": 1,
            "whenUnsatisfiable": "DoNotSchedule" if k == 2 else "ScheduleAnyway",
        }
        for k, key in enumerate(LEVEL_KEYS[:levels])
    ]
    return parse_as(
        Placement,
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": "spread", "namespace": "bench"},
            "spec": {"numberOfClusters": n, "spreadPolicy": {"spreadConstraints": terms}},
        },
    )


def select(fleet: FleetSnapshot, total: np.ndarray[Any, Any], placement: Placement) -> list[int]:
    rows = np.arange(fleet.size)  # every cluster is a candidate: `total` is aligned with them
    selection = EvenSpread().select(Cycle(NOW), placement, fleet, rows, total)
    return [int(r) for r in selection.rows]


def sizes(
    benchmark: BenchmarkFixture, full: tuple[int, int], smoke: tuple[int, int]
) -> tuple[int, int]:
    return smoke if benchmark.disabled else full


@pytest.mark.parametrize("levels", [pytest.param(3, id="3-levels"), pytest.param(8, id="8-levels")])
def test_evenspread_picks_1000_of_10000(benchmark: BenchmarkFixture, levels: int) -> None:
    size, n = sizes(benchmark, (10_000, 1_000), (400, 40))
    fleet, total = topology_fleet(size, levels)
    placement = spread_placement(levels, n)
    picks = benchmark(select, fleet, total, placement)
    assert len(picks) == n


def oracle_inputs(
    fleet: FleetSnapshot, total: np.ndarray[Any, Any], levels: int
) -> list[Candidate]:
    columns = [fleet.label(key) for key in LEVEL_KEYS[:levels]]
    return [
        Candidate(name, int(total[row]), tuple(col.value_at(row) for col in columns))
        for row, name in enumerate(fleet.names)
    ]


EQUAL_SIZE = {"full": (1_000, 100), "smoke": (200, 20)}


def test_evenspread_at_oracle_size(benchmark: BenchmarkFixture) -> None:
    size, n = sizes(benchmark, EQUAL_SIZE["full"], EQUAL_SIZE["smoke"])
    fleet, total = topology_fleet(size, 3)
    picks = benchmark(select, fleet, total, spread_placement(3, n))
    assert len(picks) == n


def test_oracle_at_oracle_size(benchmark: BenchmarkFixture) -> None:
    size, n = sizes(benchmark, EQUAL_SIZE["full"], EQUAL_SIZE["smoke"])
    fleet, total = topology_fleet(size, 3)
    terms = [Term(1, False), Term(1, False), Term(1, True)]
    candidates = oracle_inputs(fleet, total, 3)
    picked = benchmark.pedantic(
        oracle_select, args=(candidates, terms, 2, n), rounds=1, iterations=1
    )
    fast = select(fleet, total, spread_placement(3, n))
    assert picked == fleet.rows_to_names(fast)
