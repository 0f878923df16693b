"""What a plugin sees of the engine: the read-only `ClusterView`, the pods held at Permit
(`WaitingPods`), the services for re-running filters (`CycleHost`), and `PodCycle`, one pod's
scheduling cycle that carries them with the injected clock and the plugins' scratch data.

The extension points that take them are in `placement.pods.framework.interface` (which re-exports
these); the engine's implementations are in `placement.pods.scheduler.engine_views`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from apis.meta import KubeObject
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot, ResourceMatrix
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.cluster.podinfo import PodInfo
from placement.pods.framework.results import Diagnosis

if TYPE_CHECKING:
    from placement.pods.cluster.priority_layers import PriorityLayers

__all__ = ["ClusterView", "CycleHost", "PodCycle", "WaitingPods"]


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

    def nominated_node(self, key: str) -> str | None:
        """The node a pending pod is nominated to, by this scheduler's own preemption (known
        before the pod's `status.nominatedNodeName` comes back through the watch) or by its
        status."""
        ...

    def pods_in(self, namespace: str) -> Iterable[PodInfo]:
        """Every pod the engine knows in a namespace."""
        ...

    @property
    def counted(self) -> PodIndex:
        """The counted pods (bound and assumed) indexed by label, namespace and feature, with
        their changes since a generation (`placement.pods.cluster.pod_index`)."""
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

    def fits(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> BoolMask:
        """`run_filters` without the reasons, for searches that only need the rows that fit
        (gang preemption tries many hypothetical clusters)."""
        ...

    def activate(self, keys: Iterable[str]) -> None:
        """Move these pending pods to the active queue (kube's PodsToActivate: a gang's first
        member at Permit brings its siblings); a pod still in its backoff goes to the backoff
        queue instead and becomes active when its backoff ends."""
        ...

    @property
    def layers(self) -> PriorityLayers:
        """The counted pods' requests aggregated per priority (preemption's shortcut)."""
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
