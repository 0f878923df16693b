"""`Balance`: OCM's decision-count score, with Go's truncation toward zero."""

from __future__ import annotations

import numpy as np
import pytest

from apis.meta import KubeObject
from placement.framework import Cycle
from placement.snapshot.fleet_snapshot import FleetSnapshot
from placement.testing import NOW, cluster, decision, placement, snapshot
from plugins.balance import Balance

WEB = placement("apps", "web")


def balance_scores(fleet: FleetSnapshot) -> dict[str, int]:
    result = Balance().score(Cycle(NOW), WEB, fleet, np.arange(fleet.size))
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


def _reference(counts: dict[str, int], own: list[str]) -> dict[str, int]:
    """OCM's Balance written out: own decisions off each count and off the maximum."""
    mine = {name: counts[name] - own.count(name) for name in counts}
    top = max(mine.values())
    return {
        name: 100 if top <= 0 else 2 * int(100 * (0.5 - count / float(top)))
        for name, count in mine.items()
    }


@pytest.mark.parametrize(
    ("others", "own"),
    [
        pytest.param({"a": 3, "b": 4, "c": 1}, ["b"], id="ours-is-the-only-busiest"),
        pytest.param({"a": 4, "b": 4, "c": 1}, ["a", "b"], id="ours-are-all-the-busiest"),
        pytest.param({"a": 3, "b": 4, "c": 1}, ["a"], id="ours-is-one-of-two-busiest"),
        pytest.param({"a": 3, "b": 4, "c": 1}, ["c"], id="ours-is-not-the-busiest"),
        pytest.param({"a": 3, "b": 4, "c": 1}, ["b", "b"], id="ours-twice-mid-move"),
    ],
)
def test_balance_matches_the_written_out_formula_whoever_is_busiest(
    others: dict[str, int], own: list[str]
) -> None:
    # The scores per row are computed once per decision table and only our own rows adjusted
    # (the maximum lowered when every busiest cluster is ours): every case must come out as
    # the formula says.
    objects: list[KubeObject] = [cluster(name) for name in [*others, "d"]]
    for name, count in others.items():
        objects += [decision("apps", f"p-{name}-{i}", [name]) for i in range(count)]
    objects.append(decision("apps", "web", own))
    fleet = snapshot(objects)
    counts = {name: others.get(name, 0) + own.count(name) for name in [*others, "d"]}
    expected = _reference(counts, own)
    assert balance_scores(fleet) == expected
    assert balance_scores(fleet) == expected  # again, from the table's cached scores
