"""The pod scheduling engine: a sans-I/O state machine (DESIGN §8, one engine, two shells).

`handle(event, now)` folds one cluster event into the engine's state (nodes, every pod by key,
the pods counted on each node, watched objects) and returns the actions it implies (a binding
that failed is reported, a Permit wait released...). `schedule(now)` runs one scheduling cycle
per ready pod and returns the actions decided, in order, with a `WakeAt` last when a timer is
pending. The engine never reads a clock: `now` is always given, so the controller and the
simulator (and the tests) drive the same code on real or virtual time.

A scheduling cycle is kube-scheduler's: PreFilter, Filter (masks over the snapshot's rows, with
the requests of pods nominated to a node at the pod's priority or above added on it), PostFilter
(preemption) when no node is left, Score (weighted sum of each plugin's normalized vector; the
highest total wins, ties to the lowest row, i.e. the first node by name), Reserve, Permit, then
binding: a `BindPod` action, the pod *assumed* on its node (counted) until a `BindResult` or a
pod event shows it bound. Any failure after Reserve runs Unreserve in reverse order and forgets
the assumption. A plugin that raises is a bug in that plugin: the pod gets an ERROR (backoff) and
the engine goes on.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from apis.core import Node, Pod
from apis.meta import KubeObject
from apis.quantity import Quantity
from placement.arrays import BoolMask, RowIndex
from placement.pods.events import (
    Action,
    BindPod,
    BindResult,
    ClusterEvent,
    DeletePod,
    EmitEvent,
    NodeEvent,
    ObjectEvent,
    PatchPodStatus,
    PodEvent,
    WakeAt,
)
from placement.pods.framework import (
    Diagnosis,
    FilterResult,
    PodCode,
    PodCycle,
    PodInfo,
    PodStatus,
    PostFilterResult,
    Profile,
    pod_key,
)
from placement.pods.layers import PriorityLayers
from placement.pods.nodes import NodeSnapshot, NodeTable, ResourceMatrix
from placement.pods.queue import QueuedPod, SchedulingQueue
from placement.pods.requests import Requests, non_zero_requests, pod_requests

__all__ = [
    "DEFAULT_SCHEDULER",
    "Engine",
    "EngineStats",
    "go_duration",
    "scheduled_condition",
]

DEFAULT_SCHEDULER = "default-scheduler"
"""The scheduler a pod without `spec.schedulerName` belongs to (not ours)."""
NO_NODES = "no nodes available to schedule pods"
MAX_SHAPES = 4096  # pod resource shapes whose requests are kept (then forgotten at once)
SKIPPED = "engine.skipped"  # cycle.scratch: ids of the plugins whose PreFilter said SKIP


def go_duration(value: timedelta) -> str:
    """A duration as Go prints a time.Duration (`10s`, `1m30s`, `1.5s`), for kube's messages."""
    micros = value // timedelta(microseconds=1)
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = rest / 1_000_000
    text = f"{seconds:.6f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def scheduled_condition(reason: str, message: str) -> dict[str, Any]:
    """The PodScheduled=False condition kube-scheduler writes on a pod it could not place."""
    return {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}


@dataclass
class EngineStats:
    """Counters for metrics (kube-scheduler's names in the controller)."""

    attempts: dict[str, int] = field(
        default_factory=lambda: {"scheduled": 0, "unschedulable": 0, "error": 0}
    )
    """Scheduling attempts by result (`scheduler_schedule_attempts_total{result}`):
    "scheduled" counts confirmed bindings, "error" plugin errors and failed bindings."""
    preemption_attempts: int = 0
    victims: int = 0
    pod_attempts: dict[str, int] = field(default_factory=dict)
    """Attempts per pod key, while the engine knows the pod."""
    handler_errors: int = 0
    cycles: int = 0


@dataclass
class _Assumed:
    """A pod placed by a cycle and counted on its node until its binding is seen."""

    info: PodInfo
    node: str
    cycle: PodCycle
    attempts: int
    binding: bool = False  # a BindPod went out (or a Bind plugin took it)
    confirmed: bool = False  # PostBind ran and Scheduled was reported


@dataclass
class _Waiting:
    """A pod held at Permit."""

    info: PodInfo
    node: str
    pending: dict[str, timedelta]  # plugin -> its timeout
    started: datetime
    deadline: datetime


class _PluginError(Exception):
    """A plugin raised: carries the status the pod gets."""

    def __init__(self, status: PodStatus) -> None:
        super().__init__(status.message)
        self.status = status


class _View:
    """The read-only `ClusterView` plugins get."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def pod(self, key: str) -> PodInfo | None:
        return self._engine._pods.get(key)

    def pods_on(self, node: str) -> Sequence[PodInfo]:
        return tuple(self._engine._on_node.get(node, {}).values())

    def nominated_on(self, node: str) -> Sequence[PodInfo]:
        return tuple(self._engine._nominated_on.get(node, {}).values())

    def pods_in(self, namespace: str) -> Iterable[PodInfo]:
        return tuple(self._engine._by_ns.get(namespace, {}).values())

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        return MappingProxyType(self._engine._objects.get(kind, {}))


class _WaitingHandle:
    """`WaitingPods` for plugins: allow or reject pods held at Permit."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def waiting(self) -> Iterable[PodInfo]:
        return tuple(w.info for w in self._engine._waiting.values())

    def allow(self, key: str, plugin: str) -> None:
        self._engine._allow(key, plugin)

    def reject(self, key: str, plugin: str, message: str) -> None:
        self._engine._reject_waiting(key, plugin, message)


class _Host:
    """`CycleHost`: the engine's services for plugins that re-run filters (preemption)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def run_filters(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> tuple[BoolMask, Diagnosis]:
        engine = self._engine
        return engine._filter(cycle, pod, engine._with_nominated(pod, nodes), candidates)

    def fits(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> BoolMask:
        """`run_filters` without the reasons, for searches that only need the rows that fit
        (gang preemption tries many hypothetical clusters)."""
        engine = self._engine
        mask, _ = engine._filter(
            cycle, pod, engine._with_nominated(pod, nodes), candidates, explain=False
        )
        return mask

    def plugins(self) -> Sequence[object]:
        return self._engine._plugins

    def requested_below(self, priority: int, nodes: NodeSnapshot) -> ResourceMatrix:
        return self._engine._layers.below(priority, nodes)

    def preempting(self, key: str) -> bool:
        return key in self._engine._preempting

    def activate(self, keys: Iterable[str]) -> None:
        engine = self._engine
        for key in keys:
            engine.queue.activate(key, engine._now)

    @property
    def layers(self) -> PriorityLayers:
        return self._engine._layers


class Engine:
    """The pod scheduler's state machine; see the module docstring."""

    def __init__(
        self,
        profile: Profile,
        *,
        backoff_initial: timedelta = timedelta(seconds=1),
        backoff_max: timedelta = timedelta(seconds=10),
        unschedulable_flush: timedelta = timedelta(minutes=5),
    ) -> None:
        self.profile = profile
        plugins: list[object] = []
        for plugin in _profile_plugins(profile):
            if all(plugin is not p for p in plugins):
                plugins.append(plugin)
        self._plugins: tuple[object, ...] = tuple(plugins)
        self.queue = SchedulingQueue(
            _queue_sort_key(profile, self._plugins),
            backoff_initial=backoff_initial,
            backoff_max=backoff_max,
            unschedulable_flush=unschedulable_flush,
        )
        self.stats = EngineStats()
        self._table = NodeTable()
        self._nodes: dict[str, Node] = {}
        self._pods: dict[str, PodInfo] = {}
        self._by_ns: dict[str, dict[str, PodInfo]] = {}
        self._on_node: dict[str, dict[str, PodInfo]] = {}  # counted: bound + assumed
        self._counted: dict[str, str] = {}  # pod key -> node it is counted on
        self._assumed: dict[str, _Assumed] = {}
        self._waiting: dict[str, _Waiting] = {}
        self._nominated: dict[str, str] = {}  # pending pod key -> nominated node
        self._nominated_on: dict[str, dict[str, PodInfo]] = {}
        # priority -> (names, resources, the requests of the pods nominated at that priority
        # or above per row), kept up to date as nominations come and go: a gang's many
        # nominations are not summed again for every cycle.
        self._nominated_extra: dict[
            int, tuple[tuple[str, ...], tuple[str, ...], ResourceMatrix]
        ] = {}
        self._preempting: dict[str, str] = {}  # victim key -> uid, deleted by a preemption
        self._objects: dict[str, dict[str, KubeObject]] = {}
        self._out: list[Action] = []
        self._layers = PriorityLayers(self._counted_pods)
        self.cluster = _View(self)
        self._waiting_handle = _WaitingHandle(self)
        self._host = _Host(self)
        self._now = datetime.min.replace(tzinfo=UTC)  # the time of the current call
        self._all_rows: BoolMask = np.ones(0, dtype=bool)
        self._all_index: RowIndex = np.arange(0, dtype=np.intp)
        # (requests, non-zero requests) per resource shape of a pod: most pods share a few.
        self._requests: dict[Hashable, tuple[Requests, Requests]] = {}

    # --- public API --------------------------------------------------------------------------

    def handle(self, event: ClusterEvent, now: datetime) -> list[Action]:
        """Fold one event into the state; returns the actions it implies."""
        self._now = now
        if isinstance(event, PodEvent):
            self._on_pod(event, now)
        elif isinstance(event, NodeEvent):
            self._on_node_event(event, now)
        elif isinstance(event, ObjectEvent):
            self._on_object(event)
        elif isinstance(event, BindResult):
            self._on_bind_result(event, now)
        self._feed_handlers(event, now)
        return self._drain()

    def handle_many(self, events: Iterable[ClusterEvent], now: datetime) -> list[Action]:
        """`handle` each event in order (the same state and actions), with the node arrays
        rebuilt once at the end instead of after every node or pod: an initial sync, or the
        burst of events a shell collected since its last call."""
        actions: list[Action] = []
        with self._table.bulk():
            for event in events:
                actions.extend(self.handle(event, now))
        return actions

    def schedule(self, now: datetime, limit: int | None = None) -> list[Action]:
        """Release the pods whose time came, expire Permit waits, then try ready pods in
        activeQ order until none is left or `limit` were tried."""
        self._now = now
        self.queue.flush(now)
        self._expire_waits(now)
        tried = 0
        while limit is None or tried < limit:
            queued = self.queue.pop()
            if queued is None:
                break
            tried += 1
            self._attempt(queued, now)
        actions = self._drain()
        wake = self.next_wake()
        if wake is not None:
            actions.append(WakeAt(wake))
        return actions

    def next_wake(self) -> datetime | None:
        """When `schedule` has something to do that no event will announce."""
        times = [w.deadline for w in self._waiting.values()]
        queued = self.queue.next_wake()
        if queued is not None:
            times.append(queued)
        return min(times) if times else None

    def simulation_report(self) -> list[str]:
        """What the plugins that keep a story report (gangs, quotas, preemptions), for
        `scheduler simulate`."""
        lines: list[str] = []
        for plugin in self._plugins:
            report = getattr(plugin, "simulation_report", None)
            if callable(report):
                lines.extend(report(self.cluster, self._now))
        return lines

    def queue_sizes(self) -> dict[str, int]:
        return self.queue.sizes()

    def nodes(self) -> NodeSnapshot:
        """The current node snapshot (read-only)."""
        return self._table.snapshot()

    def assumed(self) -> Mapping[str, str]:
        """Pods placed but whose binding is not seen yet: key -> node."""
        return {key: a.node for key, a in self._assumed.items()}

    def waiting(self) -> Mapping[str, str]:
        """Pods held at Permit: key -> node."""
        return {key: w.node for key, w in self._waiting.items()}

    def nominated(self) -> Mapping[str, str]:
        """Pending pods nominated to a node by a preemption: key -> node."""
        return dict(self._nominated)

    # --- events ------------------------------------------------------------------------------

    def _ours(self, pod: Pod) -> bool:
        return (pod.spec.scheduler_name or DEFAULT_SCHEDULER) == self.profile.scheduler_name

    def _on_pod(self, event: PodEvent, now: datetime) -> None:
        pod = event.pod
        key = pod_key(pod.metadata.namespace, pod.metadata.name)
        old = self._pods.get(key)
        if old is not None and old.uid != (pod.metadata.uid or "") and event.type != "Deleted":
            self._forget_pod(key, now)  # replaced by a new pod of the same name
            old = None
        if event.type == "Deleted":
            if old is not None and old.uid == (pod.metadata.uid or old.uid):
                self._forget_pod(key, now)
            return
        info = self._info(pod, old)
        self._pods[key] = info
        self._by_ns.setdefault(info.namespace, {})[key] = info
        node = info.node_name
        if node:
            self._on_bound(info, node, old, now)
            return
        # A pending pod.
        if info.terminating or not self._ours(pod):
            self.queue.remove(key)
            self._drop_nomination(key)
            return
        self._track_nomination(info)
        if key in self._assumed or key in self._waiting:
            assumed = self._assumed.get(key)
            if assumed is not None:
                assumed.info = info
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.info = info
            return
        queued = self.queue.get(key)
        if queued is None:
            self.queue.add(info, now)
        else:
            changed = old is None or _spec_changed(old.pod, pod)
            self.queue.update(info, now, changed=changed)

    def _on_bound(self, info: PodInfo, node: str, old: PodInfo | None, now: datetime) -> None:
        key = info.key
        self.queue.remove(key)
        self._drop_nomination(key)
        waiting = self._waiting.pop(key, None)
        assumed = self._assumed.pop(key, None)
        if assumed is not None:
            if assumed.node == node:
                self._confirm(assumed)  # once: a BindResult may have confirmed it already
            else:  # bound elsewhere by someone else: release what we reserved
                self._unreserve(assumed.cycle, assumed.info, assumed.node)
        elif waiting is not None:
            pass
        was_counted = self._counted.get(key)
        if info.finished:
            if was_counted is not None:
                self._uncount(key)
                self._move_all(now)  # an assigned pod finished: its room may help
            return
        self._count(info, node)

    def _forget_pod(self, key: str, now: datetime) -> None:
        """A pod is gone: stop counting it, drop it from the queue, release its Permit wait
        or assumption, and retry the pods it may have blocked."""
        info = self._pods.pop(key, None)
        if info is not None:
            ns = self._by_ns.get(info.namespace)
            if ns is not None:
                ns.pop(key, None)
                if not ns:
                    del self._by_ns[info.namespace]
        self.queue.remove(key)
        self._preempting.pop(key, None)
        self.stats.pod_attempts.pop(key, None)
        helped = self._drop_nomination(key)
        waiting = self._waiting.pop(key, None)
        assumed = self._assumed.pop(key, None)
        if assumed is not None:
            self._unreserve(assumed.cycle, assumed.info, assumed.node)
            helped = True
        elif waiting is not None:
            helped = True
        if key in self._counted:
            self._uncount(key)
            helped = True
        if helped:
            self._move_all(now)

    def _on_node_event(self, event: NodeEvent, now: datetime) -> None:
        node = event.node
        name = node.metadata.name or ""
        if event.type == "Deleted":
            self._nodes.pop(name, None)
            self._table.remove_node(name)
            self._layers.invalidate()
            return
        old = self._nodes.get(name)
        self._nodes[name] = node
        if old is not None and not _node_changed(old, node):
            return
        self._table.put_node(node)
        self._layers.invalidate()
        self._move_all(now)

    def _on_object(self, event: ObjectEvent) -> None:
        obj = event.obj
        kind = obj.KIND or (obj.kind or "")
        meta = obj.metadata
        key = pod_key(meta.namespace, meta.name) if obj.NAMESPACED else (meta.name or "")
        objects = self._objects.setdefault(kind, {})
        if event.type == "Deleted":
            objects.pop(key, None)
        else:
            objects[key] = obj

    def _on_bind_result(self, result: BindResult, now: datetime) -> None:
        assumed = self._assumed.get(result.key)
        if assumed is None or assumed.info.uid != result.uid or not assumed.binding:
            return
        if result.ok:
            self._confirm(assumed)
            return
        del self._assumed[result.key]
        self._unreserve(assumed.cycle, assumed.info, assumed.node)
        self._uncount(result.key)
        if result.conflict:  # someone else decided (bound, or the pod is gone): no retry
            self.queue.remove(result.key)
            return
        self.stats.attempts["error"] += 1
        message = f"Binding rejected: {result.message}" if result.message else "Binding rejected"
        self._report(assumed.info, "SchedulerError", message)
        self.queue.requeue(assumed.info, now, unschedulable=False, attempts=assumed.attempts)
        self._move_all(now)  # the room it held is free again

    def _feed_handlers(self, event: ClusterEvent, now: datetime) -> None:
        for handler in self.profile.handlers:
            try:
                helps = handler.on_event(event, self.cluster)
            except Exception:  # a plugin bug must not stop the engine
                self.stats.handler_errors += 1
                continue
            if helps:
                self.queue.move_rejected_by(now, handler.name)

    def _move_all(self, now: datetime) -> None:
        self.queue.move_unschedulable(now)

    # --- pods and nodes ----------------------------------------------------------------------

    def _info(self, pod: Pod, old: PodInfo | None) -> PodInfo:
        """PodInfo with the priority resolved (kept from the first sighting when the pod and
        its class did not say otherwise: admission fixes a pod's priority at creation)."""
        priority, never = self._priority(pod)
        if old is not None and pod.spec.priority is None:
            priority = old.priority
        shape = _resource_shape(pod)
        requests = self._requests.get(shape)
        if requests is None:
            if len(self._requests) >= MAX_SHAPES:
                self._requests.clear()
            requests = self._requests[shape] = (pod_requests(pod), non_zero_requests(pod))
        return PodInfo.of(pod, priority=priority, preempt_never=never, requests=requests)

    def _priority(self, pod: Pod) -> tuple[int, bool]:
        spec = pod.spec
        classes = self._objects.get("PriorityClass", {})
        cls: Any = None
        if spec.priority_class_name:
            cls = classes.get(spec.priority_class_name)
        else:
            defaults = sorted(
                (name for name, c in classes.items() if getattr(c, "global_default", False)),
            )
            if defaults:
                cls = classes[defaults[0]]
        value = getattr(cls, "value", 0) if cls is not None else 0
        priority = spec.priority if spec.priority is not None else int(value)
        if spec.preemption_policy is not None:
            never = spec.preemption_policy == "Never"
        else:
            never = cls is not None and getattr(cls, "preemption_policy", None) == "Never"
        return priority, never

    def _count(self, info: PodInfo, node: str) -> None:
        key = info.key
        previous = self._counted.get(key)
        if previous is not None:
            self._uncount(key)
        self._table.add_pod(key, node, info.requests, info.non_zero)
        self._counted[key] = node
        self._on_node.setdefault(node, {})[key] = info
        self._layers.add(node, info.priority, info.requests)

    def _uncount(self, key: str) -> None:
        node = self._counted.pop(key, None)
        if node is None:
            return
        self._table.remove_pod(key)
        pods = self._on_node.get(node)
        info = pods.pop(key, None) if pods is not None else None
        if pods is not None and not pods:
            del self._on_node[node]
        if info is not None:
            self._layers.add(node, info.priority, info.requests, sign=-1)

    def _counted_pods(self) -> Iterator[tuple[str, int, Mapping[str, int]]]:
        for node, pods in self._on_node.items():
            for info in pods.values():
                yield node, info.priority, info.requests

    def _track_nomination(self, info: PodInfo) -> None:
        """status.nominatedNodeName of a pending pod; an update without one keeps the node
        the engine nominated (its patch may not be seen yet), as kube's nominator does."""
        node = info.nominated_node or self._nominated.get(info.key)
        if node:
            self._set_nomination(info, node)

    def _set_nomination(self, info: PodInfo, node: str) -> None:
        self._drop_nomination(info.key)
        self._nominated[info.key] = node
        self._nominated_on.setdefault(node, {})[info.key] = info
        self._adjust_nominated(info, node, 1)

    def _adjust_nominated(self, info: PodInfo, node: str, sign: int) -> None:
        """Add (or take away) one nominated pod in the kept sums."""
        for priority, (names, resources, extra) in list(self._nominated_extra.items()):
            if info.priority < priority:
                continue
            row = bisect.bisect_left(names, node)
            if row >= len(names) or names[row] != node:
                continue
            for col, resource in enumerate(resources):
                amount = info.requests.get(resource)
                if amount:
                    extra[row, col] += sign * amount

    def _drop_nomination(self, key: str) -> bool:
        node = self._nominated.pop(key, None)
        if node is None:
            return False
        pods = self._nominated_on.get(node)
        if pods is not None:
            info = pods.pop(key, None)
            if not pods:
                del self._nominated_on[node]
            if info is not None:
                self._adjust_nominated(info, node, -1)
        return True

    def _with_nominated(self, pod: PodInfo, nodes: NodeSnapshot) -> NodeSnapshot:
        """The snapshot with the requests of the pods nominated at the pod's priority or
        above added on their nodes (kube's RunFilterPluginsWithNominatedPods), the pod's own
        nomination left out. The sum per priority is kept until a nomination changes (a
        gang preemption nominates many pods, and its search filters many times)."""
        if not self._nominated_on:
            return nodes
        cached = self._nominated_extra.get(pod.priority)
        if (
            cached is not None
            and (cached[0] is nodes.names or cached[0] == nodes.names)
            and (cached[1] is nodes.resources or cached[1] == nodes.resources)
        ):
            extra: ResourceMatrix | None = cached[2]
        else:
            extra = self._nominated_sum(pod.priority, nodes)
            if len(self._nominated_extra) >= 16:
                self._nominated_extra.clear()
            kept = extra if extra is not None else np.zeros_like(nodes.requested)
            self._nominated_extra[pod.priority] = (nodes.names, nodes.resources, kept)
        if extra is not None and not extra.any():
            extra = None
        own = self._nominated.get(pod.key)
        if extra is not None and own is not None:
            mine = self._nominated_on.get(own, {}).get(pod.key)
            row = nodes.row_of(own)
            if mine is not None and mine.priority >= pod.priority and row is not None:
                extra = extra.copy()
                extra[row] -= nodes.vector(mine.requests)
        if extra is None:
            return nodes
        return dataclasses.replace(nodes, requested=nodes.requested + extra)

    def _nominated_sum(self, priority: int, nodes: NodeSnapshot) -> ResourceMatrix | None:
        """Per row, the requests of the pods nominated there at `priority` or above (None
        when there is none)."""
        extra: ResourceMatrix | None = None
        for node, pods in self._nominated_on.items():
            row = None
            for other in pods.values():
                if other.priority < priority:
                    continue
                if row is None:
                    row = nodes.row_of(node)
                    if row is None:
                        break
                if extra is None:
                    extra = np.zeros_like(nodes.requested)
                extra[row] += nodes.vector(other.requests)
        return extra

    # --- the scheduling cycle ----------------------------------------------------------------

    def _attempt(self, queued: QueuedPod, now: datetime) -> None:
        info = queued.info
        self.stats.cycles += 1
        self.stats.pod_attempts[info.key] = queued.attempts
        cycle = PodCycle(now, self.cluster, self._waiting_handle, host=self._host)
        try:
            self._cycle(cycle, queued)
        except _PluginError as failure:
            self._error(cycle, info, None, failure.status, queued.attempts)

    def _error(
        self, cycle: PodCycle, info: PodInfo, node: str | None, status: PodStatus, attempts: int
    ) -> None:
        if node is not None:
            self._forget_assumption(cycle, info, node)
        self.stats.attempts["error"] += 1
        self._report(info, "SchedulerError", status.message or f"plugin {status.plugin} failed")
        self.queue.requeue(info, cycle.now, unschedulable=False, attempts=attempts)

    def _cycle(self, cycle: PodCycle, queued: QueuedPod) -> None:
        info = queued.info
        nodes = self._table.snapshot()
        if nodes.size == 0:
            self._unschedulable(cycle, info, NO_NODES, (), queued)
            return
        # PreFilter
        skipped: set[int] = set()
        cycle.scratch[SKIPPED] = skipped
        candidates = self._everywhere(nodes.size)
        restricting: list[str] = []
        for plugin in self.profile.pre_filters:
            result = _call(plugin.name, plugin.pre_filter, cycle, info, nodes)
            status = result.status
            if status.code == PodCode.SKIP:
                skipped.add(id(plugin))
                continue
            if status.code >= PodCode.ERROR:
                raise _PluginError(_named(status, plugin.name))
            if not status.ok:
                message = status.message or f"rejected by plugin {plugin.name}"
                diagnosis = Diagnosis(
                    total_nodes=nodes.size,
                    counts={},
                    resolvable=np.full(nodes.size, status.code == PodCode.UNSCHEDULABLE),
                    pre_filter=message,
                    plugins=frozenset({plugin.name}),
                )
                self._failed(cycle, info, nodes, diagnosis, queued)
                return
            if result.nodes is not None:
                restricting.append(plugin.name)
                candidates = candidates & result.nodes
                if not candidates.any():
                    names = restricting
                    message = (
                        f"node(s) didn't satisfy plugin {names[0]}"
                        if len(names) == 1
                        else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                    )
                    diagnosis = Diagnosis(
                        total_nodes=nodes.size,
                        counts={},
                        resolvable=np.zeros(nodes.size, dtype=bool),
                        pre_filter=message,
                        plugins=frozenset(names),
                    )
                    self._failed(cycle, info, nodes, diagnosis, queued)
                    return
        filtered = self._with_nominated(info, nodes)
        # The nominated node first: a preemptor lands where it made room.
        nominated = info.nominated_node or self._nominated.get(info.key)
        if nominated is not None:
            row = nodes.row_of(nominated)
            if row is not None and candidates[row]:
                only = np.zeros(nodes.size, dtype=bool)
                only[row] = True
                fits, _ = self._filter(cycle, info, filtered, only, explain=False)
                if fits[row]:
                    self._place(cycle, queued, nominated)
                    return
        feasible, diagnosis = self._filter(cycle, info, filtered, candidates, explain=False)
        if restricting:
            outside = ~candidates
            if outside.any():
                message = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(restricting))}]"
                counts = dict(diagnosis.counts)
                counts[message] = counts.get(message, 0) + int(outside.sum())
                diagnosis = dataclasses.replace(
                    diagnosis,
                    counts=counts,
                    plugins=diagnosis.plugins | frozenset(restricting),
                )
        count = int(np.count_nonzero(feasible))
        if count == 0:
            self._failed(cycle, info, nodes, diagnosis, queued)
            return
        rows = self._all_row_index(nodes.size) if count == nodes.size else np.flatnonzero(feasible)
        best = int(rows[0] if count == 1 else rows[self._best(cycle, info, nodes, rows)])
        self._place(cycle, queued, nodes.names[best])

    def _best(self, cycle: PodCycle, info: PodInfo, nodes: NodeSnapshot, rows: RowIndex) -> int:
        """The position in `rows` of the highest weighted total (the first on ties). A
        weighted vector of zeros changes no total and is skipped (NodeAffinity without
        preferences); the first vector kept starts the total (one array less to add)."""
        total: npt.NDArray[np.int64] | None = None
        for scorer, weight in self.profile.scores:
            vector = _call(scorer.name, scorer.score, cycle, info, nodes, rows)
            if weight != 1:
                if not np.count_nonzero(vector):
                    continue
                vector = vector * weight
                if total is None:
                    total = vector.astype(np.int64, copy=False)
                    continue
            elif total is None:
                total = vector.astype(np.int64)  # a copy: the plugin's array stays as it was
                continue
            total += vector
        return 0 if total is None else int(np.argmax(total))

    def _all_row_index(self, size: int) -> RowIndex:
        """0..size-1, shared and read-only: the rows of a pod that fits everywhere."""
        index = self._all_index
        if index.size != size:
            index = np.arange(size, dtype=np.intp)
            index.flags.writeable = False
            self._all_index = index
        return index

    def _everywhere(self, size: int) -> BoolMask:
        """An all-True mask of `size` rows, shared and read-only (one per cluster size)."""
        mask = self._all_rows
        if mask.size != size:
            mask = np.ones(size, dtype=bool)
            mask.flags.writeable = False
            self._all_rows = mask
        return mask

    def _filter(
        self,
        cycle: PodCycle,
        info: PodInfo,
        nodes: NodeSnapshot,
        candidates: BoolMask,
        *,
        explain: bool = True,
    ) -> tuple[BoolMask, Diagnosis]:
        """Run the Filter plugins; a row's reasons come from the first filter removing it.

        The diagnosis is built only when asked (`explain`) or when no row is left: a pod that
        fits somewhere does not pay for the reasons of the nodes it does not fit."""
        skipped: set[int] = cycle.scratch.get(SKIPPED, set())
        removals: list[tuple[str, FilterResult, BoolMask]] = []
        current = candidates
        remaining = int(np.count_nonzero(current))
        for plugin in self.profile.filters:
            if not remaining:
                break
            if id(plugin) in skipped:
                continue
            result = _call(plugin.name, plugin.filter, cycle, info, nodes, current)
            if result.status.code >= PodCode.ERROR:
                raise _PluginError(_named(result.status, plugin.name))
            if result.mask is current:
                continue  # nothing removed (the usual answer)
            kept = current & result.mask
            left = int(np.count_nonzero(kept))
            if left != remaining:
                removals.append((plugin.name, result, current & ~kept))
            current, remaining = kept, left
        if explain or not remaining:
            return current, _diagnose(nodes.size, removals)
        return current, _NO_DIAGNOSIS

    def _failed(
        self,
        cycle: PodCycle,
        info: PodInfo,
        nodes: NodeSnapshot,
        diagnosis: Diagnosis,
        queued: QueuedPod,
    ) -> None:
        """No node fits: PostFilter (preemption), then report and park the pod."""
        messages: list[str] = []
        nominated: str | None = None
        clear = False
        freed = False
        for plugin in self.profile.post_filters:
            result: PostFilterResult = _call(
                plugin.name, plugin.post_filter, cycle, info, nodes, diagnosis
            )
            status = result.status
            if status.code >= PodCode.ERROR:
                raise _PluginError(_named(status, plugin.name))
            if result.nominated_node == "":
                clear = True
            if status.ok and result.nominated_node:
                nominated = result.nominated_node
                freed = self._preempt(cycle, info, result)
                break
            if status.message:
                messages.append(status.message)
            if status.code == PodCode.UNRESOLVABLE:
                break  # kube: UnschedulableAndUnresolvable ends the PostFilter chain
        if messages and nominated is None:
            diagnosis = dataclasses.replace(diagnosis, post_filter=", ".join(messages))
        message = diagnosis.message()
        if nominated is not None:
            self._set_nomination(info, nominated)
        elif clear:
            had = self._drop_nomination(info.key) or bool(info.nominated_node)
            nominated = "" if had else None
        self._unschedulable(cycle, info, message, diagnosis.plugins, queued, nominated)
        if freed:  # victims rejected at Permit freed the room at once: no event will come
            self.queue.activate(info.key, cycle.now)

    def _preempt(self, cycle: PodCycle, info: PodInfo, result: PostFilterResult) -> bool:
        """Delete the victims (reject those held at Permit); True when some room was freed
        at once (a rejected waiting victim)."""
        node = result.nominated_node or ""
        freed = False
        self.stats.preemption_attempts += 1
        for victim in result.victims:
            if victim.key in self._preempting:
                continue
            if victim.key not in self._counted:
                continue  # released already (a waiting sibling of a rejected victim)
            if result.nominations:  # victims on several nodes: name the victim's own
                node = self._counted.get(victim.key) or result.nominated_node or ""
            self.stats.victims += 1
            if victim.key in self._waiting:
                # Held at Permit, not running: rejected (its node freed), not deleted (kube).
                self._reject_waiting(
                    victim.key, "preemption", f"preempted by {info.key} while waiting at Permit"
                )
                freed = True
                continue
            self._preempting[victim.key] = victim.uid
            self._out.append(
                DeletePod(
                    victim.key,
                    victim.uid,
                    reason=f"preempted by {info.key} on node {node}",
                    preemptor=info.key,
                )
            )
            self._out.append(
                EmitEvent(
                    regarding=("Pod", victim.key, victim.uid),
                    type="Normal",
                    reason="Preempted",
                    message=f"Preempted by pod {info.uid or info.key} on node {node}",
                    action="Preempting",
                    related=("Pod", info.key, info.uid),
                )
            )
        # Lower-priority pods nominated to that node lose their nomination (kube clears it).
        node = result.nominated_node or ""
        targets = {node} | {where for _, where in result.nominations}
        for target in sorted(targets):
            for other in list(self._nominated_on.get(target, {}).values()):
                if other.key != info.key and other.priority < info.priority:
                    self._drop_nomination(other.key)
                    self._out.append(PatchPodStatus(other.key, other.uid, nominated_node=""))
        # More pods nominated at once (a gang's other pending members).
        for key, where in result.nominations:
            member = self._pods.get(key)
            if (
                key == info.key
                or member is None
                or member.node_name
                or key in self._assumed
                or key in self._waiting
            ):
                continue
            self._set_nomination(member, where)
            self._out.append(PatchPodStatus(member.key, member.uid, nominated_node=where))
        return freed

    def _unschedulable(
        self,
        cycle: PodCycle,
        info: PodInfo,
        message: str,
        plugins: Iterable[str],
        queued: QueuedPod,
        nominated: str | None = None,
    ) -> None:
        self.stats.attempts["unschedulable"] += 1
        self._report(info, "Unschedulable", message, nominated)
        self.queue.requeue(
            info, cycle.now, unschedulable=True, rejected_by=plugins, attempts=queued.attempts
        )

    def _report(
        self, info: PodInfo, reason: str, message: str, nominated: str | None = None
    ) -> None:
        """PodScheduled=False (skipped when the pod already says so) and FailedScheduling."""
        condition = scheduled_condition(reason, message)
        if nominated is not None or not _has_condition(info.pod, condition):
            self._out.append(PatchPodStatus(info.key, info.uid, condition, nominated))
        self._out.append(
            EmitEvent(
                regarding=("Pod", info.key, info.uid),
                type="Warning",
                reason="FailedScheduling",
                message=message,
            )
        )

    def _place(self, cycle: PodCycle, queued: QueuedPod, node: str) -> None:
        """Assume the pod on the node, then Reserve, Permit and bind (or wait)."""
        info = queued.info
        self._assume(cycle, info, node, queued.attempts)
        for plugin in self.profile.reserves:
            try:
                status = _call(plugin.name, plugin.reserve, cycle, info, node)
            except _PluginError as failure:
                status = failure.status
            if not status.ok:
                self._forget_assumption(cycle, info, node)
                if status.code >= PodCode.ERROR:
                    self._error(cycle, info, None, _named(status, plugin.name), queued.attempts)
                else:
                    message = status.message or f"rejected by plugin {plugin.name} at Reserve"
                    self._unschedulable(cycle, info, message, (plugin.name,), queued)
                return
        pending: dict[str, timedelta] = {}
        for permit in self.profile.permits:
            try:
                result = _call(permit.name, permit.permit, cycle, info, node)
            except _PluginError as failure:
                self._error(cycle, info, node, failure.status, queued.attempts)
                return
            code = result.status.code
            if code == PodCode.WAIT:
                pending[permit.name] = result.timeout
            elif code >= PodCode.ERROR:
                self._error(cycle, info, node, _named(result.status, permit.name), queued.attempts)
                return
            elif not result.status.ok:
                self._forget_assumption(cycle, info, node)
                message = result.status.message or f"rejected by plugin {permit.name} at Permit"
                self._unschedulable(cycle, info, message, (permit.name,), queued)
                return
        if pending:
            timeout = min(pending.values())
            self._waiting[info.key] = _Waiting(
                info, node, pending, started=cycle.now, deadline=cycle.now + timeout
            )
            return
        self._bind(cycle, info, node)

    def _assume(self, cycle: PodCycle, info: PodInfo, node: str, attempts: int) -> None:
        self.queue.remove(info.key)
        self._drop_nomination(info.key)
        self._assumed[info.key] = _Assumed(info, node, cycle, attempts)
        self._count(info, node)

    def _forget_assumption(self, cycle: PodCycle, info: PodInfo, node: str) -> None:
        """Undo a placement: Unreserve in reverse order, stop counting the pod."""
        self._assumed.pop(info.key, None)
        self._waiting.pop(info.key, None)
        self._unreserve(cycle, info, node)
        if self._counted.get(info.key) == node:
            self._uncount(info.key)

    def _unreserve(self, cycle: PodCycle, info: PodInfo, node: str) -> None:
        for plugin in reversed(self.profile.reserves):
            try:
                plugin.unreserve(cycle, info, node)
            except Exception:  # a plugin bug must not stop the others' cleanup
                self.stats.handler_errors += 1

    def _bind(self, cycle: PodCycle, info: PodInfo, node: str) -> None:
        assumed = self._assumed.get(info.key)
        if assumed is None:
            return
        assumed.binding = True
        for plugin in self.profile.binds:
            try:
                status = _call(plugin.name, plugin.bind, cycle, info, node)
            except _PluginError as failure:
                status = failure.status
            if status.code == PodCode.SKIP:
                continue
            if status.ok:
                return  # the plugin binds it; its pod event confirms
            self._error(cycle, info, node, _named(status, plugin.name), assumed.attempts)
            return
        self._out.append(BindPod(info.key, info.uid, node))

    def _confirm(self, assumed: _Assumed) -> None:
        """The binding is done (BindResult ok, or the pod seen bound): PostBind, Scheduled."""
        if not assumed.binding or assumed.confirmed:
            return
        assumed.confirmed = True  # once
        info, node = assumed.info, assumed.node
        self.stats.attempts["scheduled"] += 1
        for plugin in self.profile.post_binds:
            try:
                plugin.post_bind(assumed.cycle, info, node)
            except Exception:
                self.stats.handler_errors += 1
        self._out.append(
            EmitEvent(
                regarding=("Pod", info.key, info.uid),
                type="Normal",
                reason="Scheduled",
                message=f"Successfully assigned {info.key} to {node}",
                action="Binding",
            )
        )

    # --- Permit waits ------------------------------------------------------------------------

    def _allow(self, key: str, plugin: str) -> None:
        waiting = self._waiting.get(key)
        if waiting is None:
            return
        waiting.pending.pop(plugin, None)
        if waiting.pending:
            return
        del self._waiting[key]
        assumed = self._assumed.get(key)
        if assumed is not None:
            self._bind(assumed.cycle, assumed.info, assumed.node)

    def _reject_waiting(self, key: str, plugin: str, message: str) -> None:
        waiting = self._waiting.pop(key, None)
        assumed = self._assumed.get(key)
        if waiting is None or assumed is None:
            return
        cycle = assumed.cycle
        if self._now > cycle.now:
            cycle.now = self._now  # rejected later than its cycle ran (a gang's sibling)
        self._forget_assumption(cycle, waiting.info, waiting.node)
        self._move_all(cycle.now)  # the room it held is free again (for the others)
        self.stats.attempts["unschedulable"] += 1
        self._report(waiting.info, "Unschedulable", message)
        self.queue.requeue(
            waiting.info,
            cycle.now,
            unschedulable=True,
            rejected_by=(plugin,),
            attempts=assumed.attempts,
        )

    def _expire_waits(self, now: datetime) -> None:
        due = sorted((w.deadline, key) for key, w in self._waiting.items() if w.deadline <= now)
        for _, key in due:
            waiting = self._waiting.get(key)
            assumed = self._assumed.get(key)
            if waiting is None or assumed is None:
                continue
            plugin, timeout = min(waiting.pending.items(), key=lambda item: (item[1], item[0]))
            assumed.cycle.now = now
            self._reject_waiting(
                key,
                plugin,
                f"rejected due to timeout after waiting {go_duration(timeout)} at plugin {plugin}",
            )

    # --- internals ---------------------------------------------------------------------------

    def _drain(self) -> list[Action]:
        out, self._out = self._out, []
        return out


_NO_DIAGNOSIS = Diagnosis(total_nodes=0, counts={}, resolvable=np.zeros(0, dtype=bool))


def _diagnose(size: int, removals: Sequence[tuple[str, FilterResult, BoolMask]]) -> Diagnosis:
    """Counts per message over the removed rows (each row under the filter that removed it,
    with every reason of that filter covering it) and the rows removed only by resolvable
    reasons."""
    counts: dict[str, int] = {}
    resolvable = np.zeros(size, dtype=bool)
    plugins: set[str] = set()
    for name, result, removed in removals:
        plugins.add(name)
        covered = np.zeros(size, dtype=bool)
        hard = np.zeros(size, dtype=bool)
        for reason in _call(name, result.all_reasons):
            rows = reason.rows & removed
            count = int(np.count_nonzero(rows))
            if not count:
                continue
            counts[reason.message] = counts.get(reason.message, 0) + count
            covered |= rows
            if not reason.resolvable:
                hard |= rows
        rest = removed & ~covered
        if rest.any():
            default = result.default
            message = (
                default.message if default is not None else f"node(s) didn't satisfy plugin {name}"
            )
            counts[message] = counts.get(message, 0) + int(np.count_nonzero(rest))
            if default is not None and not default.resolvable:
                hard |= rest
        resolvable |= removed & ~hard
    return Diagnosis(
        total_nodes=size, counts=counts, resolvable=resolvable, plugins=frozenset(plugins)
    )


def _call(plugin: str, method: Any, *args: Any) -> Any:
    """Call a plugin method; an exception becomes an ERROR status naming the plugin."""
    try:
        return method(*args)
    except Exception as exc:
        raise _PluginError(
            PodStatus.error(plugin, f"running plugin {plugin!r}: {type(exc).__name__}: {exc}")
        ) from exc


def _named(status: PodStatus, plugin: str) -> PodStatus:
    return status if status.plugin else dataclasses.replace(status, plugin=plugin)


def _queue_sort_key(profile: Profile, plugins: Sequence[object]) -> Any:
    """The profile's QueueSort key, or that of a plugin which replaces that QueueSort
    (`QueueSortOverride`: Coscheduling's order in place of PrioritySort)."""
    sort = profile.queue_sort
    for plugin in plugins:
        if plugin is sort:
            continue
        replaces = getattr(plugin, "replaces_queue_sort", None)
        key = getattr(plugin, "queue_sort_key", None)
        if replaces is not None and replaces == getattr(sort, "name", None) and callable(key):
            return key
    return sort.sort_key


def _profile_plugins(profile: Profile) -> Iterator[object]:
    yield profile.queue_sort
    yield from profile.pre_filters
    yield from profile.filters
    yield from profile.post_filters
    for plugin, _ in profile.scores:
        yield plugin
    yield from profile.reserves
    yield from profile.permits
    yield from profile.binds
    yield from profile.post_binds
    yield from profile.handlers


def _resource_shape(pod: Pod) -> Hashable:
    """What a pod's requests are computed from, as written (equal text, equal amounts)."""
    spec = pod.spec
    containers = tuple(
        _written(c.resources.requests if c.resources else None) for c in spec.containers
    )
    inits = tuple(
        (c.restart_policy, _written(c.resources.requests if c.resources else None))
        for c in spec.init_containers or ()
    )
    return containers, inits, _written(spec.overhead)


def _written(quantities: Mapping[str, Quantity] | None) -> tuple[tuple[str, str], ...]:
    return tuple((name, str(q.raw)) for name, q in quantities.items()) if quantities else ()


def _has_condition(pod: Pod, condition: Mapping[str, Any]) -> bool:
    status = pod.status
    for existing in (status.conditions if status else None) or ():
        if existing.get("type") == condition["type"]:
            return all(existing.get(k) == v for k, v in condition.items())
    return False


def _spec_changed(old: Pod, new: Pod) -> bool:
    """An update that may change where the pod fits (spec or labels), not a status echo."""
    return old.spec != new.spec or old.metadata.labels != new.metadata.labels


def _node_changed(old: Node, new: Node) -> bool:
    """A node update that may change what fits (kube's nodeSchedulingPropertiesChange)."""
    old_alloc = old.status.allocatable if old.status else None
    new_alloc = new.status.allocatable if new.status else None
    return (
        old.spec != new.spec or old.metadata.labels != new.metadata.labels or old_alloc != new_alloc
    )
