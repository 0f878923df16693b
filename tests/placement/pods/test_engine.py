"""The pod engine on an injected clock: binding and assumed pods, backoff, requeue on cluster
events, Permit waits, gated pods, nominated nodes, messages, and plugin errors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from apis.core import Node, Pod
from apis.meta import KubeObject
from apis.scheduling import PriorityClass
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.config.scheduler_config import build_profile, load_config
from placement.pods.framework.events import (
    Action,
    BindPod,
    BindResult,
    DeletePod,
    EmitEvent,
    EventType,
    NodeEvent,
    ObjectEvent,
    PatchPodStatus,
    PodEvent,
    WakeAt,
)
from placement.pods.framework.interface import (
    FilterResult,
    PermitResult,
    PodCode,
    PodCycle,
    PodInfo,
    PodStatus,
    Profile,
    Reason,
)
from placement.pods.scheduler.engine import Engine, go_duration
from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS
from plugins.pods.defaultpreemption.default_preemption import DefaultPreemption

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCHEDULER = "ocm-pod-scheduler"


def seconds(n: float) -> timedelta:
    return timedelta(seconds=n)


# The registry lists DefaultPreemption once plugins/pods/__init__.py imports it; until then the
# tests add it themselves, at the end of the defaults as kube-scheduler has it.
REGISTRY = {"DefaultPreemption": DefaultPreemption.from_args, **POD_PLUGINS}
DEFAULTS = (*(n for n in DEFAULT_PLUGINS if n != "DefaultPreemption"), "DefaultPreemption")


def default_profile(**overrides: Any) -> Profile:
    doc: dict[str, Any] = {"schedulerName": SCHEDULER, **overrides}
    return build_profile(
        load_config(doc),
        REGISTRY,
        defaults=DEFAULTS,
        default_weights=DEFAULT_SCORE_WEIGHTS,
    )


def make_node(
    name: str,
    cpu: str | int = 4,
    memory: str = "16Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or [], "unschedulable": unschedulable},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
        }
    )


def make_pod(
    name: str,
    cpu: str | int = 1,
    *,
    memory: str | None = None,
    priority: int | None = None,
    node: str | None = None,
    namespace: str = "default",
    uid: str | None = None,
    scheduler: str = SCHEDULER,
    created: datetime = T0,
    **spec: Any,
) -> Pod:
    requests: dict[str, Any] = {"cpu": cpu}
    if memory is not None:
        requests["memory"] = memory
    body: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "resources": {"requests": requests}}],
        **spec,
    }
    if priority is not None:
        body["priority"] = priority
    if node is not None:
        body["nodeName"] = node
    return Pod.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid or f"uid-{name}",
                "creationTimestamp": created.isoformat(),
            },
            "spec": body,
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def bound(pod: Pod, node: str) -> Pod:
    return pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": node})})


def with_status(pod: Pod, **status: Any) -> Pod:
    base = pod.status.model_dump(by_alias=True, exclude_none=True) if pod.status else {}
    new = type(pod.status).model_validate({**base, **status}) if pod.status else None
    return pod.model_copy(update={"status": new})


def terminating(pod: Pod, at: datetime = T0) -> Pod:
    meta = pod.metadata.model_copy(update={"deletion_timestamp": at})
    return pod.model_copy(update={"metadata": meta})


def of(actions: Iterable[Action], kind: type) -> list[Any]:
    return [a for a in actions if isinstance(a, kind)]


def binds(actions: Iterable[Action]) -> dict[str, str]:
    return {a.key: a.node for a in of(actions, BindPod)}


@dataclass
class World:
    """A tiny in-memory cluster around an engine: binds succeed and show up as pod events,
    deletes remove the pod, everything on an injected clock."""

    engine: Engine
    now: datetime = T0
    pods: dict[str, Pod] = field(default_factory=dict)
    log: list[Action] = field(default_factory=list)
    fail_binds: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, profile: Profile | None = None, **options: Any) -> World:
        return cls(Engine(profile or default_profile(), **options))

    def add_nodes(self, *nodes: Node) -> list[Action]:
        out: list[Action] = []
        for node in nodes:
            out += self.engine.handle(NodeEvent("Added", node), self.now)
        return out

    def add_pods(self, *pods: Pod) -> list[Action]:
        out: list[Action] = []
        for pod in pods:
            key = f"{pod.metadata.namespace}/{pod.metadata.name}"
            kind: EventType = "Modified" if key in self.pods else "Added"
            self.pods[key] = pod
            out += self.engine.handle(PodEvent(kind, pod), self.now)
        return out

    def delete(self, key: str) -> list[Action]:
        pod = self.pods.pop(key)
        return self.engine.handle(PodEvent("Deleted", pod), self.now)

    def apply(self, actions: Sequence[Action]) -> list[Action]:
        """Carry out the actions as an API server would; returns what the engine said."""
        out: list[Action] = []
        for action in actions:
            self.log.append(action)
            if isinstance(action, BindPod):
                pod = self.pods[action.key]
                ok = action.key not in self.fail_binds
                result = BindResult(action.key, action.uid, action.node, ok=ok, message="boom")
                out += self.engine.handle(result, self.now)
                if ok:
                    self.pods[action.key] = bound(pod, action.node)
                    out += self.engine.handle(PodEvent("Modified", self.pods[action.key]), self.now)
            elif isinstance(action, DeletePod):
                if action.key in self.pods:
                    out += self.delete(action.key)
            elif isinstance(action, PatchPodStatus) and action.key in self.pods:
                pod = self.pods[action.key]
                status: dict[str, Any] = {}
                if action.condition is not None:
                    status["conditions"] = [action.condition]
                if action.nominated_node is not None:
                    status["nominatedNodeName"] = action.nominated_node or None
                self.pods[action.key] = with_status(pod, **status)
                out += self.engine.handle(PodEvent("Modified", self.pods[action.key]), self.now)
        self.log += out
        return out

    def step(self, limit: int | None = None) -> list[Action]:
        actions = self.engine.schedule(self.now, limit)
        return actions + self.apply(actions)

    def run(self, until: datetime | None = None, steps: int = 50) -> list[Action]:
        """Schedule, apply, and follow WakeAt timers up to `until`."""
        out: list[Action] = []
        for _ in range(steps):
            actions = self.step()
            out += actions
            wake = self.engine.next_wake()
            if any(isinstance(a, BindPod | DeletePod) for a in actions):
                continue
            if wake is None or until is None or wake > until:
                break
            self.now = max(self.now, wake)
        return out

    def node_of(self, key: str) -> str | None:
        pod = self.pods.get(key)
        return pod.spec.node_name if pod else None


# --- basics ----------------------------------------------------------------------------------


def test_pods_are_bound_spread_by_least_allocated_and_reported_scheduled() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=2), make_node("b", cpu=2))
    world.add_pods(make_pod("p1"), make_pod("p2"))
    actions = world.step()
    assert binds(actions) == {"default/p1": "a", "default/p2": "b"}
    events = [a for a in of(actions, EmitEvent) if a.reason == "Scheduled"]
    assert [e.message for e in events] == [
        "Successfully assigned default/p1 to a",
        "Successfully assigned default/p2 to b",
    ]
    assert world.engine.stats.attempts["scheduled"] == 2
    assert world.engine.queue_sizes() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_pods_of_other_schedulers_are_not_queued_but_bound_ones_count() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=2))
    world.add_pods(make_pod("theirs", scheduler="default-scheduler"))
    world.add_pods(make_pod("running", cpu=2, node="a", scheduler="default-scheduler"))
    world.add_pods(make_pod("mine"))
    actions = world.step()
    assert not binds(actions)
    failed = [a for a in of(actions, EmitEvent) if a.reason == "FailedScheduling"]
    assert [a.message for a in failed] == [
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    ]
    assert [p.key for p in world.engine.cluster.pods_on("a")] == ["default/running"]


def test_unschedulable_message_patch_and_event_follow_kube_format() -> None:
    world = World.of()
    world.add_nodes(
        make_node("a", cpu=2),
        make_node("b", cpu=8, taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}]),
        make_node("c", cpu=1, unschedulable=True),
    )
    world.add_pods(make_pod("running", cpu=1, node="a", scheduler="other"))
    world.add_pods(make_pod("big", cpu=2))
    actions = world.engine.schedule(world.now)
    message = (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint "
        "{spot: true}, 1 node(s) were unschedulable. no new claims to deallocate, "
        "preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for "
        "scheduling."
    )
    [patch] = of(actions, PatchPodStatus)
    assert patch.condition == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
    }
    [event] = of(actions, EmitEvent)
    assert (event.type, event.reason, event.message) == ("Warning", "FailedScheduling", message)
    assert world.engine.queue_sizes()["unschedulable"] == 1


def test_no_nodes_at_all_is_reported() -> None:
    world = World.of()
    world.add_pods(make_pod("p"))
    [event] = of(world.engine.schedule(world.now), EmitEvent)
    assert event.message == "no nodes available to schedule pods"


def test_ties_go_to_the_first_node_by_name_whatever_the_arrival_order() -> None:
    for order in (("c", "a", "b"), ("b", "c", "a")):
        world = World.of()
        world.add_nodes(*(make_node(n) for n in order))
        world.add_pods(make_pod("p"))
        assert binds(world.step()) == {"default/p": "a"}


def test_queue_order_is_priority_then_arrival() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("low", priority=1))
    world.now += seconds(1)
    world.add_pods(make_pod("high", priority=10), make_pod("mid", priority=5))
    actions = world.engine.schedule(world.now, limit=1)
    assert binds(actions) == {"default/high": "a"}


# --- assumed pods and binding ----------------------------------------------------------------


def test_assumed_pod_counts_until_binding_is_seen() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p1"))
    actions = world.engine.schedule(world.now)  # BindPod out, nothing confirmed yet
    assert binds(actions) == {"default/p1": "a"}
    assert world.engine.assumed() == {"default/p1": "a"}
    world.add_pods(make_pod("p2"))
    second = world.engine.schedule(world.now)
    assert not binds(second)  # p1 still holds the node's only cpu
    world.apply(actions)
    assert world.engine.assumed() == {}
    assert [p.key for p in world.engine.cluster.pods_on("a")] == ["default/p1"]
    cpu = world.engine.nodes().column_of("cpu")
    assert world.engine.nodes().requested[0, cpu] == 1000


def test_bind_failure_forgets_the_assumption_and_backs_off() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p"))
    world.fail_binds.add("default/p")
    actions = world.step()
    events = [(a.reason, a.message) for a in of(actions, EmitEvent)]
    assert ("FailedScheduling", 'running Bind plugin "DefaultBinder": boom') in events
    assert world.engine.assumed() == {}
    assert world.engine.queue_sizes()["backoff"] == 1
    assert world.engine.stats.attempts["error"] == 1
    cpu = world.engine.nodes().column_of("cpu")
    assert world.engine.nodes().requested[0, cpu] == 0
    # Backoff: 1 s after the first failure.
    world.fail_binds.clear()
    assert binds(world.engine.schedule(world.now + seconds(0.999))) == {}
    assert world.engine.next_wake() == T0 + seconds(1)
    assert binds(world.engine.schedule(T0 + seconds(1))) == {"default/p": "a"}


def test_bind_conflict_forgets_without_retry() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p"))
    [bind] = of(world.engine.schedule(world.now), BindPod)
    out = world.engine.handle(BindResult(bind.key, bind.uid, "a", ok=False, conflict=True), T0)
    assert out == []
    assert world.engine.assumed() == {}
    assert world.engine.queue_sizes() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert world.engine.next_wake() is None
    # Someone else bound it: the pod event counts it where it really is.
    world.add_pods(bound(world.pods["default/p"], "a"))
    assert [p.key for p in world.engine.cluster.pods_on("a")] == ["default/p"]


def test_a_stale_bind_result_for_another_uid_is_ignored() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p"))
    world.engine.schedule(world.now)
    out = world.engine.handle(BindResult("default/p", "other-uid", "a", ok=False), T0)
    assert out == [] and world.engine.assumed() == {"default/p": "a"}


# --- backoff and requeue ---------------------------------------------------------------------


def test_backoff_doubles_per_attempt_up_to_the_maximum() -> None:
    from placement.pods.backend.queue import backoff_duration

    got = [backoff_duration(n, seconds(1), seconds(10)).total_seconds() for n in range(1, 7)]
    assert got == [1, 2, 4, 8, 10, 10]


def test_requeue_on_node_added_respects_the_pod_backoff() -> None:
    world = World.of(pop_from_backoff=False)  # kube <= 1.32; on, the test below
    world.add_pods(make_pod("p", cpu=2))
    world.add_nodes(make_node("small", cpu=1))
    world.step()
    world.now += seconds(0.5)
    world.step()  # nothing to do: unschedulable
    assert world.engine.queue_sizes()["unschedulable"] == 1
    world.add_nodes(make_node("big", cpu=4))  # 0.5 s after the failure: backoff of 1 s left
    assert world.engine.queue_sizes()["backoff"] == 1
    assert binds(world.engine.schedule(world.now)) == {}
    world.now = T0 + seconds(1)
    assert binds(world.step()) == {"default/p": "big"}


def test_an_engine_popping_from_backoff_tries_a_moved_pod_before_its_backoff_ends() -> None:
    """kube's SchedulerPopFromBackoffQ (`pop_from_backoff`): nothing else to try, the pod the
    new node moved to backoff is tried at once."""
    world = World.of()  # on by default
    world.add_pods(make_pod("p", cpu=2))
    world.add_nodes(make_node("small", cpu=1))
    world.step()
    world.now += seconds(0.5)
    world.add_nodes(make_node("big", cpu=4))  # 0.5 s after the failure: backoff of 1 s left
    assert world.engine.queue_sizes()["backoff"] == 1
    assert binds(world.engine.schedule(world.now)) == {"default/p": "big"}


def test_requeue_after_backoff_expired_goes_straight_to_active() -> None:
    world = World.of()
    world.add_nodes(make_node("small", cpu=1))
    world.add_pods(make_pod("p", cpu=2))
    world.step()
    world.now = T0 + seconds(30)
    world.add_nodes(make_node("big", cpu=4))
    assert world.engine.queue_sizes()["active"] == 1


def test_unschedulable_pods_move_when_an_assigned_pod_goes() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=2))
    world.add_pods(make_pod("running", cpu=2, node="a", scheduler="other"))
    world.add_pods(make_pod("p", cpu=2))
    world.step()
    world.now = T0 + seconds(5)
    world.delete("default/running")
    assert binds(world.step()) == {"default/p": "a"}


def test_a_finished_pod_releases_its_room() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=2))
    running = make_pod("job", cpu=2, node="a", scheduler="other")
    world.add_pods(running)
    world.add_pods(make_pod("p", cpu=2))
    world.step()
    world.now = T0 + seconds(5)
    world.add_pods(with_status(running, phase="Succeeded"))
    assert world.engine.cluster.pods_on("a") == ()
    assert binds(world.step()) == {"default/p": "a"}


def test_a_status_echo_does_not_requeue_but_a_spec_change_does() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=1, labels={"zone": "x"}))
    world.add_pods(make_pod("p", nodeSelector={"zone": "y"}))
    world.step()  # our patch comes back as a pod event: stays unschedulable
    assert world.engine.queue_sizes()["unschedulable"] == 1
    world.now = T0 + seconds(3)
    world.add_pods(make_pod("p", nodeSelector={"zone": "x"}))
    assert world.engine.queue_sizes()["active"] == 1
    assert binds(world.step()) == {"default/p": "a"}


def test_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p", cpu=2))
    actions = world.step()
    assert of(actions, WakeAt) == [WakeAt(T0 + timedelta(minutes=5))]
    world.now = T0 + timedelta(minutes=5)
    again = world.engine.schedule(world.now)
    assert [a.reason for a in of(again, EmitEvent)] == ["FailedScheduling"]
    assert world.engine.stats.pod_attempts["default/p"] == 2


def test_an_irrelevant_node_update_does_not_requeue() -> None:
    world = World.of()
    node = make_node("a", cpu=1)
    world.add_nodes(node)
    world.add_pods(make_pod("p", cpu=2))
    world.step()
    heartbeat = node.model_copy(update={"api_version": "v1"})
    world.engine.handle(NodeEvent("Modified", heartbeat), world.now)
    assert world.engine.queue_sizes()["unschedulable"] == 1
    world.engine.handle(NodeEvent("Modified", make_node("a", cpu=4)), world.now)
    assert world.engine.queue_sizes()["unschedulable"] == 0


def test_deleting_a_pending_pod_removes_it_from_every_queue() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p", cpu=2))
    world.step()
    world.delete("default/p")
    assert world.engine.queue_sizes() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert world.engine.cluster.pod("default/p") is None


def test_a_pod_added_twice_is_queued_once() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=4))
    pod = make_pod("p")
    world.engine.handle(PodEvent("Added", pod), T0)
    world.engine.handle(PodEvent("Added", pod), T0)
    assert world.engine.queue_sizes()["active"] == 1
    assert len(of(world.engine.schedule(T0), BindPod)) == 1


# --- gated pods ------------------------------------------------------------------------------


def test_gated_pods_wait_until_ungated() -> None:
    world = World.of()
    world.add_nodes(make_node("a"))
    gated = make_pod("p", schedulingGates=[{"name": "example.com/wait"}])
    world.add_pods(gated)
    assert world.engine.queue_sizes()["gated"] == 1
    assert world.step() == []
    world.add_pods(make_pod("p"))
    assert world.engine.queue_sizes()["active"] == 1
    assert binds(world.step()) == {"default/p": "a"}


# --- priority resolution ---------------------------------------------------------------------


def priority_class(name: str, value: int, default: bool = False, never: bool = False) -> Any:
    body: dict[str, Any] = {"metadata": {"name": name}, "value": value, "globalDefault": default}
    if never:
        body["preemptionPolicy"] = "Never"
    return PriorityClass.model_validate(body)


def test_priority_comes_from_spec_then_class_then_global_default() -> None:
    world = World.of()
    for pc in (priority_class("high", 1000, never=True), priority_class("base", 7, True)):
        world.engine.handle(ObjectEvent("Added", pc), T0)
    world.add_pods(
        make_pod("spec", priority=3, priorityClassName="high"),
        make_pod("cls", priorityClassName="high"),
        make_pod("dflt"),
    )
    view = world.engine.cluster
    infos = {k: view.pod(f"default/{k}") for k in ("spec", "cls", "dflt")}
    assert {k: (i.priority, i.preempt_never) for k, i in infos.items() if i} == {
        "spec": (3, True),
        "cls": (1000, True),
        "dflt": (7, False),
    }


# --- Permit ----------------------------------------------------------------------------------


@dataclass
class Gate:
    """A Permit (and Reserve) stand-in: waits, allows, or rejects; records Unreserve."""

    mode: str = "wait"
    timeout: timedelta = timedelta(seconds=10)
    name: str = "Gate"
    unreserved: list[str] = field(default_factory=list)
    reserved: list[str] = field(default_factory=list)
    cycles: list[PodCycle] = field(default_factory=list)

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        self.reserved.append(pod.key)
        return PodStatus()

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None:
        self.unreserved.append(pod.key)

    def permit(self, cycle: PodCycle, pod: PodInfo, node: str) -> PermitResult:
        self.cycles.append(cycle)
        if self.mode == "wait":
            return PermitResult(PodStatus(PodCode.WAIT), self.timeout)
        if self.mode == "reject":
            return PermitResult(PodStatus.unschedulable(self.name, "not now"))
        if self.mode == "raise":
            raise RuntimeError("bug")
        return PermitResult()


def with_gate(gate: Gate) -> Profile:
    base = default_profile()
    return Profile(
        scheduler_name=base.scheduler_name,
        queue_sort=base.queue_sort,
        pre_filters=base.pre_filters,
        filters=base.filters,
        post_filters=base.post_filters,
        scores=base.scores,
        reserves=(gate,),
        permits=(gate,),
    )


def test_permit_wait_holds_the_pod_until_allowed() -> None:
    gate = Gate()
    world = World.of(with_gate(gate))
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p"))
    actions = world.engine.schedule(T0)
    assert binds(actions) == {}
    assert of(actions, WakeAt) == [WakeAt(T0 + seconds(10))]
    assert world.engine.waiting() == {"default/p": "a"}
    assert [p.key for p in world.engine.cluster.pods_on("a")] == ["default/p"]  # reserved
    assert [p.key for p in gate.cycles[0].waiting.waiting()] == ["default/p"]
    gate.cycles[0].waiting.allow("default/p", "Gate")
    out = world.engine.schedule(T0 + seconds(1))
    assert binds(out) == {"default/p": "a"}
    world.apply(out)  # BindResult ok, then the pod seen bound: no Unreserve, one Scheduled
    assert gate.unreserved == []
    assert [a.reason for a in of(world.log, EmitEvent)] == ["Scheduled"]
    assert world.engine.assumed() == {}


def test_permit_timeout_unreserves_and_reports() -> None:
    gate = Gate(timeout=seconds(30))
    world = World.of(with_gate(gate))
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p"))
    world.engine.schedule(T0)
    assert world.engine.next_wake() == T0 + seconds(30)
    out = world.engine.schedule(T0 + seconds(30))
    assert gate.unreserved == ["default/p"]
    assert world.engine.waiting() == {}
    assert world.engine.cluster.pods_on("a") == ()
    messages = [a.message for a in of(out, EmitEvent)]
    assert messages[0] == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin Gate."
    )
    assert world.engine.queue_sizes()["unschedulable"] == 1


def test_permit_reject_by_a_plugin_from_outside_unreserves() -> None:
    gate = Gate()
    world = World.of(with_gate(gate))
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p"))
    world.engine.schedule(T0)
    gate.cycles[0].waiting.reject("default/p", "Gate", "group failed")
    out = world.engine.schedule(T0)
    assert gate.unreserved == ["default/p"]
    assert "0/1 nodes are available: 1 group failed." in [a.message for a in of(out, EmitEvent)]


def test_permit_rejection_in_cycle_unreserves_and_parks_the_pod() -> None:
    gate = Gate(mode="reject")
    world = World.of(with_gate(gate))
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("p"))
    out = world.engine.schedule(T0)
    assert gate.unreserved == ["default/p"] and binds(out) == {}
    assert [a.message for a in of(out, EmitEvent)] == ["0/1 nodes are available: 1 not now."]
    assert world.engine.queue_sizes()["unschedulable"] == 1
    assert world.engine.cluster.pods_on("a") == ()


def test_a_plugin_exception_is_an_error_for_that_pod_only() -> None:
    gate = Gate(mode="raise")
    world = World.of(with_gate(gate))
    world.add_nodes(make_node("a", cpu=2))
    world.add_pods(make_pod("p"))
    out = world.engine.schedule(T0)
    [patch] = of(out, PatchPodStatus)
    assert patch.condition is not None and patch.condition["reason"] == "SchedulerError"
    assert "RuntimeError: bug" in patch.condition["message"]
    assert world.engine.queue_sizes()["backoff"] == 1
    assert gate.unreserved == ["default/p"]
    assert world.engine.cluster.pods_on("a") == ()


@dataclass
class Broken:
    name: str = "Broken"

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        if pod.name == "bad":
            raise ValueError("no")
        return FilterResult(candidates)


def test_a_filter_exception_does_not_stop_other_pods() -> None:
    base = default_profile()
    profile = Profile(
        scheduler_name=SCHEDULER, queue_sort=base.queue_sort, filters=(Broken(), *base.filters)
    )
    world = World.of(profile)
    world.add_nodes(make_node("a"))
    world.add_pods(make_pod("bad", priority=10), make_pod("good"))
    out = world.step()
    assert binds(out) == {"default/good": "a"}
    assert world.engine.stats.attempts["error"] == 1


@dataclass
class Halves:
    """A filter stand-in with two reasons, one resolvable, one not."""

    name: str = "Halves"

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        rows = np.arange(nodes.size)
        soft = candidates & (rows % 2 == 0)
        hard = candidates & (rows % 2 == 1)
        return FilterResult(
            np.zeros(nodes.size, dtype=bool),
            (Reason(soft, "soft"), Reason(hard, "hard", resolvable=False)),
        )


def test_diagnosis_counts_reasons_from_the_first_filter_and_marks_resolvable_rows() -> None:
    seen: list[Any] = []

    @dataclass
    class Spy:
        name: str = "Spy"

        def post_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diag: Any) -> Any:
            from placement.pods.framework.interface import PostFilterResult

            seen.append(diag)
            return PostFilterResult(PodStatus.unschedulable(self.name, "spy says no"))

    base = default_profile()
    profile = Profile(
        scheduler_name=SCHEDULER,
        queue_sort=base.queue_sort,
        filters=(Halves(), *base.filters),
        post_filters=(Spy(),),
    )
    world = World.of(profile)
    world.add_nodes(*(make_node(f"n{i}", cpu=0) for i in range(5)))
    world.add_pods(make_pod("p"))
    [event] = of(world.engine.schedule(T0), EmitEvent)
    assert event.message == "0/5 nodes are available: 2 hard, 3 soft. spy says no"
    assert seen[0].resolvable.tolist() == [True, False, True, False, True]
    assert seen[0].plugins == frozenset({"Halves"})


@dataclass
class Lazy:
    """A filter keeping out odd rows, its reasons deferred (`FilterResult.explain`)."""

    name: str = "Lazy"
    calls: int = 0

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        odd = np.arange(nodes.size) % 2 == 1

        def explain() -> tuple[Reason, ...]:
            self.calls += 1
            return (Reason(candidates & odd, "odd", resolvable=False),)

        return FilterResult(
            candidates & ~odd, (Reason(candidates & odd, "eager"),), None, explain=explain
        )


def test_deferred_reasons_are_asked_only_for_a_diagnosis() -> None:
    lazy = Lazy()
    base = default_profile()
    profile = Profile(
        scheduler_name=SCHEDULER,
        queue_sort=base.queue_sort,
        filters=(lazy, *base.filters),
        scores=base.scores,
    )
    world = World.of(profile)
    world.add_nodes(*(make_node(f"n{i}", cpu=1) for i in range(4)))
    world.add_pods(make_pod("fits", cpu=1))
    assert binds(world.step()) == {"default/fits": "n0"}
    assert lazy.calls == 0  # a node fit: nobody needed the reasons
    world.add_pods(make_pod("big", cpu=2))
    [event] = [e for e in of(world.step(), EmitEvent) if e.reason == "FailedScheduling"]
    assert lazy.calls == 1
    # Given and deferred reasons both count; the fit filter removes the even rows.
    assert event.message == "0/4 nodes are available: 2 Insufficient cpu, 2 eager, 2 odd."


# --- nominated pods --------------------------------------------------------------------------


def test_a_nominated_pod_reserves_its_node_against_lower_priority_pods() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=2), make_node("b", cpu=1))
    preemptor = with_status(make_pod("vip", cpu=2, priority=100), nominatedNodeName="a")
    world.add_pods(preemptor, make_pod("low", cpu=1, priority=1))
    world.engine.schedule(T0, limit=0)
    assert world.engine.nominated() == {"default/vip": "a"}
    # Try only the low pod: vip's request is counted on a, so low goes to b.
    world.engine.queue.remove("default/vip")
    assert binds(world.engine.schedule(T0)) == {"default/low": "b"}


def test_a_nominated_pod_is_tried_on_its_node_first() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=8), make_node("z", cpu=2))
    pod = with_status(make_pod("p", cpu=2, priority=5), nominatedNodeName="z")
    world.add_pods(pod)
    out = world.step()
    assert binds(out) == {"default/p": "z"}  # least allocated alone would pick a
    assert world.engine.nominated() == {}


def test_equal_priority_pods_see_the_nomination_too() -> None:
    world = World.of()
    world.add_nodes(make_node("a", cpu=2))
    world.add_pods(with_status(make_pod("first", cpu=2, priority=5), nominatedNodeName="a"))
    world.engine.queue.remove("default/first")
    world.add_pods(make_pod("same", cpu=1, priority=5), make_pod("higher", cpu=1, priority=6))
    out = world.engine.schedule(T0)
    assert binds(out) == {"default/higher": "a"}


# --- misc ------------------------------------------------------------------------------------


def test_go_duration_formats_like_go() -> None:
    assert [go_duration(seconds(s)) for s in (0, 1.5, 10, 90, 3600)] == [
        "0s",
        "1.5s",
        "10s",
        "1m30s",
        "1h0m0s",
    ]


def test_objects_are_visible_to_plugins() -> None:
    world = World.of()
    pc: KubeObject = priority_class("x", 1)
    world.engine.handle(ObjectEvent("Added", pc), T0)
    assert list(world.engine.cluster.objects("PriorityClass")) == ["x"]
    world.engine.handle(ObjectEvent("Deleted", pc), T0)
    assert dict(world.engine.cluster.objects("PriorityClass")) == {}
