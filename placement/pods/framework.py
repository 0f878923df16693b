"""The pod framework: the extension points of one pod's scheduling, as kube-scheduler has them.

A scheduling cycle for one pod runs QueueSort (which pod next), PreFilter (checks on the pod
alone, may narrow the nodes), Filter (boolean masks over the rows of a `NodeSnapshot`), then,
when no node is left, PostFilter (preemption); otherwise Score (a vector over the feasible rows,
already normalized to 0..100 by the plugin, weighted and summed by the engine), Reserve, Permit
(allow / wait with a timeout / reject). The binding cycle then binds (an action the shell
performs) and runs PostBind once the binding is confirmed. A failure after Reserve runs
Unreserve in reverse order.

Expected outcomes are values (`PodStatus`); a plugin that raises has a bug, and the engine turns
the exception into an ERROR status for that pod (the pod goes to backoff, the engine lives on).
Plugins see the cluster only through the read-only `ClusterView` the engine hands them; they do
no I/O and never read a clock (`PodCycle.now`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import IntEnum
from typing import Any, Protocol

from apis.core import Pod
from apis.meta import KubeObject
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.pods.events import ClusterEvent
from placement.pods.nodes import NodeSnapshot, ResourceMatrix
from placement.pods.requests import Requests, non_zero_requests, pod_requests

__all__ = [
    "MAX_NODE_SCORE",
    "POD_SUCCESS",
    "SKIP",
    "Bind",
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
    "PreFilter",
    "PreFilterResult",
    "Profile",
    "QueueSort",
    "QueueSortOverride",
    "Reason",
    "Reserve",
    "Score",
    "WaitingPods",
    "pod_key",
]

MAX_NODE_SCORE = 100
"""The top of every plugin's normalized score (kube-scheduler's MaxNodeScore)."""


class PodCode(IntEnum):
    """kube-scheduler's status codes, in ascending severity."""

    SUCCESS = 0
    SKIP = 1
    """The plugin has nothing to do for this pod (PreFilter: its Filter is skipped too)."""
    WAIT = 2
    """Permit only: hold the pod on its node until allowed, rejected or timed out."""
    UNSCHEDULABLE = 3
    """Not now: preemption or a cluster change may help."""
    UNRESOLVABLE = 4
    """UnschedulableAndUnresolvable: preemption cannot help (node affinity, taints, ...)."""
    ERROR = 5
    """A plugin failed; the pod is retried with backoff."""


@dataclass(frozen=True)
class PodStatus:
    """A code with its reasons and the plugin that produced it."""

    code: PodCode = PodCode.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code <= PodCode.SKIP

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @classmethod
    def unschedulable(cls, plugin: str, *reasons: str) -> PodStatus:
        return cls(PodCode.UNSCHEDULABLE, reasons, plugin)

    @classmethod
    def unresolvable(cls, plugin: str, *reasons: str) -> PodStatus:
        return cls(PodCode.UNRESOLVABLE, reasons, plugin)

    @classmethod
    def error(cls, plugin: str, *reasons: str) -> PodStatus:
        return cls(PodCode.ERROR, reasons, plugin)


POD_SUCCESS = PodStatus()
SKIP = PodStatus(PodCode.SKIP)


def pod_key(namespace: str | None, name: str | None) -> str:
    """`namespace/name`, the key pods are known by everywhere in the engine."""
    return f"{namespace or ''}/{name or ''}"


@dataclass(frozen=True, eq=False)
class PodInfo:
    """A pod with what every cycle needs computed once: its key, requests, priority.

    `priority` is resolved by the engine (spec.priority, else the pod's PriorityClass, else the
    global default class, else 0); `preempt_never` from spec.preemptionPolicy or the class."""

    pod: Pod
    key: str
    uid: str
    requests: Requests
    non_zero: Requests
    priority: int = 0
    preempt_never: bool = False

    @classmethod
    def of(
        cls,
        pod: Pod,
        priority: int | None = None,
        preempt_never: bool | None = None,
        *,
        requests: tuple[Requests, Requests] | None = None,
    ) -> PodInfo:
        """`requests`: the pod's (`pod_requests`, `non_zero_requests`) when the caller knows
        them already (the engine keeps them per pod shape: the exact sums are costly)."""
        meta = pod.metadata
        if requests is None:
            requests = pod_requests(pod), non_zero_requests(pod)
        return cls(
            pod=pod,
            key=pod_key(meta.namespace, meta.name),
            uid=meta.uid or "",
            requests=requests[0],
            non_zero=requests[1],
            priority=(pod.spec.priority or 0) if priority is None else priority,
            preempt_never=(
                pod.spec.preemption_policy == "Never" if preempt_never is None else preempt_never
            ),
        )

    @property
    def namespace(self) -> str:
        return self.pod.metadata.namespace or ""

    @property
    def name(self) -> str:
        return self.pod.metadata.name or ""

    @property
    def labels(self) -> Mapping[str, str]:
        return self.pod.metadata.labels or {}

    @property
    def node_name(self) -> str | None:
        """spec.nodeName: where the pod is bound (None while pending)."""
        return self.pod.spec.node_name or None

    @property
    def nominated_node(self) -> str | None:
        status = self.pod.status
        return (status.nominated_node_name or None) if status else None

    @property
    def created(self) -> datetime | None:
        return self.pod.metadata.creation_timestamp

    @property
    def terminating(self) -> bool:
        return self.pod.metadata.deletion_timestamp is not None

    @property
    def finished(self) -> bool:
        """Succeeded or Failed: the pod no longer holds its node's resources."""
        status = self.pod.status
        return status is not None and status.phase in ("Succeeded", "Failed")

    @property
    def gated(self) -> bool:
        return bool(self.pod.spec.scheduling_gates)


class ClusterView(Protocol):
    """What plugins may read of the engine's state (never write)."""

    def pod(self, key: str) -> PodInfo | None:
        """Any pod the engine knows (pending, assumed or bound), by `namespace/name`."""
        ...

    def pods_on(self, node: str) -> Sequence[PodInfo]:
        """The pods counted on a node: bound and assumed, not finished."""
        ...

    def nominated_on(self, node: str) -> Sequence[PodInfo]:
        """Pending pods nominated to a node by an earlier preemption."""
        ...

    def pods_in(self, namespace: str) -> Iterable[PodInfo]:
        """Every pod the engine knows in a namespace."""
        ...

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        """Watched objects of a kind ("PodGroup", "ElasticQuota", "PriorityClass"), by key
        (`namespace/name`, or `name` for cluster-scoped kinds)."""
        ...


class WaitingPods(Protocol):
    """The pods held at Permit, which plugins may release or reject (a gang reaching quorum
    allows its waiting siblings)."""

    def waiting(self) -> Iterable[PodInfo]: ...

    def allow(self, key: str, plugin: str) -> None:
        """This plugin no longer holds the pod; it binds once no plugin holds it."""
        ...

    def reject(self, key: str, plugin: str, message: str) -> None:
        """Unreserve the pod and send it back to the queue."""
        ...


class CycleHost(Protocol):
    """What the engine lends the plugins that re-run part of a cycle on a hypothetical
    cluster (preemption: "would the pod fit once these pods are gone?")."""

    def run_filters(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> tuple[BoolMask, Diagnosis]:
        """The profile's Filter plugins over `nodes` (which may be hypothetical), with the
        requests of the pods nominated to each node at the pod's priority or above added, as
        the cycle runs them. Returns the rows that fit and why the others do not."""
        ...

    def plugins(self) -> Sequence[object]:
        """Every plugin object of the profile, once each, in profile order (to find the
        ones that implement an optional hook, e.g. preemption's)."""
        ...

    def requested_below(self, priority: int, nodes: NodeSnapshot) -> ResourceMatrix:
        """Per node (rows of `nodes`), the summed requests of the counted pods whose priority
        is below `priority`, kept aggregated by the engine (no per-pod walk)."""
        ...

    def preempting(self, key: str) -> bool:
        """True when a preemption already deleted this pod and it is not gone yet."""
        ...

    def activate(self, keys: Iterable[str]) -> None:
        """Move these pending pods (unschedulable or in backoff) to the active queue at once
        (kube's PodsToActivate: a gang's first member at Permit brings its siblings)."""
        ...


@dataclass
class PodCycle:
    """One pod's scheduling cycle: the injected clock, the engine's state and scratch data the
    plugins share between extension points (keyed by plugin name)."""

    now: datetime
    cluster: ClusterView
    waiting: WaitingPods
    scratch: dict[str, Any] = field(default_factory=dict)
    explain: bool = False
    """True when the caller wants per-node reasons even for the nodes that fit."""
    host: CycleHost | None = None
    """The engine's services for this cycle (None in a plugin's unit test without engine)."""


@dataclass(frozen=True)
class Reason:
    """Why some rows failed a filter: the rows, the message, and whether preemption could
    help them (Unschedulable) or not (UnschedulableAndUnresolvable)."""

    rows: BoolMask
    message: str
    resolvable: bool = True


@dataclass(frozen=True)
class PreFilterResult:
    """`nodes`, when set, restricts the cycle to these rows (NodeName, a nominated node)."""

    status: PodStatus = POD_SUCCESS
    nodes: BoolMask | None = None


@dataclass(frozen=True)
class FilterResult:
    """The rows that still fit, and why the others (those it removed) do not. Reasons are
    masks, given at once (`reasons`) or on demand (`explain`); a removed row no reason covers
    gets `default`."""

    mask: BoolMask
    reasons: tuple[Reason, ...] = ()
    default: Reason | None = None
    status: PodStatus = POD_SUCCESS  # ERROR only: a filter that cannot decide for any node
    explain: Callable[[], tuple[Reason, ...]] | None = None
    """More reasons, computed only when someone asks (`all_reasons`): the engine needs them
    when no node fits (the Diagnosis) or in explain mode, and most pods fit somewhere, so a
    filter whose reasons cost anything defers them here. The callable must read only what
    the filter read (the snapshot is immutable), so calling it later gives the same answer."""

    def all_reasons(self) -> tuple[Reason, ...]:
        """`reasons` followed by the deferred ones."""
        if self.explain is None:
            return self.reasons
        return self.reasons + self.explain()


@dataclass(frozen=True)
class PostFilterResult:
    """What a PostFilter (preemption) found: a node to nominate and the pods to delete."""

    status: PodStatus
    nominated_node: str | None = None
    victims: tuple[PodInfo, ...] = ()
    nominations: tuple[tuple[str, str], ...] = ()
    """(pod key, node) for more pending pods than the one in the cycle (gang preemption: every
    member gets the node its victims free; victims may then be on several nodes)."""


@dataclass(frozen=True)
class PermitResult:
    status: PodStatus = POD_SUCCESS  # SUCCESS, WAIT (with timeout) or UNSCHEDULABLE
    timeout: timedelta = timedelta(0)


@dataclass(frozen=True)
class Diagnosis:
    """Why a pod fits no node: the counts per message over nodes, the rows preemption may
    help, and the PreFilter / PostFilter messages (kube-scheduler's FitError)."""

    total_nodes: int
    counts: Mapping[str, int]
    resolvable: BoolMask
    pre_filter: str = ""
    post_filter: str = ""
    plugins: frozenset[str] = frozenset()

    def message(self) -> str:
        """`0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint
        {spot: true}.` with kube-scheduler's ordering (the "count reason" strings sorted).

        As kube-scheduler's FitError.Error (1.31+): the PreFilter message replaces the node
        counts; the PostFilter message follows after a space and brings its own final period
        (`... 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims
        found for incoming pod.`; older releases doubled that period)."""
        text = f"0/{self.total_nodes} nodes are available:"
        if self.pre_filter:
            text += f" {self.pre_filter}."
        else:
            parts = sorted(f"{count} {reason}" for reason, count in self.counts.items())
            if parts:
                text += f" {', '.join(parts)}."
        if self.post_filter:
            text += f" {self.post_filter}"
        return text


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

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        """Update the plugin's state; True when pods this plugin rejected should be retried."""
        ...


@dataclass(frozen=True)
class Profile:
    """The plugins of one scheduler, per extension point, in the order they run.

    One plugin object may sit at several points (kube-scheduler's plugins do). Built from the
    scheduler configuration and the plugin registry (`plugins.pods`); the engine only reads it.
    `scores` pairs each Score plugin with its weight."""

    scheduler_name: str
    queue_sort: QueueSort
    pre_filters: tuple[PreFilter, ...] = ()
    filters: tuple[Filter, ...] = ()
    post_filters: tuple[PostFilter, ...] = ()
    scores: tuple[tuple[Score, int], ...] = ()
    reserves: tuple[Reserve, ...] = ()
    permits: tuple[Permit, ...] = ()
    binds: tuple[Bind, ...] = ()
    post_binds: tuple[PostBind, ...] = ()
    handlers: tuple[EventHandler, ...] = ()
