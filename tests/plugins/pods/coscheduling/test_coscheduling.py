"""Coscheduling extension point by extension point, against the behaviour and the test cases
of scheduler-plugins' coscheduling (the anchor), with the quirks this project pins
differently (docs/gangs-and-quotas.md, 'Coscheduling', its differences from scheduler-plugins):
a missing PodGroup is rejected at PreFilter, groups are per namespace, finished pods count
neither as siblings nor toward the quorum."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

import numpy as np
import pytest

from apis.core import Pod
from apis.scheduling import PodGroup
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import ObjectEvent, PodEvent
from placement.pods.framework.interface import (
    ClusterView,
    CycleHost,
    Diagnosis,
    PodCode,
    PodCycle,
    PodInfo,
)
from plugins.pods import DEFAULT_PLUGINS, POD_PLUGINS
from plugins.pods.coscheduling.coscheduling import POD_GROUP_LABEL, Coscheduling
from tests.plugins.pods.builders import NOW, node, snapshot

T = [NOW + timedelta(seconds=d) for d in (0, 1, 2, 3, -2, -1)]  # the anchor's `times`


def make_pod(
    name: str,
    group: str | None = None,
    *,
    namespace: str = "ns",
    cpu: str | None = None,
    node_name: str | None = None,
    priority: int | None = None,
    gated: bool = False,
    phase: str | None = None,
) -> Pod:
    labels = {POD_GROUP_LABEL: group} if group else {}
    container: dict[str, Any] = {"name": "c"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if gated:
        spec["schedulingGates"] = [{"name": "wait"}]
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels},
        "spec": spec,
    }
    if phase is not None:
        body["status"] = {"phase": phase}
    return Pod.model_validate(body)


def make_group(
    name: str,
    min_member: int,
    *,
    namespace: str = "ns",
    created: datetime | None = None,
    min_resources: dict[str, Any] | None = None,
    timeout: int | None = None,
    phase: str | None = None,
) -> PodGroup:
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = min_resources
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if created is not None:
        meta["creationTimestamp"] = created.isoformat()
    body: dict[str, Any] = {"kind": "PodGroup", "metadata": meta, "spec": spec}
    if phase is not None:
        body["status"] = {"phase": phase}
    return PodGroup.model_validate(body)


@dataclass
class FakeWaiting:
    """WaitingPods: the pods held at Permit, and what the plugin asked for them."""

    held: dict[str, PodInfo] = field(default_factory=dict)
    allowed: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)

    def waiting(self) -> Iterable[PodInfo]:
        return tuple(self.held.values())

    def allow(self, key: str, plugin: str) -> None:
        if self.held.pop(key, None) is not None:
            self.allowed.append(key)

    def reject(self, key: str, plugin: str, message: str) -> None:
        if self.held.pop(key, None) is not None:
            self.rejected.append((key, message))


@dataclass
class FakeHost:
    activated: list[str] = field(default_factory=list)

    def activate(self, keys: Iterable[str]) -> None:
        self.activated.extend(keys)


def cycle_of(waiting: FakeWaiting | None = None, now: datetime = NOW, host: Any = None) -> PodCycle:
    return PodCycle(
        now=now,
        cluster=cast(ClusterView, None),
        waiting=waiting or FakeWaiting(),
        host=cast(CycleHost | None, host),
    )


def plugin_with(
    groups: Sequence[PodGroup] = (), pods: Sequence[Pod] = (), **args: Any
) -> Coscheduling:
    plugin = Coscheduling.from_args(args)
    view = cast(ClusterView, None)
    for group in groups:
        plugin.on_event(ObjectEvent("Added", group), view)
    for pod in pods:
        plugin.on_event(PodEvent("Added", pod), view)
    return plugin


def info(pod: Pod) -> PodInfo:
    return PodInfo.of(pod)


NODES_2X4 = snapshot([node("node-a", cpu=4, pods=32), node("node-b", cpu=4, pods=32)])
NO_DIAGNOSIS = Diagnosis(total_nodes=2, counts={}, resolvable=np.ones(2, dtype=bool))


# --- args ----------------------------------------------------------------------------------


def test_registered_enabled_by_default_after_the_filters_and_before_default_preemption() -> None:
    assert "Coscheduling" in POD_PLUGINS
    assert "Coscheduling" in DEFAULT_PLUGINS
    order = list(DEFAULT_PLUGINS)
    assert order.index("Coscheduling") < order.index("DefaultPreemption")
    plugin: Any = POD_PLUGINS["Coscheduling"]({})
    assert plugin.permit_waiting == timedelta(seconds=60)
    assert plugin.backoff == timedelta(0)
    assert plugin.reject_threshold == pytest.approx(0.10)
    assert plugin.replaces_queue_sort == "PrioritySort"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            {"permitWaitingTimeSeconds": -1},
            r"^permitWaitingTimeSeconds: Invalid value: -1: must be non-negative",
        ),
        (
            {"podGroupBackoffSeconds": -5},
            r"^podGroupBackoffSeconds: Invalid value: -5: must be non-negative",
        ),
        ({"podGroupRejectPercentage": 101}, r"^podGroupRejectPercentage: Invalid value: 101"),
        ({"podGroupRejectPercentage": -1}, r"^podGroupRejectPercentage: Invalid value: -1"),
        ({"permitWaitingTimeSeconds": "60"}, r"^permitWaitingTimeSeconds: must be an integer"),
        ({"podGroupBackoffSeconds": True}, r"^podGroupBackoffSeconds: must be an integer"),
        ({"scheduleTimeout": 3}, r"^scheduleTimeout: unknown field"),
    ],
)
def test_args_are_validated_naming_the_field(args: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Coscheduling.from_args(args)


def test_args_boundaries_are_accepted() -> None:
    plugin = Coscheduling.from_args(
        {
            "permitWaitingTimeSeconds": 0,
            "podGroupBackoffSeconds": 0,
            "podGroupRejectPercentage": 100,
        }
    )
    assert plugin.reject_threshold == 1.0


def test_wait_time_precedence_group_then_arg_then_sixty_seconds() -> None:
    plugin = Coscheduling.from_args({"permitWaitingTimeSeconds": 20})
    assert plugin.wait_time(make_group("pg", 2, timeout=5)) == timedelta(seconds=5)
    assert plugin.wait_time(make_group("pg", 2)) == timedelta(seconds=20)
    zero = Coscheduling.from_args({"permitWaitingTimeSeconds": 0})
    assert zero.wait_time(make_group("pg", 2)) == timedelta(seconds=60)


# --- QueueSort -----------------------------------------------------------------------------

GROUPS_FOR_SORT = [
    make_group("pg1", 5, namespace="namespace1", created=T[2]),
    make_group("pg2", 5, namespace="namespace2", created=T[3]),
    make_group("pg3", 5, namespace="namespace2", created=T[4]),
    make_group("pg4", 5, namespace="namespace2", created=T[5]),
]
LOW, HIGH = 10, 100


def _sort_case(
    ns: str, prio: int, group: str | None, attempt: datetime = NOW
) -> tuple[str, int, str | None, datetime]:
    return (ns, prio, group, attempt)


@pytest.mark.parametrize(
    ("p1", "p2", "first"),
    [
        # the anchor's TestLess cases, groups in the pods' namespaces
        (_sort_case("namespace1", LOW, None), _sort_case("namespace2", HIGH, None), False),
        (_sort_case("namespace1", HIGH, None), _sort_case("namespace2", LOW, None), True),
        (
            _sort_case("namespace1", HIGH, None, T[0]),
            _sort_case("namespace2", HIGH, None, T[1]),
            True,
        ),
        (
            _sort_case("namespace1", HIGH, None, T[1]),
            _sort_case("namespace2", HIGH, None, T[0]),
            False,
        ),
        (_sort_case("namespace1", LOW, "pg1"), _sort_case("namespace2", HIGH, None), False),
        (_sort_case("namespace1", HIGH, "pg1"), _sort_case("namespace2", LOW, None), True),
        # pg3 was created at T[4] (2 s ago): ahead of a plain pod queued at T[1]
        (
            _sort_case("namespace2", HIGH, "pg3", T[0]),
            _sort_case("namespace1", HIGH, None, T[1]),
            True,
        ),
        # a pod of a missing group orders by its queue time
        (
            _sort_case("namespace1", HIGH, "pg3", T[1]),
            _sort_case("namespace2", HIGH, None, T[0]),
            False,
        ),
        (_sort_case("namespace1", LOW, "pg1"), _sort_case("namespace2", HIGH, "pg2"), False),
        (_sort_case("namespace1", HIGH, "pg1"), _sort_case("namespace2", LOW, "pg2"), True),
        # equal priority: the older group first, whatever the pods' queue times
        (
            _sort_case("namespace1", HIGH, "pg1", T[1]),
            _sort_case("namespace2", HIGH, "pg2", T[0]),
            True,
        ),
        (
            _sort_case("namespace2", HIGH, "pg4", T[0]),
            _sort_case("namespace2", HIGH, "pg3", T[1]),
            False,
        ),
        # equal priority and time: namespace/name decides
        (
            _sort_case("namespace1", HIGH, None, T[3]),
            _sort_case("namespace2", HIGH, "pg2", T[0]),
            True,
        ),
    ],
)
def test_queue_sort_vectors(
    p1: tuple[str, int, str | None, datetime],
    p2: tuple[str, int, str | None, datetime],
    first: bool,
) -> None:
    plugin = plugin_with(GROUPS_FOR_SORT)
    pod1 = info(make_pod("pod1", p1[2], namespace=p1[0], priority=p1[1]))
    pod2 = info(make_pod("pod2", p2[2], namespace=p2[0], priority=p2[1]))
    key1 = plugin.queue_sort_key(pod1, p1[3])
    key2 = plugin.queue_sort_key(pod2, p2[3])
    assert (key1 < key2) is first


def test_a_failed_group_goes_behind_until_it_reaches_quorum() -> None:
    old = make_group("old", 2, created=T[0])
    new = make_group("new", 2, created=T[1])
    members = [make_pod(f"old-{i}", "old") for i in range(2)]
    plugin = plugin_with([old, new], [*members, make_pod("new-0", "new")])
    a, b = info(members[0]), info(make_pod("new-0", "new"))
    assert plugin.queue_sort_key(a, NOW) < plugin.queue_sort_key(b, NOW)
    gang = plugin.gang("ns/old")
    assert gang is not None
    plugin.reject_gang(cycle_of(now=T[3]), gang, "rejected")  # the failure penalty
    assert plugin.queue_sort_key(a, NOW) > plugin.queue_sort_key(b, NOW)
    waiting = FakeWaiting()
    plugin.permit(cycle_of(waiting), info(members[0]), "n")
    plugin.permit(cycle_of(waiting), info(members[1]), "n")  # quorum: the penalty is cleared
    assert plugin.queue_sort_key(a, NOW) < plugin.queue_sort_key(b, NOW)


# --- PreFilter -----------------------------------------------------------------------------


def pre(
    plugin: Coscheduling, pod: Pod, nodes: NodeSnapshot = NODES_2X4, now: datetime = NOW
) -> Any:
    return plugin.pre_filter(cycle_of(now=now), info(pod), nodes).status


def test_prefilter_pod_without_group_is_skipped() -> None:
    plugin = plugin_with(
        [make_group("pg1", 1), make_group("pg2", 1)],
        [make_pod("p1", "pg1"), make_pod("p2", "pg2")],
    )
    assert pre(plugin, make_pod("p")).code == PodCode.SKIP


def test_prefilter_rejects_a_missing_group_naming_it() -> None:
    """Ours, not the anchor's, which lets the pod through to Permit (docs/gangs-and-quotas.md)."""
    plugin = plugin_with([make_group("pg1", 1)])
    pod = make_pod("p", "pg-non-existent")
    plugin.on_event(PodEvent("Added", pod), cast(ClusterView, None))
    status = pre(plugin, pod)
    assert status.code == PodCode.UNRESOLVABLE
    assert status.message.startswith('PodGroup "pg-non-existent" not found in namespace "ns"')


@pytest.mark.parametrize(
    ("members", "ok"),
    [
        (["p"], False),  # the anchor's "pod count less than minMember" (one pod, quorum 2)
        (["p1a", "p1b"], True),  # equal
        (["p1a", "p1b", "p1c"], True),  # more
    ],
)
def test_prefilter_counts_sibling_pods(members: list[str], ok: bool) -> None:
    pods = [make_pod(name, "pg1") for name in members]
    plugin = plugin_with(
        [make_group("pg1", 2), make_group("pg2", 2)], [*pods, make_pod("x", "pg2")]
    )
    status = pre(plugin, pods[0])
    assert status.ok is ok
    if not ok:
        assert status.code == PodCode.UNRESOLVABLE
        assert status.message == (
            "pre-filter pod p cannot find enough sibling pods, current pods number: 1, "
            "minMember of group: 2"
        )


def test_prefilter_counts_siblings_per_namespace() -> None:
    """Pinned: a same-named group in another namespace lends no pods."""
    pods = [make_pod("a", "pg", namespace="ns"), make_pod("b", "pg", namespace="other")]
    plugin = plugin_with(
        [make_group("pg", 2, namespace="ns"), make_group("pg", 2, namespace="other")], pods
    )
    assert not pre(plugin, pods[0]).ok
    plugin.on_event(PodEvent("Added", make_pod("c", "pg", namespace="ns")), cast(ClusterView, None))
    assert pre(plugin, pods[0]).ok


def test_finished_pods_are_not_siblings() -> None:
    """The anchor's "pg cannot be scheduled with completed pod"."""
    pods = [
        make_pod("a", "pg"),
        make_pod("b", "pg"),
        make_pod("done", "pg", node_name="node-a", phase="Succeeded"),
    ]
    plugin = plugin_with([make_group("pg", 3)], pods)
    status = pre(plugin, pods[0])
    assert not status.ok and "current pods number: 2" in status.message
    # A member that finishes stops counting.
    plugin = plugin_with([make_group("pg", 2)], pods[:2])
    assert pre(plugin, pods[0]).ok
    plugin.on_event(
        PodEvent("Modified", make_pod("b", "pg", phase="Failed")), cast(ClusterView, None)
    )
    assert not pre(plugin, pods[0]).ok


@pytest.mark.parametrize(
    ("gated", "ok"),
    [
        ([False, False, True], True),  # one gated sibling tolerated
        ([False, True, True], False),  # gates push it below quorum
        ([True, True, True], False),  # all gated
    ],
)
def test_prefilter_gated_siblings(gated: list[bool], ok: bool) -> None:
    pods = [make_pod(f"p{i}", "pg", gated=g) for i, g in enumerate(gated)]
    plugin = plugin_with([make_group("pg", 2)], pods)
    status = pre(plugin, make_pod("p0", "pg", gated=gated[0]))
    assert status.ok is ok
    if not ok:
        assert "cannot proceed due to gated pods in the same PodGroup" in status.message


@pytest.mark.parametrize(("cpu", "ok"), [("6", True), ("10", False)])
def test_prefilter_min_resources_against_the_summed_free_capacity(cpu: str, ok: bool) -> None:
    """The anchor: 6 cpu from 2 x 4 passes (though no node holds 6), 10 fails."""
    pods = [make_pod(n, "pg1") for n in ("p1a", "p1b", "p1c")]
    plugin = plugin_with([make_group("pg1", 2, min_resources={"cpu": cpu})], pods)
    status = pre(plugin, pods[0])
    assert status.ok is ok
    if not ok:
        assert status.code == PodCode.UNSCHEDULABLE  # resolvable: gang preemption may help
        assert status.message == "resource gap: cpu: 2"


@pytest.mark.parametrize(
    ("running", "ok"),
    [
        ([("p1", None, "node-a", "2")], True),
        ([("p1", None, "node-a", "2"), ("p2", None, "node-b", "1")], False),
        # p1 belongs to the group: its requests count as free for the group
        ([("p1", "pg1", "node-a", "2"), ("p2", None, "node-b", "1")], True),
    ],
)
def test_check_cluster_resource_vectors(
    running: list[tuple[str, str | None, str, str]], ok: bool
) -> None:
    pods = [make_pod(n, g, node_name=where, cpu=c) for n, g, where, c in running]
    nodes = snapshot(
        [node("node-a", cpu=3, pods=32), node("node-b", cpu=3, pods=32)],
        [(info(p), p.spec.node_name or "") for p in pods],
    )
    pending = make_pod("p0", "pg1")
    plugin = plugin_with([make_group("pg1", 1, min_resources={"cpu": 4})], [*pods, pending])
    assert pre(plugin, pending, nodes).ok is ok


def test_min_resources_answer_is_cached_for_the_schedule_timeout() -> None:
    pods = [make_pod("a", "pg"), make_pod("b", "pg")]
    plugin = plugin_with([make_group("pg", 2, min_resources={"cpu": 6}, timeout=10)], pods)
    assert pre(plugin, pods[0]).ok
    full = snapshot([node("node-a", cpu=1, pods=32)])
    assert pre(plugin, pods[0], full, NOW + timedelta(seconds=9)).ok  # cached
    assert not pre(plugin, pods[0], full, NOW + timedelta(seconds=10)).ok


# --- PostFilter and backoff ----------------------------------------------------------------


def post(plugin: Coscheduling, pod: Pod, waiting: FakeWaiting, now: datetime = NOW) -> Any:
    return plugin.post_filter(cycle_of(waiting, now), info(pod), NODES_2X4, NO_DIAGNOSIS).status


def waiting_gang(
    size: int, assigned: int, **args: Any
) -> tuple[Coscheduling, list[Pod], FakeWaiting]:
    """A gang of `size` (quorum `size`) whose first `assigned` members wait at Permit."""
    pods = [make_pod(f"m{i}", "pg") for i in range(size)]
    plugin = plugin_with([make_group("pg", size)], pods, **args)
    waiting = FakeWaiting()
    for pod in pods[:assigned]:
        result = plugin.permit(cycle_of(waiting), info(pod), "node-a")
        assert result.status.code == PodCode.WAIT
        waiting.held[info(pod).key] = info(pod)
    return plugin, pods, waiting


def test_postfilter_without_group_says_nothing_and_lets_default_preemption_run() -> None:
    plugin, _, waiting = waiting_gang(2, 1)
    status = post(plugin, make_pod("plain"), waiting)
    assert status.code == PodCode.UNSCHEDULABLE and status.message == ""
    assert waiting.rejected == []


def test_postfilter_rejects_the_waiting_members_with_the_anchors_message() -> None:
    plugin, pods, waiting = waiting_gang(4, 2)
    status = post(plugin, pods[3], waiting)
    message = "PodGroup ns/pg gets rejected due to Pod m3 is unschedulable even after PostFilter"
    assert status.code == PodCode.UNRESOLVABLE  # no per-pod preemption for a gang member
    assert status.message == message
    assert sorted(key for key, _ in waiting.rejected) == ["ns/m0", "ns/m1"]
    gang = plugin.gang("ns/pg")
    assert gang is not None and gang.last_failure == NOW and gang.permitted == {}


def test_postfilter_with_quorum_met_rejects_nothing() -> None:
    pods = [make_pod(f"m{i}", "pg", node_name="node-a") for i in range(2)]
    extra = make_pod("m2", "pg")
    plugin = plugin_with([make_group("pg", 2)], [*pods, extra])
    waiting = FakeWaiting()
    status = post(plugin, extra, waiting)
    assert status.message == "" and waiting.rejected == []


@pytest.mark.parametrize(
    ("percentage", "assigned", "rejects"),
    [
        (0, 9, True),  # 10 % gap > 0 %
        (10, 9, False),  # 10 % gap is not above 10 %
        (10, 8, True),
        (50, 5, False),
        (50, 4, True),
        (100, 0, False),  # never rejects
    ],
)
def test_reject_threshold_boundaries(percentage: int, assigned: int, rejects: bool) -> None:
    plugin, pods, waiting = waiting_gang(10, assigned, podGroupRejectPercentage=percentage)
    post(plugin, pods[-1], waiting)
    if assigned:
        assert bool(waiting.rejected) is rejects
    gang = plugin.gang("ns/pg")
    assert gang is not None
    assert (gang.last_failure is not None) is rejects


def test_backoff_after_rejection_then_prefilter_says_failed_recently() -> None:
    plugin, pods, waiting = waiting_gang(3, 1, podGroupBackoffSeconds=10)
    post(plugin, pods[2], waiting)
    status = pre(plugin, pods[0], now=NOW + timedelta(seconds=5))
    assert status.code == PodCode.UNRESOLVABLE
    assert status.message == "podGroup ns/pg failed recently"
    assert pre(plugin, pods[0], now=NOW + timedelta(seconds=10)).ok


def test_one_group_in_backoff_does_not_block_another() -> None:
    plugin, pods, waiting = waiting_gang(3, 1, podGroupBackoffSeconds=10)
    other = [make_pod(f"o{i}", "other") for i in range(2)]
    plugin.on_event(ObjectEvent("Added", make_group("other", 2)), cast(ClusterView, None))
    for pod in other:
        plugin.on_event(PodEvent("Added", pod), cast(ClusterView, None))
    post(plugin, pods[2], waiting)
    assert not pre(plugin, pods[0]).ok
    assert pre(plugin, other[0]).ok


# --- Permit, Unreserve, sibling activation -------------------------------------------------


def test_permit_without_group_allows_at_once() -> None:
    plugin = plugin_with([make_group("pg1", 2)])
    result = plugin.permit(cycle_of(), info(make_pod("p")), "node")
    assert result.status.code == PodCode.SUCCESS


def test_permit_with_a_missing_group_rejects() -> None:
    plugin = plugin_with([make_group("pg1", 2)])
    result = plugin.permit(cycle_of(), info(make_pod("p", "pg-non-existent")), "node")
    assert result.status.code == PodCode.UNSCHEDULABLE
    assert result.status.message == "PodGroup not found"


def test_permit_waits_for_quorum_with_the_schedule_timeout() -> None:
    plugin = plugin_with(
        [make_group("pg1", 2)], [make_pod("p", "pg1")], permitWaitingTimeSeconds=10
    )
    result = plugin.permit(cycle_of(), info(make_pod("p", "pg1")), "node")
    assert result.status.code == PodCode.WAIT
    assert result.timeout == timedelta(seconds=10)


def test_permit_succeeds_when_a_bound_sibling_completes_the_quorum() -> None:
    plugin = plugin_with(
        [make_group("pg1", 2)], [make_pod("p1a", "pg1"), make_pod("p1b", "pg1", node_name="node")]
    )
    assert plugin.permit(cycle_of(), info(make_pod("p1a", "pg1")), "node").status.ok


def test_permit_quorum_of_one_allows_at_once() -> None:
    plugin = plugin_with([make_group("pg2", 1)], [make_pod("pod1", "pg2")])
    assert plugin.permit(cycle_of(), info(make_pod("pod1", "pg2")), "node").status.ok


def test_completed_members_do_not_count_toward_the_quorum() -> None:
    done = make_pod("done", "pg", node_name="node", phase="Succeeded")
    plugin = plugin_with([make_group("pg", 2)], [done, make_pod("a", "pg")])
    assert plugin.permit(cycle_of(), info(make_pod("a", "pg")), "node").status.code == PodCode.WAIT


def test_quorum_allows_every_waiting_member() -> None:
    plugin, pods, waiting = waiting_gang(3, 2)
    result = plugin.permit(cycle_of(waiting), info(pods[2]), "node-b")
    assert result.status.ok
    assert sorted(waiting.allowed) == ["ns/m0", "ns/m1"]


def test_unreserve_rejects_the_waiting_siblings() -> None:
    plugin, pods, waiting = waiting_gang(3, 2)
    waiting.held.pop("ns/m0")
    plugin.unreserve(cycle_of(waiting), info(pods[0]), "node-a")
    assert [key for key, _ in waiting.rejected] == ["ns/m1"]
    assert "rejection in Unreserve" in waiting.rejected[0][1]
    gang = plugin.gang("ns/pg")
    assert gang is not None and gang.assigned() == 0


def test_the_first_member_at_permit_activates_its_siblings() -> None:
    pods = [make_pod(f"m{i}", "pg") for i in range(3)]
    plugin = plugin_with([make_group("pg", 3)], pods)
    host = FakeHost()
    plugin.permit(cycle_of(host=host), info(pods[0]), "node")
    assert host.activated == ["ns/m1", "ns/m2"]
    plugin.permit(cycle_of(host=host), info(pods[1]), "node")  # not the first: no more
    assert host.activated == ["ns/m1", "ns/m2"]


# --- events and the simulate report --------------------------------------------------------


def test_events_that_may_help_say_so() -> None:
    """The hint names the group's own members, and only once the group has minMember pods (a
    member refused for too few siblings fails again until then)."""
    plugin = plugin_with([make_group("pg", 2), make_group("other", 1)])
    view = cast(ClusterView, None)
    assert not plugin.on_event(PodEvent("Added", make_pod("a", "pg")), view)  # 1 of 2
    assert plugin.on_event(PodEvent("Added", make_pod("b", "pg")), view) == {"ns/a", "ns/b"}
    assert plugin.on_event(PodEvent("Added", make_pod("c", "other")), view) == {"ns/c"}
    assert not plugin.on_event(PodEvent("Modified", make_pod("a", "pg")), view)
    assert not plugin.on_event(PodEvent("Added", make_pod("plain")), view)
    spec_change = ObjectEvent("Modified", make_group("pg", 1))
    assert plugin.on_event(spec_change, view) == {"ns/a", "ns/b"}
    assert not plugin.on_event(spec_change, view)  # the same spec again: a status update
    # Deleted: its members go (back) to the queue, where PreFilter names the missing group.
    assert plugin.on_event(ObjectEvent("Deleted", make_group("pg", 1)), view) == {"ns/a", "ns/b"}
    assert plugin.group("ns/pg") is None
    assert not plugin.on_event(ObjectEvent("Deleted", make_group("gone", 1)), view)  # no pods


def test_a_member_leaving_the_group_is_forgotten() -> None:
    plugin = plugin_with([make_group("pg", 2)], [make_pod("a", "pg"), make_pod("b", "pg")])
    view = cast(ClusterView, None)
    plugin.on_event(PodEvent("Modified", make_pod("b", None)), view)  # label removed
    gang = plugin.gang("ns/pg")
    assert gang is not None and sorted(gang.members) == ["ns/a"]
    plugin.on_event(PodEvent("Deleted", make_pod("a", "pg")), view)
    assert gang.members == {}


def test_simulation_report_per_gang() -> None:
    plugin, pods, waiting = waiting_gang(5, 3)
    plugin.on_event(ObjectEvent("Added", make_group("lost", 2)), cast(ClusterView, None))
    plugin.on_event(PodEvent("Added", make_pod("orphan", "missing")), cast(ClusterView, None))
    lines = plugin.simulation_report(cast(ClusterView, None), NOW)
    assert (
        lines[0]
        == "gang ns/lost: phase Pending, minMember 2: 0 bound, 0 binding, 0 waiting at Permit, "
        "0 pending"
    )
    assert lines[1] == "gang ns/missing: PodGroup not found; 1 pod(s) carry its label"
    until = (NOW + timedelta(seconds=60)).isoformat()
    assert lines[2] == (
        "gang ns/pg: phase Scheduling, minMember 5: 0 bound, 0 binding, 3 waiting at Permit, "
        f"2 pending (3/5 members hold a node, waiting for 2 more until {until})"
    )
    post(plugin, pods[4], waiting)
    lines = plugin.simulation_report(cast(ClusterView, None), NOW)
    assert lines[2].endswith(
        "; last rejection: PodGroup ns/pg gets rejected due to Pod m4 is unschedulable even "
        "after PostFilter: 0/2 nodes are available:"
    )
