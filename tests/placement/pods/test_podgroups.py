"""The PodGroup status rule: the anchor's state machine (reference §1.6) run to its fixed point,
members counted per namespace, counters and events."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Pod
from placement.pods.podgroups import PodGroupStatusRule, pod_group_status
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
