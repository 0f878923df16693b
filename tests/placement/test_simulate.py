"""Offline simulation: placements in namespace/name order, each seeing earlier decisions."""

from __future__ import annotations

from collections.abc import Sequence

from apis.meta import KubeObject
from apis.placements import DISABLE_ANNOTATION, PlacementDecision
from placement.simulate import simulate
from placement.testing import NOW, cluster, decision, global_set, placement, predicate
from plugins import default_scheduler


def chosen(decisions: tuple[PlacementDecision, ...]) -> list[str]:
    return [d.cluster_name for pd in decisions if pd.status for d in pd.status.decisions]


def test_later_placements_see_earlier_decisions_through_balance() -> None:
    objects: list[KubeObject] = [
        cluster("a"),
        cluster("b"),
        *global_set("apps"),
        placement("apps", "second", numberOfClusters=1),
        placement("apps", "first", numberOfClusters=1),
    ]
    first, second = simulate(objects, default_scheduler(), NOW)
    assert (first.placement.name, chosen(first.decisions)) == ("first", ["a"])
    # Balance now prefers b, which carries no decision
    assert (second.placement.name, chosen(second.decisions)) == ("second", ["b"])


def test_input_decisions_are_replaced_by_computed_ones() -> None:
    objects: list[KubeObject] = [
        cluster("a"),
        cluster("b"),
        *global_set("apps"),
        placement("apps", "web", numberOfClusters=1),
        decision("apps", "web", ["b"]),
    ]
    (item,) = simulate(objects, default_scheduler(), NOW)
    # Steady keeps b
    assert chosen(item.decisions) == ["b"]
    assert item.placement.status is not None
    assert item.placement.status.number_of_selected_clusters == 1


def test_disabled_placement_is_skipped_with_its_decisions() -> None:
    web = placement("apps", "web")
    web.metadata.annotations = {DISABLE_ANNOTATION: "true"}
    objects: list[KubeObject] = [
        cluster("a"),
        *global_set("apps"),
        web,
        decision("apps", "web", ["x"]),
    ]
    (item,) = simulate(objects, default_scheduler(), NOW)
    assert item.outcome is None
    assert chosen(item.decisions) == ["x"]


def test_misconfigured_placement_keeps_its_input_decisions() -> None:
    objects: list[KubeObject] = [
        cluster("a"),
        *global_set("apps"),
        placement("apps", "web", predicates=[predicate(cel=["true"])]),
        decision("apps", "web", ["a"]),
    ]
    (item,) = simulate(objects, default_scheduler(), NOW)
    assert chosen(item.decisions) == ["a"]


def test_a_cluster_given_twice_is_its_last_definition_not_a_crash() -> None:
    objects: list[KubeObject] = [
        cluster("a", labels={"env": "dev"}),
        cluster("b", labels={"env": "prod"}),
        cluster("a", labels={"env": "prod"}),
        *global_set("ns"),
        placement("ns", "p", predicates=[predicate(labels={"env": "prod"})]),
        placement("ns", "p", predicates=[predicate(labels={"env": "prod"})]),
    ]
    (item,) = simulate(objects, default_scheduler(), NOW)
    assert item.outcome is not None
    status = item.outcome.placement_status
    assert status.number_of_selected_clusters == 2
    assert status.conditions is not None
    assert status.conditions[0].reason == "AllDecisionsScheduled"
    assert _decided(item.decisions) == ["a", "b"]


def test_decisions_naming_a_cluster_twice_are_counted_once_per_entry() -> None:
    objects: list[KubeObject] = [
        cluster("a"),
        cluster("b"),
        *global_set("ns"),
        decision("ns", "old", ["a", "a", "gone"]),
        placement("ns", "p", numberOfClusters=1),
    ]
    (item,) = simulate(objects, default_scheduler(), NOW)
    assert item.outcome is not None
    assert item.outcome.placement_status.number_of_selected_clusters == 1
    # Balance sees `a` decided twice by another placement: `b` is preferred
    assert _decided(item.decisions) == ["b"]


def _decided(decisions: Sequence[PlacementDecision]) -> list[str]:
    return [d.cluster_name for pd in decisions if pd.status for d in pd.status.decisions]
