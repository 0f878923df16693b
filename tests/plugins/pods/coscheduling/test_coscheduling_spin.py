"""Issue 27, item 1: a gang that only partly fits must not spin.

Three members of one PodGroup (minMember 3) where one member fits nowhere: before the fix, the
member waiting at Permit activated its siblings out of their backoff, the one that fits nowhere
failed again and PostFilter rejected the waiter, and round it went at one instant, for ever
(`scheduler simulate` never returned). Now each member is tried at most once per backoff
period, whatever the Coscheduling args, and the other pods and gangs are scheduled meanwhile.
The engine runs in `scheduler simulate`'s world on its virtual clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from apis.core import Pod
from placement.pods.scheduler.engine import Engine
from placement.pods.simulator.simulation import pods_by_key, simulate
from tests.placement.pods.test_engine import SCHEDULER, T0, default_profile, make_node, make_pod
from tests.placement.pods.test_gang import gang, member, pod_group
from tests.plugins.pods.gang_harness import Watched, attempts_within

MINUTE = timedelta(minutes=1)
BACKOFF_INITIAL, BACKOFF_MAX = timedelta(seconds=1), timedelta(seconds=10)


def partly_fitting_world() -> list[Any]:
    """`stuck`: a-0 asks for 8 cpus where nodes have 4, a-1 and a-2 fit; its group is the
    oldest, so its members are first in the queue. `pair` (a gang of 2) and `solo` (a plain
    pod) fit beside it."""
    stuck: list[Pod] = [
        member("a-0", "stuck", 8),
        member("a-1", "stuck", 1),
        member("a-2", "stuck", 1),
    ]
    return [
        make_node("n1", cpu=4),
        make_node("n2", cpu=4),
        pod_group("stuck", 3, created=T0),
        pod_group("pair", 2, created=T0 + timedelta(seconds=1)),
        *stuck,
        *gang("pair", 2, cpu=2),
        make_pod("solo", 1),
    ]


@pytest.mark.parametrize(
    "args",
    [
        {},  # the case: no podGroupBackoffSeconds
        {"podGroupBackoffSeconds": 5},
        {"podGroupRejectPercentage": 100},  # never rejected at PostFilter: Permit timeouts
        {"permitWaitingTimeSeconds": 1},
    ],
    ids=["defaults", "group-backoff", "no-reject", "short-permit"],
)
def test_a_partly_fitting_gang_is_tried_at_most_once_per_member_and_backoff(
    args: dict[str, Any],
) -> None:
    profile = default_profile(pluginArgs={"Coscheduling": args})
    engine = Engine(
        profile, backoff_initial=BACKOFF_INITIAL, backoff_max=BACKOFF_MAX, pop_from_backoff=False
    )  # kube <= 1.32's queue; kube >= 1.33's (the default): the test below
    watched = Watched(engine)
    result = simulate(
        partly_fitting_world(), watched, T0, scheduler_name=SCHEDULER, max_time=MINUTE
    )
    assert result.finished <= T0 + MINUTE  # it returned: settled, or at its time limit
    # Each member is tried at most once per backoff period: 9 attempts in a minute (at 0, 1,
    # 3, 7, 15, 25, 35, 45, 55 s), 27 for the gang; before the fix, unbounded at the first
    # instant.
    per_pod = attempts_within(MINUTE, BACKOFF_INITIAL, BACKOFF_MAX)
    assert per_pod == 9
    assert watched.gang_attempts("default/stuck") <= 3 * per_pod
    assert all(watched.attempts[f"default/a-{i}"] <= per_pod for i in range(3))
    assert max(watched.per_instant.values()) <= 6  # the six pending pods, once each
    # Meanwhile the others were scheduled, and the stuck gang never held a node for good.
    pods = pods_by_key(result)
    assert all(pods[f"default/pair-m0{i}"].spec.node_name for i in range(2))
    assert pods["default/solo"].spec.node_name
    assert not any(pods[f"default/a-{i}"].spec.node_name for i in range(3))
    assert watched.partly_bound == []


@pytest.mark.parametrize(
    "args",
    [{}, {"podGroupBackoffSeconds": 5}, {"podGroupRejectPercentage": 100}],
    ids=["defaults", "group-backoff", "no-reject"],
)
def test_popping_from_backoff_tries_a_member_at_most_once_per_instant(
    args: dict[str, Any],
) -> None:
    """With kube's SchedulerPopFromBackoffQ (`pop_from_backoff`) an idle engine takes backoff
    pods early, but never one that failed at the same instant: a member is tried at most once
    per instant the engine runs at, and the engine runs only at its timers (whole seconds in
    this world), not again and again at one."""
    profile = default_profile(pluginArgs={"Coscheduling": args})
    engine = Engine(
        profile, backoff_initial=BACKOFF_INITIAL, backoff_max=BACKOFF_MAX, pop_from_backoff=True
    )
    watched = Watched(engine)
    result = simulate(
        partly_fitting_world(), watched, T0, scheduler_name=SCHEDULER, max_time=MINUTE
    )
    assert result.finished <= T0 + MINUTE
    instants = len(watched.per_instant)
    assert all(t.microsecond == 0 for t in watched.per_instant)
    assert instants <= 61  # at most one per whole second of the minute
    assert all(watched.attempts[f"default/a-{i}"] <= instants for i in range(3))
    assert max(watched.per_instant.values()) <= 6  # the six pending pods, once each
    pods = pods_by_key(result)
    assert pods["default/solo"].spec.node_name
    assert not any(pods[f"default/a-{i}"].spec.node_name for i in range(3))
    assert watched.partly_bound == []


def test_the_cli_simulation_of_a_partly_fitting_gang_returns() -> None:
    """`scheduler simulate` with its defaults (one hour) returns, with the gang's story in the
    report. It settles early: once the member that fits nowhere is rejected by its resources
    and the others by Coscheduling (which freed room does not wake, as in kube), nothing moves
    them until an event comes, and none does."""
    watched = Watched(Engine(default_profile()))
    result = simulate(partly_fitting_world(), watched, T0, scheduler_name=SCHEDULER)
    assert not result.timed_out
    assert result.finished - T0 < timedelta(minutes=1)
    hour = attempts_within(timedelta(hours=1), BACKOFF_INITIAL, BACKOFF_MAX)
    assert watched.gang_attempts("default/stuck") <= 3 * hour
    [line] = [r for r in result.reports if r.startswith("gang default/stuck")]
    assert "minMember 3: 0 bound" in line
