"""The pod scheduling engine, sans-I/O (one engine, two shells: docs/pod-scheduler.md).

`handle(event, now)` folds one cluster event into the engine's state and returns the actions it
implies (a binding that failed is reported, a Permit wait released...). `schedule(now)` runs one
scheduling cycle per ready pod and returns the actions decided, in order, with a `WakeAt` last
when a timer is pending. The engine never reads a clock: `now` is always given, so the
controller and the simulator (and the tests) drive the same code on real or virtual time.

`Engine` only coordinates kube-scheduler's parts, each in its own module with its contract on
its interface:

* `gating.Gatekeeper`: new pending pods a PreEnqueue plugin keeps out of the queue (gated);
* `queue.SchedulingQueue`: active, backoff and unschedulable pods; which pod is next;
* `cache.PodCache`: nodes, pods, what is counted on each node; assume / confirm / forget;
* `nominator.Nominator`: pods promised a node by a preemption, and the room they hold;
* `cycle.SchedulingCycle`: PreFilter, Filter, Score, PostFilter (and carrying out a preemption);
* `binding.BindingCycle`: Reserve, Permit and its waits, Bind, PostBind, Unreserve;
* `reporting.Reporter`: the actions of one call, conditions and events, the counters;
* `engine_views`: what plugins see of all this (`ClusterView`, `WaitingPods`, `CycleHost`).

A plugin that raises is a bug in that plugin: the pod gets an ERROR (backoff) and the engine
goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from apis.core import Pod
from placement.pods.backend.cache import PodCache
from placement.pods.backend.gating import Gatekeeper
from placement.pods.backend.nominator import Nominator
from placement.pods.backend.queue import QueuedPod, SchedulingQueue
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.podinfo import spec_changed
from placement.pods.framework.calls import PluginError
from placement.pods.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD_OR_UPDATE,
    Action,
    BindResult,
    ClusterEvent,
    NodeEvent,
    ObjectEvent,
    PodEvent,
    WakeAt,
    deaf_plugins,
)
from placement.pods.framework.interface import (
    PodCycle,
    PodInfo,
    Profile,
    QueueSortOverride,
    SimulationReport,
    declares,
    pod_key,
)
from placement.pods.framework.pod_reports import go_duration, scheduled_condition
from placement.pods.scheduler.binding import BindingCycle
from placement.pods.scheduler.cycle import SchedulingCycle
from placement.pods.scheduler.engine_views import EngineHost, EngineView, WaitingHandle
from placement.pods.scheduler.reporting import EngineStats, Reporter

__all__ = ["DEFAULT_SCHEDULER", "Engine", "EngineStats", "go_duration", "scheduled_condition"]

DEFAULT_SCHEDULER = "default-scheduler"
"""The scheduler a pod without `spec.schedulerName` belongs to (not ours)."""
BINDER = "DefaultBinder"
"""kube-scheduler's Bind plugin, whose work our `BindPod` action does (named in messages)."""


class Engine:
    """The pod scheduler's state machine; see the module docstring."""

    def __init__(
        self,
        profile: Profile,
        *,
        backoff_initial: timedelta = timedelta(seconds=1),
        backoff_max: timedelta = timedelta(seconds=10),
        unschedulable_flush: timedelta = timedelta(minutes=5),
        pop_from_backoff: bool = True,
    ) -> None:
        self.profile = profile
        plugins: list[object] = []
        for plugin in _profile_plugins(profile):
            if all(plugin is not p for p in plugins):
                plugins.append(plugin)
        self.plugins: tuple[object, ...] = tuple(plugins)
        self._deaf = deaf_plugins(self.plugins)
        self.queue = SchedulingQueue(
            _queue_sort_key(profile, self.plugins),
            backoff_initial=backoff_initial,
            backoff_max=backoff_max,
            unschedulable_flush=unschedulable_flush,
            pop_from_backoff=pop_from_backoff,
        )
        self.stats = EngineStats()
        self.now = datetime.min.replace(tzinfo=UTC)  # the time of the current call
        self.cache = PodCache()
        self.nominator = Nominator()
        self.reporter = Reporter(self.queue, self.stats)
        self.binding = BindingCycle(
            profile,
            self.cache,
            self.nominator,
            self.reporter,
            now=lambda: self.now,
            retry_all=self._retry_all,
        )
        self.cycles = SchedulingCycle(
            profile, self.cache, self.nominator, self.reporter, self.binding
        )
        self.cluster = EngineView(self.cache, self.nominator)
        self._waiting_handle = WaitingHandle(self.binding)
        self.gates = Gatekeeper(profile.pre_enqueues, self.cluster)
        self._host = EngineHost(
            self.cycles, self.cache, self.nominator, self.queue, self.plugins, lambda: self.now
        )

    # --- public API --------------------------------------------------------------------------

    def handle(self, event: ClusterEvent, now: datetime) -> list[Action]:
        """Fold one event into the state; returns the actions it implies."""
        self.now = now
        if isinstance(event, PodEvent):
            self._on_pod(event, now)
        elif isinstance(event, NodeEvent):
            self._on_node_event(event, now)
        elif isinstance(event, ObjectEvent):
            self._on_object(event)
        elif isinstance(event, BindResult):
            self._on_bind_result(event, now)
        self._feed_handlers(event, now)
        return self.reporter.drain()

    def handle_many(self, events: Iterable[ClusterEvent], now: datetime) -> list[Action]:
        """`handle` each event in order (the same state and actions), with the node arrays
        rebuilt once at the end instead of after every node or pod: an initial sync, or the
        burst of events a shell collected since its last call."""
        actions: list[Action] = []
        with self.cache.bulk():
            for event in events:
                actions.extend(self.handle(event, now))
        return actions

    def schedule(self, now: datetime, limit: int | None = None) -> list[Action]:
        """Release the pods whose time came, expire Permit waits, then try ready pods in
        activeQ order until none is left or `limit` were tried."""
        self.now = now
        self.queue.flush(now)
        self.binding.expire(now)
        self.reporter.out.extend(self.gates.due(now))
        tried = 0
        while limit is None or tried < limit:
            queued = self.queue.pop(now)
            if queued is None:
                break
            tried += 1
            self._attempt(queued, now)
        actions = self.reporter.drain()
        wake = self.next_wake()
        if wake is not None:
            actions.append(WakeAt(wake))
        return actions

    def next_wake(self) -> datetime | None:
        """When `schedule` has something to do that no event will announce."""
        timers = (self.binding.next_deadline(), self.queue.next_wake(), self.gates.next_report())
        times = [t for t in timers if t is not None]
        return min(times) if times else None

    def simulation_report(self) -> list[str]:
        """What the plugins that keep a story report (gangs, quotas, preemptions), for
        `scheduler simulate`."""
        lines: list[str] = []
        for plugin in self.plugins:
            if declares(plugin, SimulationReport):
                lines.extend(
                    cast(SimulationReport, plugin).simulation_report(self.cluster, self.now)
                )
        return lines

    def next_report(self) -> datetime | None:
        """When a pod held at PreEnqueue is due to be reported (`gating`), None when none is."""
        return self.gates.next_report()

    def queue_sizes(self) -> dict[str, int]:
        """Pending pods per queue; "gated" counts those held at PreEnqueue too."""
        sizes = self.queue.sizes()
        sizes["gated"] += len(self.gates)
        return sizes

    def nodes(self) -> NodeSnapshot:
        """The current node snapshot (read-only)."""
        return self.cache.snapshot()

    def assumed(self) -> Mapping[str, str]:
        """Pods placed but whose binding is not seen yet: key -> node."""
        return {a.info.key: a.node for a in self.cache.all_assumed()}

    def waiting(self) -> Mapping[str, str]:
        """Pods held at Permit: key -> node."""
        return {key: w.node for key, w in self.binding.waiting.items()}

    def nominated(self) -> Mapping[str, str]:
        """Pending pods nominated to a node by a preemption: key -> node."""
        return self.nominator.all()

    # --- events ------------------------------------------------------------------------------

    def _ours(self, pod: Pod) -> bool:
        return (pod.spec.scheduler_name or DEFAULT_SCHEDULER) == self.profile.scheduler_name

    def _on_pod(self, event: PodEvent, now: datetime) -> None:
        pod = event.pod
        key = pod_key(pod.metadata.namespace, pod.metadata.name)
        cache = self.cache
        old = cache.pod(key)
        if old is not None and old.uid != (pod.metadata.uid or "") and event.type != "Deleted":
            self._forget_pod(key, now)  # replaced by a new pod of the same name
            old = None
        if event.type == "Deleted":
            if old is not None and old.uid == (pod.metadata.uid or old.uid):
                self._forget_pod(key, now)
            return
        info = cache.info(pod, old)
        cache.put(info)
        node = info.node_name
        if node:
            self._on_bound(info, node, now)
            return
        # A pending pod.
        if info.terminating or not self._ours(pod):
            self.queue.remove(key)
            self.gates.drop(key)
            self.nominator.drop(key)
            return
        self.nominator.track(info)
        assumed = cache.assumed(key)
        waiting = self.binding.waiting.get(key)
        if assumed is not None or waiting is not None:
            if assumed is not None:
                assumed.info = info
            if waiting is not None:
                waiting.info = info
            return
        queued = self.queue.get(key)
        if queued is None:
            entered = self.gates.admit(info, now, event.queued_at)  # PreEnqueue
            if entered is not None:
                self.queue.add(info, now, entered)
        else:
            changed = old is None or spec_changed(old.pod, pod)
            self.queue.update(info, now, changed=changed)

    def _on_bound(self, info: PodInfo, node: str, now: datetime) -> None:
        key = info.key
        self.queue.remove(key)
        self.gates.drop(key)
        self.nominator.drop(key)
        self.binding.waiting.pop(key, None)
        assumed = self.cache.settle(key)
        if assumed is not None:
            if assumed.node == node:
                self.binding.confirm(assumed)  # once: a BindResult may have confirmed it
            else:  # bound elsewhere by someone else: release what we reserved
                self.binding.unreserve(assumed.cycle, assumed.info, assumed.node)
        if info.finished:
            if self.cache.uncount(key):
                self._retry_all(now)  # an assigned pod finished: its room may help
            return
        self.cache.count(info, node)

    def _forget_pod(self, key: str, now: datetime) -> None:
        """A pod is gone: stop counting it, drop it from the queue, release its Permit wait
        or assumption, and retry the pods it may have blocked."""
        self.cache.remove(key)
        self.queue.remove(key)
        self.gates.drop(key)
        self.cycles.preempting.pop(key, None)
        self.stats.pod_attempts.pop(key, None)
        helped = self.nominator.drop(key)
        waiting = self.binding.waiting.pop(key, None)
        assumed = self.cache.settle(key)
        if assumed is not None:
            self.binding.unreserve(assumed.cycle, assumed.info, assumed.node)
            helped = True
        elif waiting is not None:
            helped = True
        if self.cache.uncount(key):
            helped = True
        if helped:
            self._retry_all(now)

    def _on_node_event(self, event: NodeEvent, now: datetime) -> None:
        node = event.node
        if event.type == "Deleted":
            self.cache.remove_node(node.metadata.name or "")
        elif self.cache.put_node(node):
            self._retry_all(now, NODE_ADD_OR_UPDATE)

    def _on_object(self, event: ObjectEvent) -> None:
        obj = event.obj
        kind = obj.KIND or (obj.kind or "")
        meta = obj.metadata
        key = pod_key(meta.namespace, meta.name) if obj.NAMESPACED else (meta.name or "")
        self.cache.put_object(kind, key, None if event.type == "Deleted" else obj)

    def _on_bind_result(self, result: BindResult, now: datetime) -> None:
        assumed = self.cache.assumed(result.key)
        if assumed is None or assumed.info.uid != result.uid or not assumed.binding:
            return
        if result.ok:
            self.binding.confirm(assumed)
            return
        self.cache.settle(result.key)
        self.binding.unreserve(assumed.cycle, assumed.info, assumed.node)
        self.cache.uncount(result.key)
        if result.conflict:  # someone else decided (bound, or the pod is gone): no retry
            self.queue.remove(result.key)
            return
        self.stats.attempts["error"] += 1
        # kube-scheduler v1.36 wraps the error of the plugin that failed: DefaultBinder's
        # binding, or the PreBind plugin whose writes failed.
        point, plugin = ("PreBind", assumed.writes_by) if result.volumes else ("Bind", BINDER)
        message = f'running {point} plugin "{plugin or "VolumeBinding"}": {result.message}'
        self.reporter.report(assumed.info, "SchedulerError", message)
        self.queue.requeue(assumed.info, now, unschedulable=False, attempts=assumed.attempts)
        self._retry_all(now)  # the room it held is free again

    def _feed_handlers(self, event: ClusterEvent, now: datetime) -> None:
        for handler in self.profile.handlers:
            try:
                helps = handler.on_event(event, self.cluster)
            except Exception:  # a plugin bug must not stop the engine
                self.stats.handler_errors += 1
                continue
            if helps:
                only = None if helps is True else helps
                self.queue.move_rejected_by(now, handler.name, only)
                for info, entered in self.gates.release(handler.name, only, now):
                    self.queue.add(info, now, entered)

    def _retry_all(self, now: datetime, event: str = ASSIGNED_POD_DELETE) -> None:
        """Room was freed or a node changed: the unschedulable pods may fit now, but for those
        rejected only by plugins this event cannot help (`RequeueHints`)."""
        self.queue.move_unschedulable(now, deaf=self._deaf.get(event, frozenset()))

    # --- one attempt -------------------------------------------------------------------------

    def _attempt(self, queued: QueuedPod, now: datetime) -> None:
        info = queued.info
        self.stats.cycles += 1
        self.stats.pod_attempts[info.key] = queued.attempts
        cycle = PodCycle(now, self.cluster, self._waiting_handle, host=self._host)
        try:
            self.cycles.run(cycle, queued)
        except PluginError as failure:
            self.reporter.error(cycle, info, failure.status, queued.attempts)


def _queue_sort_key(profile: Profile, plugins: Sequence[object]) -> Any:
    """The profile's QueueSort key, or that of a plugin which replaces that QueueSort
    (`QueueSortOverride`: Coscheduling's order in place of PrioritySort)."""
    sort = profile.queue_sort
    for plugin in plugins:
        if plugin is sort or not declares(plugin, QueueSortOverride):
            continue
        override = cast(QueueSortOverride, plugin)
        if override.replaces_queue_sort == sort.name:
            return override.queue_sort_key
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
    yield from profile.pre_binds
    yield from profile.binds
    yield from profile.post_binds
    yield from profile.handlers
