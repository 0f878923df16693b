"""The PodGroup status rule: the anchor's state machine (docs/pod-scheduler.md, 'Status
controller') run to its fixed point, members counted per namespace, counters and events."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from apis.core import Pod
from placement.pods.status.podgroups import PodGroupStatusRule, pod_group_status
from tests.placement.pods.status_world import T0, ListWorld, pod, pod_group

RULE = PodGroupStatusRule()


def gang(n: int, *, phase: str | None = None, node: str | None = None, **kw: Any) -> list[Pod]:
    return [pod(f"m{i}", group="g", phase=phase, node=node, **kw) for i in range(n)]


def phase_of(status: dict[str, Any]) -> str:
    return str(status["phase"])


def test_a_new_group_without_members_is_pending_and_has_no_counters() -> None:
    status, changes = pod_group_status(pod_group("g", 3), [], T0)
    assert status == {"phase": "Pending"}
    assert changes == [("", "Pending")]


def test_enough_members_move_a_new_group_to_scheduling_with_start_time_and_owner() -> None:
    members = [pod(f"m{i}", group="g", owner="spark-job") for i in range(3)]
    status, changes = pod_group_status(pod_group("g", 3), members, T0)
    assert changes == [("", "Pending"), ("Pending", "Scheduling")]
    assert status["occupiedBy"] == "default/spark-job"
    assert status["scheduleStartTime"] == "2026-03-01T12:00:00Z"
    assert (status["scheduled"], status["running"], status["succeeded"], status["failed"]) == (
        0,
        0,
        0,
        0,
    )


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        pytest.param(["Running"] * 3, "Running", id="all-running"),
        pytest.param(["Running", "Running", "Pending"], "Scheduling", id="below-quorum"),
        pytest.param(["Succeeded", "Running", "Running"], "Running", id="some-done"),
        pytest.param(["Failed", "Running", "Running"], "Failed", id="one-failed-at-quorum"),
        pytest.param(["Succeeded"] * 3, "Finished", id="all-succeeded"),
        pytest.param(["Failed", "Running", "Pending"], "Scheduling", id="failed-below-quorum"),
    ],
)
def test_the_phase_follows_the_members_from_scheduling(phases: list[str], expected: str) -> None:
    members = [pod(f"m{i}", group="g", phase=p, node="n1") for i, p in enumerate(phases)]
    group = pod_group("g", 3, status={"phase": "Scheduling"})
    status, _ = pod_group_status(group, members, T0)
    assert phase_of(status) == expected
    assert status["scheduled"] == 3


def test_fewer_members_than_the_quorum_go_back_to_pending() -> None:
    group = pod_group("g", 3, status={"phase": "Running", "running": 3})
    status, changes = pod_group_status(group, gang(2, phase="Running", node="n1"), T0)
    # Back to Pending, then no further step: Pending needs the quorum of members to move on.
    assert phase_of(status) == "Pending"
    assert changes == [("Running", "Pending")]


@pytest.mark.parametrize("final", ["Finished", "Failed"])
def test_final_phases_never_change(final: str) -> None:
    group = pod_group("g", 2, status={"phase": final, "running": 0, "succeeded": 2})
    status, changes = pod_group_status(group, [], T0)
    assert status == {"phase": final, "running": 0, "succeeded": 2}
    assert changes == []


def test_members_of_a_same_named_group_in_another_namespace_do_not_count() -> None:
    world = ListWorld(
        pods=[
            *gang(2, phase="Running", node="n1"),
            *[pod(f"x{i}", "other", group="g", phase="Running", node="n1") for i in range(5)],
        ],
        groups=[pod_group("g", 3, status={"phase": "Scheduling"})],
    )
    outcome = RULE.compute(world.groups[0], world, T0)
    assert outcome.status is not None
    assert outcome.status["phase"] == "Pending"  # 2 members here, not 7


def test_an_unchanged_group_computes_its_own_status_and_no_event() -> None:
    members = gang(3, phase="Running", node="n1")
    first, _ = pod_group_status(pod_group("g", 3), members, T0)
    world = ListWorld(pods=members, groups=[pod_group("g", 3, status=first)])
    outcome = RULE.compute(world.groups[0], world, T0)
    assert outcome.status == first
    assert outcome.events == ()


def test_every_phase_change_is_an_event_and_a_failure_a_warning() -> None:
    members = [pod(f"m{i}", group="g", phase="Failed" if i == 0 else "Running") for i in range(3)]
    world = ListWorld(pods=members, groups=[pod_group("g", 3)])
    outcome = RULE.compute(world.groups[0], world, T0)
    assert [(e.type, e.reason) for e in outcome.events] == [
        ("Normal", "Pending"),
        ("Normal", "Scheduling"),
        ("Warning", "Failed"),
    ]
    assert "3 member pod(s) for minMember 3; 2 running, 0 succeeded, 1 failed" in (
        outcome.events[-1].message
    )


def test_a_pod_concerns_the_group_its_label_names_in_its_namespace_only() -> None:
    objects = {"default/g": pod_group("g", 2)}
    assert list(RULE.affected(pod("a", group="g"), objects)) == ["default/g"]
    assert list(RULE.affected(pod("b", "other", group="g"), objects)) == []
    assert list(RULE.affected(pod("c"), objects)) == []


# --- the 48-hour guard ------------------------------------------------------------------------

HOURS_48 = timedelta(hours=48)


def test_a_waiting_group_asks_to_be_looked_at_again_at_the_48_hour_mark() -> None:
    world = ListWorld(pods=gang(2), groups=[pod_group("g", 3)])
    outcome = RULE.compute(world.groups[0], world, T0 + timedelta(hours=1))
    assert outcome.status is not None and outcome.status["phase"] == "Pending"
    assert outcome.notices == ()
    assert outcome.requeue_at == T0 + HOURS_48  # the group's creation + 48 h


@pytest.mark.parametrize("phase", ["Pending", "Scheduling"])
def test_at_the_mark_a_group_with_no_member_running_gets_the_anchors_timeout_warning(
    phase: str,
) -> None:
    members = gang(3 if phase == "Scheduling" else 1, phase="Pending")
    group = pod_group("g", 3, status={"phase": phase})
    world = ListWorld(pods=members, groups=[group])
    before = RULE.compute(group, world, T0 + HOURS_48 - timedelta(seconds=1))
    assert before.notices == () and before.requeue_at == T0 + HOURS_48
    outcome = RULE.compute(group, world, T0 + HOURS_48)
    assert [(e.type, e.reason, e.message) for e in outcome.notices] == [
        ("Warning", "Timeout", "schedule time longer than 48 hours")
    ]
    assert outcome.requeue_at is None  # nothing more to wait for
    # The warning changes nothing: the phase stays, and no transition event comes with it.
    assert outcome.status is not None and outcome.status["phase"] == phase
    assert outcome.events == ()


def test_the_timeout_notice_stands_while_the_condition_holds_and_goes_when_a_member_runs() -> None:
    group = pod_group("g", 2, status={"phase": "Scheduling"})
    waiting = ListWorld(pods=gang(2), groups=[group])
    later = T0 + HOURS_48 + timedelta(days=3)
    assert [e.reason for e in RULE.compute(group, waiting, later).notices] == ["Timeout"]
    one_running = ListWorld(
        pods=[pod("m0", group="g", phase="Running", node="n1"), pod("m1", group="g")],
        groups=[group],
    )
    outcome = RULE.compute(group, one_running, later)
    assert outcome.notices == () and outcome.requeue_at is None
    assert outcome.status is not None and outcome.status["phase"] == "Scheduling"


def test_a_late_gang_still_becomes_running_after_the_warning() -> None:
    # The anchor freezes the group once its guard holds; here the status follows the members.
    group = pod_group("g", 2, status={"phase": "Scheduling", "running": 0})
    world = ListWorld(pods=gang(2, phase="Running", node="n1"), groups=[group])
    outcome = RULE.compute(group, world, T0 + HOURS_48 + timedelta(hours=5))
    assert outcome.status is not None and outcome.status["phase"] == "Running"
    assert outcome.notices == ()
    assert [e.reason for e in outcome.events] == ["Running"]


@pytest.mark.parametrize("final", ["Running", "Finished", "Failed"])
def test_no_guard_past_waiting(final: str) -> None:
    phases = {"Running": "Running", "Finished": "Succeeded", "Failed": "Failed"}
    members = gang(2, phase=phases[final], node="n1")
    group = pod_group("g", 2, status={"phase": final})
    outcome = RULE.compute(group, ListWorld(pods=members, groups=[group]), T0 + 2 * HOURS_48)
    assert outcome.notices == () and outcome.requeue_at is None
