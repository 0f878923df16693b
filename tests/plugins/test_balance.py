"""`Balance`: OCM's decision-count score, with Go's truncation toward zero."""

from __future__ import annotations

import numpy as np
import pytest

from apis.meta import KubeObject
from placement.framework import Cycle
from placement.snapshot import FleetSnapshot
from placement.testing import NOW, cluster, decision, placement, snapshot
from plugins.balance import Balance

WEB = placement("apps", "web")


def balance_scores(fleet: FleetSnapshot) -> dict[str, int]:
    candidates = np.ones(fleet.size, dtype=bool)
    result = Balance().score(Cycle(NOW), WEB, fleet, candidates)
    return dict(zip(fleet.names, result.scores.tolist(), strict=True))


def test_balance_gives_full_score_when_no_cluster_has_decisions() -> None:
    fleet = snapshot([cluster("a"), cluster("b")])
    assert balance_scores(fleet) == {"a": 100, "b": 100}


def test_balance_gives_lowest_score_to_busiest_cluster() -> None:
    fleet = snapshot(
        [
            cluster("a"),
            cluster("b"),
            cluster("c"),
            cluster("d"),
            decision("apps", "one", ["a", "b", "c"]),
            decision("apps", "two", ["b", "c"]),
            decision("other", "three", ["b"]),
        ]
    )
    # counts a=1, b=3 (max), c=2, d=0: usage 1/3 -> 2*int(16.67)=32, 2/3 -> 2*int(-16.67)=-32
    assert balance_scores(fleet) == {"a": 32, "b": -100, "c": -32, "d": 100}


@pytest.mark.parametrize(
    ("count", "maximum", "expected"),
    [
        pytest.param(1, 3, 32, id="one-third-truncates-to-32"),
        pytest.param(2, 3, -32, id="two-thirds-truncates-to-minus-32"),
        pytest.param(1, 2, 0, id="half-is-zero"),
        pytest.param(3, 3, -100, id="busiest-is-minus-100"),
        pytest.param(1, 7, 2 * 35, id="one-seventh-is-even"),
    ],
)
def test_balance_truncates_toward_zero_then_doubles(
    count: int, maximum: int, expected: int
) -> None:
    objects: list[KubeObject] = [cluster("a"), cluster("busy")]
    objects += [decision("apps", f"p{i}", ["a"]) for i in range(count)]
    objects += [decision("apps", f"q{i}", ["busy"]) for i in range(maximum)]
    assert balance_scores(snapshot(objects))["a"] == expected


def test_balance_ignores_this_placements_own_decisions() -> None:
    fleet = snapshot(
        [
            cluster("a"),
            cluster("b"),
            decision("apps", "web", ["a", "a"]),
            decision("apps", "other", ["b"]),
        ]
    )
    assert balance_scores(fleet) == {"a": 100, "b": -100}


def test_balance_counts_a_same_named_placement_in_another_namespace() -> None:
    fleet = snapshot([cluster("a"), cluster("b"), decision("elsewhere", "web", ["a"])])
    assert balance_scores(fleet) == {"a": -100, "b": 100}


def test_balance_counts_decisions_without_placement_label() -> None:
    orphan = decision("apps", "orphan", ["a"])
    orphan.metadata.labels = None
    fleet = snapshot([cluster("a"), cluster("b"), orphan])
    assert balance_scores(fleet) == {"a": -100, "b": 100}


def test_balance_maximum_includes_clusters_outside_the_fleet() -> None:
    fleet = snapshot(
        [cluster("a"), decision("apps", "x", ["a", "gone"]), decision("apps", "y", ["gone"])]
    )
    # a=1, gone=2 (max): usage 1/2 -> 0
    assert balance_scores(fleet) == {"a": 0}
