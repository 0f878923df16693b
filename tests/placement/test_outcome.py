"""Conditions and decisions to write: OCM's PlacementSatisfied reasons, the first that applies
(docs/operating.md, 'A placement selects nothing, or fewer clusters than asked'), and
PlacementMisconfigured, and a deliberate difference from OCM: a misconfigured placement keeps
its decisions (docs/replacing-ocm.md, 'Differences from OCM')."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest

from apis.meta import Condition, KubeObject
from apis.placements import PLACEMENT_MISCONFIGURED as MISCONFIGURED
from apis.placements import PLACEMENT_SATISFIED as SATISFIED
from apis.placements import Placement, PlacementStatus
from placement.framework import Code, Status
from placement.outcome import Outcome, outcome, score_note
from placement.scheduler import ScheduleResult
from placement.testing import (
    NOW,
    binding,
    builtin,
    cluster,
    cluster_set,
    placement,
    predicate,
    snapshot,
    toleration,
)
from plugins import default_scheduler

FLEET: list[KubeObject] = [
    cluster("a", labels={"env": "prod"}, cluster_set="prod"),
    cluster("b", labels={"env": "prod"}, cluster_set="prod"),
    cluster_set("prod"),
    cluster_set("empty"),
    binding("apps", "prod"),
    binding("apps", "empty"),
]


def run(
    p: Placement, objects: Sequence[KubeObject] = FLEET, previous: PlacementStatus | None = None
) -> Outcome:
    fleet = snapshot(objects)
    result = default_scheduler().schedule(p, fleet, NOW)
    return outcome(result, fleet, previous, NOW)


def condition(done: Outcome, kind: str) -> tuple[str, str, str]:
    for c in done.placement_status.conditions or []:
        if c.type == kind:
            return c.status, c.reason, c.message
    raise AssertionError(f"no {kind} condition")


@pytest.mark.parametrize(
    ("spec", "objects", "expected"),
    [
        pytest.param(
            {},
            FLEET[:4],
            (
                "False",
                "NoManagedClusterSetBindings",
                "No valid ManagedClusterSetBindings found in placement namespace",
            ),
            id="1-no-valid-bindings",
        ),
        pytest.param(
            {"clusterSets": ["dev", "test"]},
            FLEET,
            (
                "False",
                "NoIntersection",
                "None of ManagedClusterSets [dev,test] is bound to placement namespace",
            ),
            id="2-no-intersection",
        ),
        pytest.param(
            {"clusterSets": ["empty"]},
            FLEET,
            (
                "False",
                "AllManagedClusterSetsEmpty",
                "All ManagedClusterSets [empty] have no member ManagedCluster",
            ),
            id="3-all-sets-empty",
        ),
        pytest.param(
            {"predicates": [predicate({"env": "dev"})]},
            FLEET,
            (
                "False",
                "NoManagedClusterMatched",
                "No ManagedCluster matches any of the cluster predicate",
            ),
            id="5-nothing-matched",
        ),
        pytest.param(
            {"numberOfClusters": 0},
            FLEET,
            (
                "False",
                "NoManagedClusterMatched",
                "No ManagedCluster matches any of the cluster predicate",
            ),
            id="5-number-of-clusters-zero",
        ),
        pytest.param(
            {"numberOfClusters": 2},
            FLEET,
            ("True", "AllDecisionsScheduled", "All cluster decisions scheduled"),
            id="6-all-scheduled",
        ),
        pytest.param(
            {},
            FLEET,
            ("True", "AllDecisionsScheduled", "All cluster decisions scheduled"),
            id="6-number-unset",
        ),
        pytest.param(
            {"numberOfClusters": 5},
            FLEET,
            ("False", "NotAllDecisionsScheduled", "3 cluster decisions unscheduled"),
            id="7-not-all-scheduled",
        ),
    ],
)
def test_placement_satisfied_rows(
    spec: dict[str, Any], objects: list[KubeObject], expected: tuple[str, str, str]
) -> None:
    done = run(placement("apps", "web", **spec), objects)
    assert condition(done, SATISFIED) == expected
    assert condition(done, MISCONFIGURED) == (
        "False",
        "Succeedconfigured",
        "Placement configurations check pass",
    )


def test_empty_sets_condition_lists_every_eligible_set_sorted() -> None:
    objects = [*FLEET, cluster_set("aaa"), binding("apps", "aaa")]
    done = run(placement("apps", "web", clusterSets=["empty", "aaa"]), objects)
    assert (
        condition(done, SATISFIED)[2]
        == "All ManagedClusterSets [aaa,empty] have no member ManagedCluster"
    )


def test_scheduler_error_is_row_4_with_the_error_text() -> None:
    fleet = snapshot(FLEET)
    p = placement("apps", "web")
    result = ScheduleResult(
        placement=p, size=fleet.size, status=Status(Code.ERROR, "disk on fire", "X")
    )
    result.availability = default_scheduler().schedule(p, fleet, NOW).availability
    done = outcome(result, fleet, None, NOW)
    assert condition(done, SATISFIED) == ("False", "NotAllDecisionsScheduled", "disk on fire")
    assert done.paged is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"predicates": [predicate(cel=["1 +"])]},
            "Predicate:compilation failed: ERROR: <input>:1:4: Syntax error: mismatched input "
            "'<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, "
            "NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | 1 +\n | ...^",
            id="cel-does-not-compile",
        ),
        pytest.param(
            {"tolerations": [toleration(None, "Equal")]},
            "TaintToleration:If the key is empty, operator must be Exists.",
            id="bad-toleration",
        ),
        pytest.param(
            {"prioritizerPolicy": {"mode": "Exact", "configurations": [builtin("Foo")]}},
            ":incorrect builtin prioritizer: Foo",
            id="unknown-builtin",
        ),
        pytest.param(
            {"prioritizerPolicy": {"mode": "Both"}},
            ":incorrect prioritizer policy mode: Both",
            id="bad-mode",
        ),
    ],
)
def test_misconfigured_placement_reports_plugin_and_message(
    spec: dict[str, Any], message: str
) -> None:
    done = run(placement("apps", "web", **spec))
    assert condition(done, MISCONFIGURED) == ("True", "Misconfigured", message)
    assert condition(done, SATISFIED)[1] == "NoManagedClusterMatched"
    assert done.paged is None


def test_misconfigured_placement_keeps_previous_decisions_and_only_changes_conditions() -> None:
    good = run(placement("apps", "web"))
    assert good.paged is not None
    previous = good.placement_status
    later = NOW + timedelta(minutes=5)
    p = placement("apps", "web", predicates=[predicate(cel=["1 +"])])
    fleet = snapshot(FLEET)
    done = outcome(default_scheduler().schedule(p, fleet, later), fleet, previous, later)
    assert done.paged is None  # nothing to write: the current PlacementDecisions stay
    assert done.placement_status.number_of_selected_clusters == 2
    assert done.placement_status.decision_groups == previous.decision_groups
    assert condition(done, MISCONFIGURED)[0] == "True"
    assert condition(done, SATISFIED)[1] == "NoManagedClusterMatched"


def test_misconfigured_first_schedule_reports_zero_selected() -> None:
    done = run(placement("apps", "web", predicates=[predicate(cel=["1 +"])]))
    assert done.placement_status.number_of_selected_clusters == 0
    assert done.placement_status.decision_groups == []


def test_satisfied_placement_writes_decisions_and_status() -> None:
    done = run(placement("apps", "web"))
    assert done.paged is not None
    assert done.paged.names == ["web-decision-1"]
    assert done.placement_status.number_of_selected_clusters == 2
    groups = done.placement_status.decision_groups or []
    assert [(g.decision_group_index, g.decisions, g.cluster_count) for g in groups] == [
        (0, ["web-decision-1"], 2)
    ]


def test_transition_time_moves_only_when_status_changes() -> None:
    first = run(placement("apps", "web"))
    later = NOW + timedelta(hours=1)
    fleet = snapshot(FLEET)

    def again(p: Placement) -> list[Condition]:
        result = default_scheduler().schedule(p, fleet, later)
        return (
            outcome(result, fleet, first.placement_status, later).placement_status.conditions or []
        )

    same = {c.type: c.last_transition_time for c in again(placement("apps", "web"))}
    assert same == {SATISFIED: NOW, MISCONFIGURED: NOW}
    changed = {
        c.type: c.last_transition_time for c in again(placement("apps", "web", numberOfClusters=5))
    }
    assert changed == {SATISFIED: later, MISCONFIGURED: NOW}


def test_score_note_lists_every_feasible_cluster_by_name_with_its_total() -> None:
    fleet_objects: list[KubeObject] = [
        cluster("b", cluster_set="prod"),
        cluster("a", cluster_set="prod"),
        cluster("c", labels={"env": "dev"}, cluster_set="prod"),
        cluster_set("prod"),
        binding("apps", "prod"),
    ]
    fleet = snapshot(fleet_objects)
    dev_only = placement("apps", "p", predicates=[predicate(labels={"env": "dev"})])
    result = default_scheduler().schedule(dev_only, fleet, NOW)
    assert score_note(result, fleet) == "c:100 "
    everyone = placement("apps", "q")
    result = default_scheduler().schedule(everyone, fleet, NOW)
    # Balance 100 + Steady 0 for each of the three, in name order.
    assert score_note(result, fleet) == "a:100 b:100 c:100 "


def test_score_note_is_cut_with_dots_before_passing_1000_characters() -> None:
    names = [f"cluster-{i:04d}" for i in range(200)]
    objects: list[KubeObject] = [cluster(n, cluster_set="prod") for n in names]
    objects += [cluster_set("prod"), binding("apps", "prod")]
    fleet = snapshot(objects)
    result = default_scheduler().schedule(placement("apps", "p"), fleet, NOW)
    note = score_note(result, fleet)
    item = "cluster-0000:100 "
    fitting = 1000 // len(item)
    assert note == "".join(f"{n}:100 " for n in names[:fitting]) + "......"
    assert len(note) <= 1000 + len("......")


def test_score_note_is_empty_when_scheduling_stopped_before_scoring() -> None:
    fleet = snapshot(FLEET)
    bad = placement("apps", "p", prioritizer_policy={"mode": "Sideways"})
    result = default_scheduler().schedule(bad, fleet, NOW)
    assert score_note(result, fleet) == ""
