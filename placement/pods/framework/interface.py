"""The pod framework: the extension points of one pod's scheduling, as kube-scheduler has them.

A new pending pod first passes PreEnqueue (may it enter the queue at all?). A scheduling cycle
for one pod runs QueueSort (which pod next), PreFilter (checks on the pod alone, may narrow the
nodes), Filter (boolean masks over the rows of a `NodeSnapshot`), then, when no node is left,
PostFilter (preemption); otherwise Score (a vector over the feasible rows, already normalized
to 0..100 by the plugin, weighted and summed by the engine), Reserve, Permit (allow / wait with
a timeout / reject). The binding cycle then sends PreBind's writes (volume
bindings) and binds (actions the shell performs), and runs PostBind once the binding is
confirmed. A failure after Reserve runs Unreserve in reverse order.

**Declaring extension points.** Every point is a `typing.Protocol` here. A plugin states the
points it implements by subclassing them (`class NodeResourcesFit(PreFilter, Filter, Score)`),
as kube-scheduler's plugins write `var _ framework.FilterPlugin = &Fit{}`: mypy then checks each
method's signature, and a class that declares a point without its method cannot be
instantiated. The profile builder places a plugin at exactly the points it declares
(`declared_points`) and refuses a configuration that enables it at another one; a method
spelled wrong is a plugin that declares a point it does not implement, never a hook silently
not called. Preemption's hooks are one Protocol, `PreemptionHooks`, whose methods have neutral
defaults: a plugin overrides the ones it needs (`overrides`).

Expected outcomes are values (`PodStatus`); a plugin that raises has a bug, and the engine turns
the exception into an ERROR status for that pod (the pod goes to backoff, the engine lives on).
Plugins see the cluster only through the read-only `ClusterView` the engine hands them
(`placement.pods.framework.views`); they do no I/O and never read a clock (`PodCycle.now`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.podinfo import PodInfo, pod_key
from placement.pods.framework.events import ClusterEvent
from placement.pods.framework.results import (
    POD_SUCCESS,
    SKIP,
    Diagnosis,
    FilterResult,
    PermitResult,
    PodCode,
    PodStatus,
    PostFilterResult,
    PreBindResult,
    PreFilterResult,
    Reason,
)
from placement.pods.framework.views import ClusterView, CycleHost, PodCycle, WaitingPods

__all__ = [
    "MAX_NODE_SCORE",
    "POD_SUCCESS",
    "POINTS",
    "SKIP",
    "Bind",
    "Candidate",
    "ClusterView",
    "CycleHost",
    "Diagnosis",
    "EventHandler",
    "Filter",
    "FilterResult",
    "Permit",
    "PermitResult",
    "PodCode",
    "PodCycle",
    "PodInfo",
    "PodStatus",
    "PostBind",
    "PostFilter",
    "PostFilterResult",
    "PreBind",
    "PreBindResult",
    "PreEnqueue",
    "PreFilter",
    "PreFilterResult",
    "PreemptionHooks",
    "Profile",
    "QueueSort",
    "QueueSortOverride",
    "Reason",
    "Reserve",
    "Score",
    "SimulationReport",
    "WaitingPods",
    "declared_points",
    "declares",
    "implements_point",
    "overrides",
    "pod_key",
]

MAX_NODE_SCORE = 100
"""The top of every plugin's normalized score (kube-scheduler's MaxNodeScore)."""


class PreEnqueue(Protocol):
    """Checks a new pending pod before it enters the scheduling queue (kube's PreEnqueue): a
    message keeps it out, gated (no attempt, no event), until an event this plugin's
    `EventHandler.on_event` names it for lets it pass; None lets it in. Cheap and read-only:
    it runs for every new pending pod."""

    name: str

    def pre_enqueue(self, pod: PodInfo, cluster: ClusterView) -> str | None: ...


class QueueSort(Protocol):
    name: str

    def sort_key(self, pod: PodInfo, queued_at: datetime) -> Any:
        """A key ordering the active queue (smallest first)."""
        ...


class QueueSortOverride(Protocol):
    """A plugin whose queue order replaces the QueueSort plugin named `replaces_queue_sort`
    when both are enabled (Coscheduling's replaces PrioritySort: a user of the defaults gets
    gang order without touching the queue sort configuration)."""

    name: str
    replaces_queue_sort: str

    def queue_sort_key(self, pod: PodInfo, queued_at: datetime) -> Any: ...


class PreFilter(Protocol):
    name: str

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult: ...


class Filter(Protocol):
    name: str

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult: ...


class PostFilter(Protocol):
    name: str

    def post_filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> PostFilterResult: ...


class Score(Protocol):
    """Scores the feasible rows (`rows`, ascending): a vector aligned with `rows`, normalized
    to 0..MAX_NODE_SCORE by the plugin; the engine multiplies by the weight and adds up."""

    name: str

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector: ...


class Reserve(Protocol):
    name: str

    def reserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus: ...

    def unreserve(self, cycle: PodCycle, pod: PodInfo, node: str) -> None: ...


class Permit(Protocol):
    name: str

    def permit(self, cycle: PodCycle, pod: PodInfo, node: str) -> PermitResult: ...


class PreBind(Protocol):
    """Runs before Bind (kube: volume binding): the writes it returns go out before the pod's
    binding; a status that is not ok unreserves the pod and retries it."""

    name: str

    def pre_bind(self, cycle: PodCycle, pod: PodInfo, node: str) -> PreBindResult: ...


class Bind(Protocol):
    """Decides how a pod is bound: SKIP lets the next binder (finally the default binding
    action) do it; SUCCESS means the plugin emitted its own actions."""

    name: str

    def bind(self, cycle: PodCycle, pod: PodInfo, node: str) -> PodStatus: ...


class PostBind(Protocol):
    name: str

    def post_bind(self, cycle: PodCycle, pod: PodInfo, node: str) -> None: ...


class EventHandler(Protocol):
    """A plugin that keeps state from cluster events (PodGroups, quotas, pods) and says which
    events may make the pods it rejected schedulable again."""

    name: str

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool | Set[str]:
        """Update the plugin's state; True when pods this plugin rejected should be retried,
        or the keys of those that should (kube's queueing hint: a gang's own members)."""
        ...


@dataclass(frozen=True)
class Candidate:
    """A preemption candidate: a node and the pods to delete for the pod, most important
    first (victims freeing quota headroom may be on other nodes); `violations`: how many of
    them a PodDisruptionBudget protects (`placement.pods.preemption.disruption`)."""

    node: str
    row: int
    victims: tuple[PodInfo, ...]
    violations: int = 0

    @property
    def highest(self) -> int:
        return self.victims[0].priority if self.victims else -(2**31) - 1


class PreemptionHooks(Protocol):
    """How a plugin restricts or extends preemption (kube: framework/preemption's Interface).

    Every method has a neutral default; a plugin overrides the ones it needs, and the
    preemptor calls only the overridden ones (`overrides`), in profile order. Two change the
    search itself when overridden: `preemption_victims` turns the per-priority shortcut off,
    `preemption_complete` makes rows without potential victims candidates too."""

    name: str

    def preemption_applies(self, cycle: PodCycle, pod: PodInfo) -> bool:
        """False switches off every other hook of this plugin for this pod."""
        return True

    def preemption_eligible(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, diagnosis: Diagnosis
    ) -> str | None:
        """A message when the pod may not preempt now (the first one wins); None lets it."""
        return None

    def preemption_victims(
        self, cycle: PodCycle, pod: PodInfo, node: str, pods: Sequence[PodInfo]
    ) -> Sequence[PodInfo] | None:
        """The potential victims on a node given the default list (its lower-priority pods):
        a new list to restrict or extend it, None to keep it."""
        return None

    def preemption_fits(
        self, cycle: PodCycle, pod: PodInfo, node: str, victims: Sequence[PodInfo]
    ) -> bool:
        """An extra condition, beyond the Filter plugins, for the pod to fit once `victims`
        are gone."""
        return True

    def preemption_complete(
        self, cycle: PodCycle, pod: PodInfo, candidate: Candidate
    ) -> Sequence[PodInfo] | None:
        """Victims anywhere in the cluster that the candidate also needs; None drops it."""
        return ()

    def preemption_chosen(self, cycle: PodCycle, pod: PodInfo, candidate: Candidate) -> None:
        """Told the candidate that was picked."""
        del cycle, pod, candidate  # nothing to do by default


class SimulationReport(Protocol):
    """A plugin with a story to tell at the end of `scheduler simulate` (gangs, quotas)."""

    name: str

    def simulation_report(self, cluster: ClusterView, now: datetime) -> list[str]: ...


POINTS: Mapping[type, tuple[str, ...]] = {
    PreEnqueue: ("pre_enqueue",),
    QueueSort: ("sort_key",),
    QueueSortOverride: ("queue_sort_key",),
    PreFilter: ("pre_filter",),
    Filter: ("filter",),
    PostFilter: ("post_filter",),
    Score: ("score",),
    Reserve: ("reserve", "unreserve"),
    Permit: ("permit",),
    PreBind: ("pre_bind",),
    Bind: ("bind",),
    PostBind: ("post_bind",),
    EventHandler: ("on_event",),
    PreemptionHooks: (),
    SimulationReport: ("simulation_report",),
}
"""Every Protocol a plugin may declare, with the methods that declaring it requires."""


def declares(plugin: object, point: type) -> bool:
    """True when the plugin's class states that it implements `point` (subclasses it)."""
    return point in type(plugin).__mro__


def declared_points(plugin: object) -> tuple[type, ...]:
    """The extension points the plugin's class declares, in `POINTS` order."""
    mro = type(plugin).__mro__
    return tuple(point for point in POINTS if point in mro)


def implements_point(plugin: object, point: type) -> bool:
    """True when the plugin's class declares `point` and defines each method it requires (a
    declaration whose method is missing or misspelt is refused, not silently skipped)."""
    if not declares(plugin, point):
        return False
    cls = type(plugin)
    return all(
        callable(getattr(cls, method, None)) and getattr(cls, method) is not getattr(point, method)
        for method in POINTS.get(point, ())
    )


def overrides(plugin: object, method: str) -> bool:
    """True when the plugin's class implements `method` itself rather than inheriting the
    neutral default of `PreemptionHooks` (or has no such method at all)."""
    own = getattr(type(plugin), method, None)
    return own is not None and own is not getattr(PreemptionHooks, method, None)


@dataclass(frozen=True)
class Profile:
    """The plugins of one scheduler, per extension point, in the order they run.

    One plugin object may sit at several points (kube-scheduler's plugins do). Built from the
    scheduler configuration and the plugin registry (`plugins.pods`); the engine only reads it.
    `scores` pairs each Score plugin with its weight."""

    scheduler_name: str
    queue_sort: QueueSort
    pre_enqueues: tuple[PreEnqueue, ...] = ()
    pre_filters: tuple[PreFilter, ...] = ()
    filters: tuple[Filter, ...] = ()
    post_filters: tuple[PostFilter, ...] = ()
    scores: tuple[tuple[Score, int], ...] = ()
    reserves: tuple[Reserve, ...] = ()
    permits: tuple[Permit, ...] = ()
    pre_binds: tuple[PreBind, ...] = ()
    binds: tuple[Bind, ...] = ()
    post_binds: tuple[PostBind, ...] = ()
    handlers: tuple[EventHandler, ...] = ()
