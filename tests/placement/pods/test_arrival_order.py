"""Among pods of one priority, the one that entered the queue first is tried first, then by
name (kube-scheduler's PrioritySort); `scheduler simulate` counts a pod as queued from its
creation, so its input's creation times decide."""

from __future__ import annotations

from datetime import timedelta

import pytest

from placement.pods.scheduler.engine import Engine
from placement.pods.simulator.simulation import pods_by_key, simulate
from tests.placement.pods.test_engine import SCHEDULER, T0, default_profile, make_node, make_pod
from tests.placement.pods.test_queue import drain, info, queue


def test_queue_orders_equal_priority_by_arrival_then_name() -> None:
    q = queue()
    q.add(info("a-late"), T0 + timedelta(seconds=5))
    q.add(info("c-early"), T0 + timedelta(seconds=5), T0)
    q.add(info("b-late"), T0 + timedelta(seconds=5))
    q.add(info("vip", priority=5), T0 + timedelta(seconds=9))
    assert drain(q) == ["vip", "c-early", "a-late", "b-late"]


def test_an_arrival_after_now_is_counted_from_now() -> None:
    q = queue()
    q.add(info("b"), T0, T0 + timedelta(hours=1))  # a creation time ahead of the clock
    q.add(info("a"), T0)
    assert drain(q) == ["a", "b"]


@pytest.mark.parametrize(
    ("early", "late", "winner"),
    [
        pytest.param("b-early", "a-late", "b-early", id="created-first-wins-over-name"),
        pytest.param("a-early", "b-late", "a-early", id="created-first-and-first-by-name"),
    ],
)
def test_simulate_gives_the_last_room_to_the_pod_created_first(
    early: str, late: str, winner: str
) -> None:
    objects = [
        make_node("only", cpu=2),
        make_pod(late, 2, created=T0 + timedelta(minutes=1)),
        make_pod(early, 2, created=T0),
    ]
    result = simulate(
        objects, Engine(default_profile()), T0 + timedelta(minutes=2), scheduler_name=SCHEDULER
    )
    placed = {key: p.spec.node_name for key, p in pods_by_key(result).items()}
    assert placed == {f"default/{early}": "only", f"default/{late}": None}
    assert placed[f"default/{winner}"] == "only"


def test_simulate_orders_equal_creation_times_by_name() -> None:
    objects = [make_node("only", cpu=2), make_pod("b", 2), make_pod("a", 2)]
    result = simulate(objects, Engine(default_profile()), T0, scheduler_name=SCHEDULER)
    assert pods_by_key(result)["default/a"].spec.node_name == "only"
