"""The simulator's world, driven by a scripted stand-in engine: what a bind, a preemption, a
status patch and an event do to the world, the virtual clock, and order independence. (The
real engine on the samples: test_simulation.py.)"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apis.core import Node, Pod
from apis.meta import KubeObject
from placement.pods.framework.events import (
    Action,
    BindPod,
    BindResult,
    ClusterEvent,
    DeletePod,
    EmitEvent,
    NodeEvent,
    PatchPodStatus,
    PodCondition,
    PodEvent,
)
from placement.pods.framework.interface import pod_key
from placement.pods.simulator.simulation import (
    DISRUPTION_TARGET,
    SimulationError,
    SimulationResult,
    simulate,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
ME = "ocm-pod-scheduler"
# The victim's condition as the stand-in engine decides it (words of its own: the world has none).
MARK = PodCondition(DISRUPTION_TARGET, "True", "PreemptionByScheduler", "the engine's words")


class SlotEngine:
    """Each node takes `status.allocatable.pods` pods; pods are tried in key order. A pod
    labelled `preempt: "yes"` that fits nowhere deletes the first bound pod labelled
    `victim: "yes"` and waits for it to go. Records what it was fed."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}
        self.bound: dict[str, str] = {}  # key -> node
        self.uids: dict[str, str] = {}
        self.labels: dict[str, dict[str, str]] = {}
        self.pending: dict[str, Pod] = {}
        self.dirty = True
        self.waiting_for_victim: set[str] = set()
        self.fed: list[ClusterEvent] = []

    def handle(self, event: ClusterEvent, now: datetime) -> list[Action]:
        self.fed.append(event)
        if isinstance(event, NodeEvent):
            allocatable = event.node.status.allocatable if event.node.status else None
            self.slots[event.node.name] = int(str((allocatable or {}).get("pods", "0")))
            self.dirty = True
        elif isinstance(event, PodEvent):
            pod = event.pod
            key = pod_key(pod.metadata.namespace, pod.metadata.name)
            self.uids[key] = pod.metadata.uid or ""
            self.labels[key] = dict(pod.metadata.labels or {})
            if event.type == "Deleted":
                self.bound.pop(key, None)
                self.pending.pop(key, None)
                self.waiting_for_victim.clear()
                self.dirty = True
            elif pod.spec.node_name:
                self.bound[key] = pod.spec.node_name
                self.pending.pop(key, None)
            elif pod.spec.scheduler_name == ME and key not in self.bound:
                if key not in self.pending:
                    self.dirty = True
                self.pending[key] = pod
        elif isinstance(event, BindResult) and event.ok:
            self.bound[event.key] = event.node
        return []

    def _free(self, node: str) -> int:
        return self.slots[node] - sum(1 for n in self.bound.values() if n == node)

    def schedule(self, now: datetime, limit: int | None = None) -> list[Action]:
        if not self.dirty:
            return []
        self.dirty = False
        actions: list[Action] = []
        for key in sorted(self.pending):
            pod = self.pending[key]
            uid = pod.metadata.uid or ""
            node = next((n for n in sorted(self.slots) if self._free(n) > 0), None)
            if node is not None:
                self.bound[key] = node  # assumed
                del self.pending[key]
                actions.append(BindPod(key, uid, node))
                actions.append(EmitEvent(("Pod", key, uid), "Normal", "Scheduled", f"to {node}"))
                continue
            message = f"0/{len(self.slots)} nodes are available: {len(self.slots)} Too many pods."
            condition = {"status": "False", "reason": "Unschedulable", "message": message}
            victims = [
                k for k in sorted(self.bound) if self.labels.get(k, {}).get("victim") == "yes"
            ]
            if pod.metadata.labels and pod.metadata.labels.get("preempt") == "yes" and victims:
                if key not in self.waiting_for_victim:
                    self.waiting_for_victim.add(key)
                    victim = victims[0]
                    actions.append(DeletePod(victim, self.uids[victim], "preempted", MARK, key))
                    actions.append(PatchPodStatus(key, uid, condition, self.bound[victim]))
                continue
            actions.append(PatchPodStatus(key, uid, condition))
            actions.append(EmitEvent(("Pod", key, uid), "Warning", "FailedScheduling", message))
        return actions

    def next_wake(self) -> datetime | None:
        return None

    def queue_sizes(self) -> dict[str, int]:
        return {"active": 0, "backoff": 0, "unschedulable": len(self.pending), "gated": 0}


def node(name: str, pods: int) -> Node:
    return Node.model_validate(
        {"metadata": {"name": name}, "status": {"allocatable": {"pods": str(pods)}}}
    )


def pod(name: str, **extra: Any) -> Pod:
    labels = extra.pop("labels", None)
    spec = {"schedulerName": ME, "containers": [{"name": "c"}], **extra}
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if labels:
        meta["labels"] = labels
    return Pod.model_validate({"metadata": meta, "spec": spec})


def run(objects: list[KubeObject], engine: SlotEngine | None = None) -> SimulationResult:
    return simulate(objects, engine or SlotEngine(), NOW, scheduler_name=ME)


def by_name(result: SimulationResult) -> dict[str, Pod]:
    return {p.name: p for p in result.pods}


def test_a_bound_pod_gets_its_node_the_scheduled_condition_and_runs() -> None:
    result = run([node("n1", 1), pod("a")])
    (bound,) = result.pods
    assert bound.spec.node_name == "n1"
    assert bound.status is not None and bound.status.phase == "Running"
    (condition,) = bound.status.conditions or []
    assert condition["type"] == "PodScheduled" and condition["status"] == "True"
    assert condition["lastTransitionTime"] == "2026-01-01T12:00:00Z"
    assert bound.metadata.uid and bound.metadata.creation_timestamp == NOW
    assert [
        (e.reason, e.involved_object.name if e.involved_object else "") for e in result.events
    ] == [("Scheduled", "a")]
    assert result.finished == NOW and not result.timed_out


def test_the_engine_hears_the_bind_result_then_the_bound_pod() -> None:
    engine = SlotEngine()
    run([node("n1", 1), pod("a")], engine)
    tail = engine.fed[-2:]
    assert isinstance(tail[0], BindResult) and tail[0].ok and tail[0].node == "n1"
    assert isinstance(tail[1], PodEvent) and tail[1].pod.spec.node_name == "n1"


def test_an_unschedulable_pod_keeps_the_condition_and_the_failure_event() -> None:
    result = run([node("n1", 1), pod("a"), pod("b")])
    pending = by_name(result)["b"]
    assert not pending.spec.node_name
    assert pending.status is not None and pending.status.phase == "Pending"
    (condition,) = pending.status.conditions or []
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert condition["message"] == "0/1 nodes are available: 1 Too many pods."
    failed = [e for e in result.events if e.reason == "FailedScheduling"]
    assert [(e.type, e.count, e.message) for e in failed] == [
        ("Warning", 1, "0/1 nodes are available: 1 Too many pods.")
    ]


def test_a_victim_terminates_for_its_grace_period_then_the_preemptor_binds() -> None:
    victim = pod("low", nodeName="n1", terminationGracePeriodSeconds=20, labels={"victim": "yes"})
    result = run([node("n1", 1), victim, pod("high", labels={"preempt": "yes"})])
    assert [p.name for p in result.pods] == ["high"]
    assert result.pods[0].spec.node_name == "n1"
    assert result.pods[0].status is not None
    assert result.pods[0].status.nominated_node_name == "n1"
    (gone,) = result.evicted
    assert gone.name == "low"
    assert gone.metadata.deletion_timestamp == NOW
    assert gone.metadata.deletion_grace_period_seconds == 20
    disruption = (
        [c for c in (gone.status.conditions or []) if c["type"] == DISRUPTION_TARGET]
        if gone.status
        else []
    )
    assert disruption == [
        {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "the engine's words",  # exactly the engine's: no preemptor appended
            "lastProbeTime": None,
            "lastTransitionTime": "2026-01-01T12:00:00Z",
        }
    ]
    assert result.finished == NOW + timedelta(seconds=20)


def test_a_victim_without_grace_period_waits_thirty_seconds() -> None:
    victim = pod("low", nodeName="n1", labels={"victim": "yes"})
    result = run([node("n1", 1), victim, pod("high", labels={"preempt": "yes"})])
    assert result.finished == NOW + timedelta(seconds=30)


def test_a_pod_of_another_scheduler_is_left_alone_and_defaulted() -> None:
    other = Pod.model_validate(
        {"metadata": {"name": "x", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}}
    )
    result = run([node("n1", 1), other])
    (left,) = result.pods
    assert left.spec.scheduler_name == "default-scheduler" and not left.spec.node_name


def test_limits_become_requests_as_the_api_server_defaults_them() -> None:
    engine = SlotEngine()
    gpu = pod(
        "gpu",
        containers=[
            {
                "name": "c",
                "resources": {
                    "requests": {"cpu": "1"},
                    "limits": {"nvidia.com/gpu": "1", "cpu": "2"},
                },
            }
        ],
    )
    result = run([node("n1", 1), gpu], engine)
    resources = result.pods[0].to_wire()["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "1", "nvidia.com/gpu": "1"}


def test_the_result_does_not_depend_on_the_input_order() -> None:
    objects: list[KubeObject] = [node(f"n{i}", 2) for i in range(3)]
    objects += [pod(f"p{i:02}") for i in range(9)]
    expected = run(list(objects))
    for seed in range(5):
        shuffled = list(objects)
        random.Random(seed).shuffle(shuffled)
        got = run(shuffled)
        assert [p.to_wire() for p in got.pods] == [p.to_wire() for p in expected.pods]
        assert [e.to_wire() for e in got.events] == [e.to_wire() for e in expected.events]


def test_two_objects_with_one_name_are_refused() -> None:
    with pytest.raises(SimulationError, match="Pod ns/a: defined twice"):
        run([node("n1", 1), pod("a"), pod("a")])


def test_an_engine_that_never_settles_is_stopped() -> None:
    class Restless(SlotEngine):
        def schedule(self, now: datetime, limit: int | None = None) -> list[Action]:
            # Always binds a pod that is gone: a conflict the world reports, forever.
            return [BindPod("ns/ghost", "uid", "n1")]

    with pytest.raises(SimulationError, match="kept acting"):
        run([node("n1", 1), pod("a")], Restless())
