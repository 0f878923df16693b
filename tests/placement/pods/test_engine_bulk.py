"""The bulk paths: `Engine.handle_many` and `NodeTable.bulk()` give the very state and actions of
handling the same events one by one, and the queue's indexed moves match its scans."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.core import Node
from placement.pods.cluster.nodes import NodeSnapshot, NodeTable
from placement.pods.cluster.requests import non_zero_requests, pod_requests
from placement.pods.framework.events import Action, ClusterEvent, NodeEvent, PodEvent
from placement.pods.scheduler.engine import Engine
from tests.placement.pods.test_engine import T0, default_profile, make_node, make_pod
from tests.placement.pods.test_queue import info, queue

FAST = settings(max_examples=60, deadline=None)

# One event: (kind, index, variant). Nodes n0..n3, pods p0..p7; variants pick labels, sizes,
# an extra resource, a taint or cordon, running or pending, so updates really change things.
event_specs = st.lists(
    st.tuples(
        st.sampled_from(["node", "node-delete", "pod", "pod-running", "pod-delete"]),
        st.integers(0, 7),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=30,
)


def node_of(index: int, variant: int) -> Node:
    node = make_node(
        f"n{index % 4}",
        cpu=2 + variant,
        labels={"zone": f"z{variant % 2}", **({"gpu": "yes"} if variant == 3 else {})},
        taints=[{"key": "spot", "effect": "NoSchedule"}] if variant == 2 else None,
        unschedulable=variant == 1,
    )
    if variant == 3:  # a resource no other node has: a new column
        assert node.status is not None and node.status.allocatable is not None
        node = make_node(f"n{index % 4}", cpu=5, labels={"gpu": "yes"})
        doc = node.model_dump(by_alias=True, exclude_none=True)
        doc["status"]["allocatable"]["example.com/gpu"] = 2
        node = Node.model_validate(doc)
    return node


def events_of(specs: Sequence[tuple[str, int, int]]) -> list[ClusterEvent]:
    events: list[ClusterEvent] = []
    for kind, index, variant in specs:
        if kind == "node":
            events.append(NodeEvent("Added", node_of(index, variant)))
        elif kind == "node-delete":
            events.append(NodeEvent("Deleted", node_of(index, variant)))
        else:
            node = f"n{variant}" if kind == "pod-running" else None
            pod = make_pod(f"p{index}", cpu=variant % 3, memory="1Gi", node=node)
            events.append(PodEvent("Deleted" if kind == "pod-delete" else "Added", pod))
    return events


def state(engine: Engine) -> dict[str, Any]:
    return {
        "nodes": snapshot_state(engine.nodes()),
        "queue": engine.queue_sizes(),
        "assumed": dict(engine.assumed()),
        "on": {n: sorted(p.key for p in engine.cluster.pods_on(n)) for n in engine.nodes().names},
    }


def snapshot_state(nodes: NodeSnapshot) -> dict[str, Any]:
    return {
        "names": nodes.names,
        "resources": nodes.resources,
        "allocatable": nodes.allocatable.tolist(),
        "requested": nodes.requested.tolist(),
        "non_zero": nodes.non_zero_requested.tolist(),
        "unschedulable": nodes.unschedulable.tolist(),
        "taints": dict(nodes.taints),
        "labels": {
            key: [column.value_at(row) for row in range(nodes.size)]
            for key, column in nodes.labels.items()
        },
    }


def one_by_one(events: Sequence[ClusterEvent]) -> tuple[Engine, list[Action]]:
    engine = Engine(default_profile())
    actions: list[Action] = []
    for event in events:
        actions += engine.handle(event, T0)
    return engine, actions


@FAST
@given(event_specs, st.integers(1, 8))
def test_handle_many_gives_the_state_and_actions_of_handle_one_by_one(
    specs: Sequence[tuple[str, int, int]], chunk: int
) -> None:
    events = events_of(specs)
    single, expected = one_by_one(events)
    bulk = Engine(default_profile())
    actions: list[Action] = []
    for start in range(0, len(events), chunk):
        actions += bulk.handle_many(events[start : start + chunk], T0)
    assert actions == expected
    assert state(bulk) == state(single)
    # And the cycles that follow decide the same.
    assert bulk.schedule(T0) == single.schedule(T0)
    assert state(bulk) == state(single)


def test_a_snapshot_taken_inside_a_bulk_sees_every_event_so_far() -> None:
    table = NodeTable()
    with table.bulk():
        table.put_node(make_node("b", cpu=4))
        table.put_node(make_node("a", cpu=2))
        pod = make_pod("p", cpu=1, node="a")
        table.add_pod("default/p", "a", pod_requests(pod), non_zero_requests(pod))
        inside = table.snapshot()
        table.remove_node("b")
    after = table.snapshot()
    assert inside.names == ("a", "b")
    assert inside.requested[0, inside.column_of("cpu") or 0] == 1000
    assert after.names == ("a",)
    assert after.requested[0, after.column_of("cpu") or 0] == 1000
    # The snapshot taken inside is immutable: the later removal did not touch it.
    assert inside.size == 2 and not inside.requested.flags.writeable


def test_a_bulk_table_then_takes_single_events_as_before() -> None:
    table = NodeTable.build([make_node("a", cpu=2), make_node("c", cpu=2)])
    before = table.snapshot()
    table.put_node(make_node("b", cpu=8))
    pod = make_pod("p", cpu=1, node="b")
    table.add_pod("default/p", "b", pod_requests(pod), non_zero_requests(pod))
    nodes = table.snapshot()
    cpu = nodes.column_of("cpu") or 0
    assert nodes.names == ("a", "b", "c")
    assert nodes.requested[:, cpu].tolist() == [0, 1000, 0]
    assert nodes.allocatable[:, cpu].tolist() == [2000, 8000, 2000]
    assert before.names == ("a", "c")
    assert np.array_equal(before.requested, np.zeros_like(before.requested))


def test_pods_counted_on_a_node_before_it_arrives_are_summed_by_the_rebuild() -> None:
    table = NodeTable()
    with table.bulk():
        for i in range(3):
            pod = make_pod(f"p{i}", cpu=1, node="late")
            table.add_pod(f"default/p{i}", "late", pod_requests(pod), non_zero_requests(pod))
        table.put_node(make_node("late", cpu=8))
        table.remove_pod("default/p0")
    nodes = table.snapshot()
    assert nodes.requested[0, nodes.column_of("cpu") or 0] == 2000
    assert nodes.requested[0, nodes.column_of("pods") or 0] == 2


def test_flush_moves_only_the_pods_whose_time_came_in_key_order() -> None:
    q = queue(unschedulable_flush=timedelta(minutes=5))
    for name, at in (("b", 0), ("a", 0), ("c", 60)):
        q.add(info(name), T0)
        popped = q.pop()
        assert popped is not None
        q.requeue(popped.info, T0 + timedelta(seconds=at), unschedulable=True)
    assert q.next_wake() == T0 + timedelta(minutes=5)
    q.flush(T0 + timedelta(minutes=5, seconds=30))
    assert q.sizes()["unschedulable"] == 1
    assert [p.info.name for p in q.pods("unschedulable")] == ["c"]
    assert q.next_wake() == T0 + timedelta(minutes=6)


def test_a_pod_moved_by_an_event_leaves_no_flush_time_behind() -> None:
    q = queue(unschedulable_flush=timedelta(minutes=5))
    q.add(info("a"), T0)
    popped = q.pop()
    assert popped is not None
    q.requeue(popped.info, T0, unschedulable=True)
    assert q.move_unschedulable(T0 + timedelta(seconds=20)) == 1
    assert q.next_wake() is None  # its backoff is over; the stale flush entry is ignored


def test_move_rejected_by_moves_only_that_plugins_pods() -> None:
    q = queue()
    for name, plugin in (("a", "Gang"), ("b", "NodeResourcesFit"), ("c", "Gang")):
        q.add(info(name), T0)
        popped = q.pop()
        assert popped is not None
        q.requeue(popped.info, T0, unschedulable=True, rejected_by=(plugin,))
    assert q.move_rejected_by(T0 + timedelta(seconds=30), "Gang") == 2
    assert q.move_rejected_by(T0 + timedelta(seconds=30), "Gang") == 0
    assert [p.info.name for p in q.pods("unschedulable")] == ["b"]
    assert sorted(p.info.name for p in q.pods("active")) == ["a", "c"]
