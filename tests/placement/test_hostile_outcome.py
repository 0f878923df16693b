"""Issue 20, items 4-6 below the command line: condition messages cut to metav1.Condition's
limit with the reason kept, a placement name too long for the PlacementDecision label reported
as PlacementMisconfigured (the decisions there are stay), and toleration expiries past the
year 9999 treated as never (no OverflowError, no requeue)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from apis.meta import Condition
from apis.placements import PLACEMENT_MISCONFIGURED as MISCONFIGURED
from apis.placements import PLACEMENT_SATISFIED as SATISFIED
from placement.framework import Code, Cycle
from placement.outcome import (
    MAX_CONDITION_MESSAGE,
    decision_name_problem,
    outcome,
    set_condition,
    truncate_message,
)
from placement.testing import (
    NOW,
    binding,
    cluster,
    cluster_set,
    placement,
    snapshot,
    taint,
    toleration,
)
from plugins import default_scheduler
from plugins.tainttoleration import TaintToleration, tolerance

INT64_MAX = 2**63 - 1
LAST_SECOND = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


# --- item 4 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [0, 10, MAX_CONDITION_MESSAGE - 1, MAX_CONDITION_MESSAGE])
def test_a_message_within_the_limit_is_kept_whole(length: int) -> None:
    assert truncate_message("m" * length) == "m" * length


@pytest.mark.parametrize("length", [MAX_CONDITION_MESSAGE + 1, 40_000, 1_000_000])
def test_a_longer_message_is_cut_to_the_limit_ending_in_dots(length: int) -> None:
    cut = truncate_message("m" * length)
    assert len(cut) == MAX_CONDITION_MESSAGE
    assert cut == "m" * (MAX_CONDITION_MESSAGE - 4) + " ..."


def test_set_condition_cuts_the_message_and_keeps_status_and_reason() -> None:
    (condition,) = set_condition([], MISCONFIGURED, ("True", "Misconfigured", "x" * 50_000), NOW)
    assert (condition.status, condition.reason) == ("True", "Misconfigured")
    assert len(condition.message) == MAX_CONDITION_MESSAGE
    # It is a valid metav1.Condition again (the model refuses a longer message).
    Condition.model_validate(condition.model_dump())
    # Replacing an existing condition cuts as well.
    (again,) = set_condition([condition], MISCONFIGURED, ("True", "Other", "y" * 50_000), NOW)
    assert again.reason == "Other" and len(again.message) == MAX_CONDITION_MESSAGE


# --- item 5 ------------------------------------------------------------------------------------

FLEET = [
    cluster("a", labels={"env": "prod"}, cluster_set="prod"),
    cluster_set("prod"),
    binding("apps", "prod"),
]


@pytest.mark.parametrize(
    ("name", "ok"),
    [("p" * 63, True), ("web.prod.v2", True), ("p" * 64, False), ("a." * 100 + "b", False)],
)
def test_only_a_name_over_63_characters_cannot_label_its_decisions(name: str, ok: bool) -> None:
    assert (decision_name_problem(placement("apps", name)) is None) == ok


def test_a_placement_without_a_name_cannot_name_its_decisions() -> None:
    nameless = placement("apps", "web").model_copy(deep=True)
    nameless.metadata.name = None
    nameless.metadata.generate_name = "web-"
    assert "generateName" in (decision_name_problem(nameless) or "")


def test_a_long_name_is_misconfigured_and_keeps_the_status_it_had() -> None:
    fleet = snapshot(FLEET)
    scheduler = default_scheduler()
    earlier = outcome(scheduler.schedule(placement("apps", "w"), fleet, NOW), fleet, None, NOW)
    previous = earlier.placement_status  # as if written before the name was what it is
    result = scheduler.schedule(placement("apps", "p" * 64), fleet, NOW)
    assert result.status.ok  # scheduling itself went well
    done = outcome(result, fleet, previous, NOW)
    assert done.paged is None  # nothing written that the server would refuse
    assert done.status.code == Code.MISCONFIGURED
    assert done.placement_status.number_of_selected_clusters == 1
    assert done.placement_status.decision_groups == previous.decision_groups
    conditions = {c.type: c for c in done.placement_status.conditions or []}
    assert conditions[MISCONFIGURED].status == "True"
    assert "at most 63 characters" in conditions[MISCONFIGURED].message
    assert conditions[SATISFIED].status == "False"


# --- item 6 ------------------------------------------------------------------------------------


def test_an_expiry_past_the_year_9999_is_for_good() -> None:
    added = snapshot([cluster("a", taints=[taint("k", added=LAST_SECOND)])]).taints[0]
    assert tolerance(added, [toleration("k", "Exists", seconds=100)], False, NOW) == (True, None)
    old = snapshot([cluster("a", taints=[taint("k", added=NOW)])]).taints[0]
    forever = toleration("k", "Exists", seconds=INT64_MAX)
    assert tolerance(old, [forever], False, NOW) == (True, None)
    # A negative int64 extreme has long expired.
    never = toleration("k", "Exists", seconds=-(2**63))
    assert tolerance(old, [never], False, NOW) == (False, None)


@pytest.mark.parametrize(
    ("added", "seconds"),
    [(LAST_SECOND, 100), (NOW - timedelta(hours=1), INT64_MAX), (LAST_SECOND, INT64_MAX)],
)
def test_the_filter_keeps_the_cluster_without_a_requeue(added: datetime, seconds: int) -> None:
    fleet = snapshot([cluster("a", taints=[taint("k", added=added)])])
    web = placement("apps", "w", tolerations=[toleration("k", "Exists", seconds=seconds)])
    result = TaintToleration().filter(Cycle(NOW), web, fleet, np.ones(fleet.size, bool))
    assert result.status.code == Code.SUCCESS
    assert result.mask.tolist() == [True]
    assert result.requeue_at is None


def test_a_whole_schedule_with_extreme_tolerations_selects_the_cluster() -> None:
    objects = [
        cluster("a", labels={"env": "prod"}, cluster_set="prod", taints=[taint("k", added=NOW)]),
        cluster_set("prod"),
        binding("apps", "prod"),
    ]
    fleet = snapshot(objects)
    p = placement("apps", "w", tolerations=[toleration("k", "Exists", seconds=INT64_MAX)])
    result = default_scheduler().schedule(p, fleet, NOW)
    assert result.status.ok, result.status
    assert fleet.rows_to_names(result.selected) == ["a"]
