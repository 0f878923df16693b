"""`ResourceAllocatableCPU` / `ResourceAllocatableMemory`: min-max scaling with Go truncation."""

from __future__ import annotations

import numpy as np
import pytest

from apis.cluster import ManagedCluster
from placement.framework import Cycle
from placement.testing import NOW, cluster, placement, snapshot
from plugins.resource import ResourceAllocatable, _levels


def scored(name: str, clusters: list[ManagedCluster]) -> dict[str, int]:
    fleet = snapshot(clusters)
    result = ResourceAllocatable(name).score(
        Cycle(NOW), placement("apps", "p"), fleet, np.arange(fleet.size)
    )
    # `scored` None: every row asked about has a score (rows are all of them here)
    scored = np.ones(fleet.size, bool) if result.scored is None else result.scored
    return {fleet.names[row]: int(result.scores[row]) for row in np.flatnonzero(scored)}


@pytest.mark.parametrize(
    ("middle", "expected"),
    [
        pytest.param("6", 19, id="ratio-0.6-truncates-to-19"),
        pytest.param("7", 39, id="ratio-0.7-truncates-to-39"),
        pytest.param("5", 0, id="ratio-0.5-is-0"),
        pytest.param("2", -60, id="ratio-0.2-is-minus-60"),
    ],
)
def test_cpu_score_reproduces_go_float_truncation(middle: str, expected: int) -> None:
    scores = scored(
        "ResourceAllocatableCPU",
        [cluster("low", cpu="0"), cluster("mid", cpu=middle), cluster("high", cpu="10")],
    )
    assert scores == {"low": -100, "mid": expected, "high": 100}


def test_memory_ratio_two_thirds_truncates_to_33() -> None:
    scores = scored(
        "ResourceAllocatableMemory",
        [cluster("a", memory="1Gi"), cluster("b", memory="3Gi"), cluster("c", memory="4Gi")],
    )
    assert scores == {"a": -100, "b": 33, "c": 100}


def test_equal_allocatable_gives_every_cluster_full_score() -> None:
    scores = scored("ResourceAllocatableCPU", [cluster("a", cpu="4"), cluster("b", cpu="4000m")])
    assert scores == {"a": 100, "b": 100}


@pytest.mark.parametrize(
    "incomplete",
    [
        pytest.param(cluster("x", allocatable={"cpu": "100"}), id="missing-capacity"),
        pytest.param(cluster("x", capacity={"cpu": "100"}), id="missing-allocatable"),
        pytest.param(cluster("x", memory="100Gi"), id="other-resource-only"),
        pytest.param(cluster("x"), id="no-status"),
    ],
)
def test_clusters_missing_allocatable_or_capacity_get_no_score(incomplete: ManagedCluster) -> None:
    scores = scored(
        "ResourceAllocatableCPU", [cluster("a", cpu="2"), cluster("b", cpu="4"), incomplete]
    )
    # x neither scores nor widens the range
    assert scores == {"a": -100, "b": 100}


def test_no_cluster_with_the_resource_gives_no_scores() -> None:
    assert scored("ResourceAllocatableMemory", [cluster("a", cpu="2")]) == {}


def test_range_is_taken_over_candidates_only() -> None:
    fleet = snapshot([cluster("a", cpu="1"), cluster("b", cpu="2"), cluster("huge", cpu="64")])
    candidates = np.array([0, 1])  # not "huge"
    result = ResourceAllocatable("ResourceAllocatableCPU").score(
        Cycle(NOW), placement("apps", "p"), fleet, candidates
    )
    assert result.scores.tolist() == [-100, 100]


def test_scores_read_from_a_columns_levels_equal_the_candidates_scaled_one_by_one() -> None:
    """A column read by many cycles is scaled once per distinct amount and looked up by code
    (issue 31): every cycle's scores, the first ones and the later ones, are those of scaling
    each candidate's amount with OCM's expression."""
    rng = np.random.default_rng(31)
    amounts = rng.choice([0.25, 1.0, 3.5, 7.0, 8.0, 12.0, 64.0, 1e9], 4_000)
    clusters = [cluster(f"c{i:05d}", cpu=f"{a:g}") for i, a in enumerate(amounts)]
    fleet = snapshot(clusters)
    column = fleet.allocatable["cpu"]
    prioritizer = ResourceAllocatable("ResourceAllocatableCPU")
    for _ in range(40):
        rows = np.sort(rng.choice(fleet.size, int(rng.integers(1, fleet.size)), replace=False))
        got = prioritizer.score(Cycle(NOW), placement("apps", "p"), fleet, rows)
        values = column.take(rows)
        low, high = values.min(), values.max()
        if high == low:
            expected = np.full(rows.size, 100)
        else:
            expected = (((values - low) / (high - low) - 0.5) * 200.0).astype(np.int64)
        assert got.scored is None
        assert got.scores.tolist() == expected.tolist()
    assert _levels(column) is not None  # the later cycles did read the levels
