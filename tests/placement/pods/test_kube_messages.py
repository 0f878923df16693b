"""FailedScheduling messages and PodScheduled reasons after Filter, as kube-scheduler v1.36
words them (docs/pod-scheduler.md, "Which kube-scheduler we follow"): a rejection at Reserve,
at Permit or while waiting at Permit is a FitError over one node; a rejection at PreBind or Bind
is the plugin's own message; a plugin's error is wrapped with its extension point; a pod held at
Permit and preempted backs off with an error."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import (
    Action,
    BindPod,
    BindResult,
    DeletePod,
    EmitEvent,
    PatchPodStatus,
)
from placement.pods.framework.interface import (
    Diagnosis,
    FilterResult,
    PermitResult,
    PodCode,
    PodCycle,
    PodInfo,
    PodStatus,
    PostFilterResult,
    PreBindResult,
    PreFilterResult,
    Profile,
)
from tests.placement.pods.test_engine import (
    T0,
    World,
    binds,
    default_profile,
    make_node,
    make_pod,
    of,
    seconds,
)


@dataclass
class Scripted:
    """Reserve, Permit, PreBind and Bind in one plugin; `answers[point]` says what that point
    returns ("ok", a PodStatus, or "raise")."""

    answers: dict[str, Any] = field(default_factory=dict)
    name: str = "Gate"
    unreserved: list[str] = field(default_factory=list)
    cycles: list[PodCycle] = field(default_factory=list)

    def _answer(self, point: str) -> PodStatus:
        answer = self.answers.get(point, "ok")
        if answer == "raise":
            raise RuntimeError(f"bug at {point}")
        return PodStatus() if answer == "ok" else answer

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        return self._answer("reserve")

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None:
        self.unreserved.append(pod.key)

    def permit(self, cycle: PodCycle, pod: PodInfo, node: str) -> PermitResult:
        self.cycles.append(cycle)
        if self.answers.get("permit") == "wait":
            return PermitResult(PodStatus(PodCode.WAIT), seconds(30))
        return PermitResult(self._answer("permit"))

    def pre_bind(self, cycle: PodCycle, pod: PodInfo, node: str) -> PreBindResult:
        if self.answers.get("pre_bind") == "writes":
            return PreBindResult(actions=(EmitEvent(("Pod", pod.key, pod.uid), "Normal", "W", ""),))
        return PreBindResult(self._answer("pre_bind"))

    def bind(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus:
        answer = self.answers.get("bind", "skip")
        return PodStatus(PodCode.SKIP) if answer == "skip" else self._answer("bind")


def scripted_world(plugin: Scripted, base: Profile | None = None) -> World:
    profile = base or default_profile()
    profile = dataclasses.replace(
        profile, reserves=(plugin,), permits=(plugin,), pre_binds=(plugin,), binds=(plugin,)
    )
    world = World.of(profile)
    world.add_nodes(make_node("a", cpu=2))
    return world


def failure(actions: list[Action], key: str = "default/p") -> tuple[str, str, str]:
    """(condition reason, condition message, event message) of the pod's last failure."""
    [patch] = [a for a in of(actions, PatchPodStatus) if a.key == key and a.condition]
    events = [a for a in of(actions, EmitEvent) if a.regarding[1] == key]
    [event] = [a for a in events if a.reason == "FailedScheduling"]
    assert patch.condition is not None
    return patch.condition["reason"], patch.condition["message"], event.message


def outcome(answers: dict[str, Any]) -> tuple[tuple[str, str, str], dict[str, int], Scripted]:
    plugin = Scripted(answers)
    world = scripted_world(plugin)
    world.add_pods(make_pod("p"))
    actions = world.engine.schedule(T0)
    return failure(actions), world.engine.queue_sizes(), plugin


# --- rejections before binding: a FitError over the chosen node --------------------------------


def test_a_reserve_rejection_is_a_fit_error_over_one_node() -> None:
    status = PodStatus.unschedulable("Gate", "volume taken")
    (reason, message, event), queues, plugin = outcome({"reserve": status})
    assert (reason, message) == ("Unschedulable", "0/1 nodes are available: 1 volume taken.")
    assert event == message
    assert queues["unschedulable"] == 1 and plugin.unreserved == ["default/p"]


def test_several_reasons_are_counted_and_sorted_as_kube_does() -> None:
    status = PodStatus.unresolvable("Gate", "zeta", "alpha")
    (reason, message, _), _, _ = outcome({"permit": status})
    assert (reason, message) == ("Unschedulable", "0/1 nodes are available: 1 alpha, 1 zeta.")


def test_a_permit_rejection_without_a_reason_leaves_the_bare_head() -> None:
    (reason, message, _), queues, _ = outcome({"permit": PodStatus(PodCode.UNSCHEDULABLE)})
    assert (reason, message) == ("Unschedulable", "0/1 nodes are available:")
    assert queues["unschedulable"] == 1


def test_a_permit_timeout_and_a_rejection_while_waiting_are_fit_errors() -> None:
    plugin = Scripted({"permit": "wait"})
    world = scripted_world(plugin)
    world.add_pods(make_pod("p"), make_pod("q"))
    world.engine.schedule(T0)
    plugin.cycles[1].waiting.reject("default/q", "Gate", "gang short of quorum")
    rejected = world.engine.schedule(T0 + seconds(1))
    assert failure(rejected, "default/q")[:2] == (
        "Unschedulable",
        "0/1 nodes are available: 1 gang short of quorum.",
    )
    timed_out = world.engine.schedule(T0 + seconds(30))
    assert failure(timed_out)[:2] == (
        "Unschedulable",
        "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin Gate.",
    )


# --- errors: wrapped with their extension point, SchedulerError, backoff -------------------------


def test_errors_name_their_extension_point_and_plugin() -> None:
    boom = PodStatus.error("Gate", "disk full")
    for point, wording in (
        ("reserve", 'running Reserve plugin "Gate": '),
        ("permit", 'running Permit plugin "Gate": '),
        ("pre_bind", 'running PreBind plugin "Gate": '),
        ("bind", 'running Bind plugin "Gate": '),
    ):
        (reason, message, _), queues, _ = outcome({point: boom})
        assert (reason, message) == ("SchedulerError", wording + "disk full"), point
        assert queues["backoff"] == 1, point
        (reason, message, _), _, _ = outcome({point: "raise"})
        expected = f"{wording}RuntimeError: bug at {point}"
        assert (reason, message) == ("SchedulerError", expected), point


def test_a_prebind_or_bind_rejection_keeps_the_plugins_message_and_backs_off() -> None:
    for point in ("pre_bind", "bind"):
        status = PodStatus.unschedulable("Gate", "claim lost")
        (reason, message, _), queues, plugin = outcome({point: status})
        assert (reason, message) == ("Unschedulable", "claim lost"), point
        assert queues["backoff"] == 1 and queues["unschedulable"] == 0, point
        assert plugin.unreserved == ["default/p"], point


def test_a_failed_binding_names_default_binder_and_failed_writes_name_their_prebind() -> None:
    plugin = Scripted({"pre_bind": "writes"})
    world = scripted_world(plugin)
    world.add_pods(make_pod("p"), make_pod("q"))
    actions = world.engine.schedule(T0)
    assert binds(actions) == {"default/p": "a", "default/q": "a"}
    [bind_p, bind_q] = of(actions, BindPod)
    lost = BindResult(bind_p.key, bind_p.uid, "a", ok=False, message="etcd timeout")
    assert failure(world.engine.handle(lost, T0))[:2] == (
        "SchedulerError",
        'running Bind plugin "DefaultBinder": etcd timeout',
    )
    volumes = BindResult(bind_q.key, bind_q.uid, "a", False, False, "pv gone", volumes=True)
    assert failure(world.engine.handle(volumes, T0), "default/q")[:2] == (
        "SchedulerError",
        'running PreBind plugin "Gate": pv gone',
    )


@dataclass
class Failing:
    """A PreFilter and a Filter that return an error status for pod `bad`."""

    name: str = "Broken"

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        if pod.name == "bad-pre":
            return PreFilterResult(PodStatus.error(self.name, "no index"))
        return PreFilterResult()

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        if pod.name == "bad-filter":
            return FilterResult(candidates, status=PodStatus.error(self.name, "no cache"))
        return FilterResult(candidates)


def test_prefilter_and_filter_errors_are_worded_as_kube_wraps_them() -> None:
    base = default_profile()
    broken = Failing()
    profile = dataclasses.replace(
        base, pre_filters=(broken, *base.pre_filters), filters=(broken, *base.filters)
    )
    world = World.of(profile)
    world.add_nodes(make_node("a"))
    world.add_pods(make_pod("bad-pre"), make_pod("bad-filter"))
    actions = world.engine.schedule(T0)
    assert failure(actions, "default/bad-pre")[:2] == (
        "SchedulerError",
        'running PreFilter plugin "Broken": no index',
    )
    assert failure(actions, "default/bad-filter")[:2] == (
        "SchedulerError",
        'running "Broken" filter plugin: no cache',
    )


@dataclass
class PostFilterError:
    """A PostFilter that fails with an error status."""

    name: str = "Preemptor"

    def post_filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> PostFilterResult:
        return PostFilterResult(PodStatus.error(self.name, "victims unknown"))


def test_a_postfilter_error_follows_the_diagnosis_and_the_pod_stays_unschedulable() -> None:
    base = default_profile()
    world = World.of(dataclasses.replace(base, post_filters=(PostFilterError(),)))
    world.add_nodes(make_node("a", cpu=1))
    world.add_pods(make_pod("big", cpu=2))
    actions = world.engine.schedule(T0)
    assert failure(actions, "default/big")[:2] == (
        "Unschedulable",
        "0/1 nodes are available: 1 Insufficient cpu. victims unknown",
    )
    assert world.engine.queue_sizes()["unschedulable"] == 1


# --- preempted while held at Permit ------------------------------------------------------------


def test_a_pod_held_at_permit_and_preempted_backs_off_with_kubes_error() -> None:
    plugin = Scripted({"permit": "wait"})
    world = scripted_world(plugin)
    world.add_pods(make_pod("low", cpu=2, priority=0))
    world.engine.schedule(T0)
    assert world.engine.waiting() == {"default/low": "a"}
    world.add_pods(make_pod("high", cpu=2, priority=100))
    actions = world.engine.schedule(T0)
    assert of(actions, DeletePod) == []  # held, not running: released rather than deleted
    assert failure(actions, "default/low")[:2] == (
        "SchedulerError",
        "waiting on permit for pod: preempted",
    )
    assert plugin.unreserved == ["default/low"]
    assert world.engine.waiting() == {}


# --- long messages -----------------------------------------------------------------------------


def test_a_long_message_is_cut_in_the_event_only_as_kube_cuts_it() -> None:
    long = "x" * 1100
    (_, message, event), _, _ = outcome({"permit": PodStatus.unschedulable("Gate", long)})
    assert message == f"0/1 nodes are available: 1 {long}."  # the condition keeps it all
    assert len(event.encode()) == 1024 and event.endswith("x ...")
    assert message.startswith(event[: -len(" ...")])
