"""What the pod scheduler watches, turned into the engine's events.

Pods come from two informers, as the field selectors of a secondary scheduler split them: the
pending pods that name this scheduler (`spec.schedulerName=<name>,spec.nodeName=`) and every
assigned pod (`spec.nodeName!=`, of any scheduler: they take room on their nodes). A binding
moves a pod from the first to the second, and the two watches are separate streams: the first
says DELETED (the pod left its selector) and the second ADDED, in either order. `PodFeed`
merges them into one coherent story per pod for the engine:

* a pending pod leaving the first informer while the second holds it was bound: nothing to say
  (the engine learns of the binding from the assigned pod);
* one leaving while this scheduler's bind of it is in flight is judged when the bind's result
  comes back: bound (the assigned ADDED will follow), or really deleted;
* one leaving after this scheduler bound it is not news either: the engine keeps the pod
  assumed on its node until the assigned ADDED arrives (never a window in which the node looks
  emptier than it is);
* anything else leaving is a deletion.

A pod deleted and created again under the same name has another uid: the engine is told the old
one is gone before it hears of the new one.

`object_events` makes the callbacks of the other informers (nodes, PriorityClasses, PodGroups,
ElasticQuotas, storage, Services and workload controllers, PodDisruptionBudgets, the
resource.k8s.io kinds of dynamic resource allocation): one engine event per watch event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from apis.core import Node, Pod
from apis.meta import KubeObject
from apis.policy import PodDisruptionBudget
from apis.resource import RESOURCE_KINDS
from apis.scheduling import ElasticQuota, PodGroup
from apis.services import SELECTING_MODELS
from apis.storage import STORAGE_KINDS
from placement.pods.framework.events import (
    BindResult,
    ClusterEvent,
    NodeEvent,
    ObjectEvent,
    PodEvent,
)

__all__ = [
    "ASSIGNED_SELECTOR",
    "OPTIONAL_KINDS",
    "Callbacks",
    "PodFeed",
    "node_events",
    "object_events",
    "pending_selector",
]

log = logging.getLogger(__name__)

ASSIGNED_SELECTOR = "spec.nodeName!="
"""Every pod bound to a node, whichever scheduler bound it."""

OPTIONAL_KINDS: tuple[type[KubeObject], ...] = (
    PodGroup,
    ElasticQuota,
    *STORAGE_KINDS,
    *SELECTING_MODELS,
    PodDisruptionBudget,
    *RESOURCE_KINDS,
)
"""The kinds watched when the server serves them: PodGroups and ElasticQuotas (when their CRDs
are installed), the storage objects, the Services, ReplicationControllers, ReplicaSets and
StatefulSets whose selectors the default topology spreading uses, the PodDisruptionBudgets
preemption reads (their `status.disruptionsAllowed` as kube's disruption controller wrote it),
and DynamicResources' DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices
(resource.k8s.io/v1, served by kube-apiserver v1.36 by default)."""


def pending_selector(scheduler_name: str) -> str:
    """The pods this scheduler must place: naming it and not bound yet."""
    return f"spec.schedulerName={scheduler_name},spec.nodeName="


Deliver = Callable[[ClusterEvent], None]
Callbacks = tuple[
    Callable[[Any], None], Callable[[Any, Any], None], Callable[[Any], None]
]  # on_add, on_update, on_delete


def _uid(pod: Pod) -> str:
    return pod.metadata.uid or ""


class PodFeed:
    """Merges the pending and the assigned pod informers into `PodEvent`s (module docstring),
    and passes bind results on to the engine."""

    def __init__(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self.pending: dict[str, Pod] = {}
        self.assigned: dict[str, Pod] = {}
        self.told: dict[str, Pod] = {}
        """The pod the engine was last told about, per key (absent: told it is gone)."""
        self._binding: dict[str, str] = {}  # key -> uid of a bind in flight
        self._bound: dict[str, str] = {}  # key -> uid bound by us, assigned ADDED not seen yet
        self._left: dict[str, Pod] = {}  # pending pods that left during a bind in flight

    # --- what the engine is told ----------------------------------------------------------

    def _upsert(self, pod: Pod) -> None:
        key = pod.key
        old = self.told.get(key)
        if old is not None and _uid(old) != _uid(pod):
            self._deliver(PodEvent("Deleted", old))
            old = None
        self.told[key] = pod
        self._deliver(PodEvent("Added" if old is None else "Modified", pod))

    def _gone(self, pod: Pod) -> None:
        key = pod.key
        old = self.told.get(key)
        if old is None or _uid(old) != _uid(pod):
            return  # the engine knows this uid is gone, or never knew it
        del self.told[key]
        self._deliver(PodEvent("Deleted", old))

    # --- the pending pods' informer ----------------------------------------------------------

    def pending_added(self, pod: Pod) -> None:
        key, uid = pod.key, _uid(pod)
        self.pending[key] = pod
        bound = self.assigned.get(key)
        if bound is not None and _uid(bound) == uid:
            return  # a stale view of a pod the other informer shows bound
        if self._binding.get(key) == uid or self._bound.get(key) == uid:
            # An older change (our own status patch, say) seen after the bind was decided:
            # the engine keeps the pod assumed, as kube-scheduler ignores updates of assumed
            # pods, until the bind's result or the assigned pod says otherwise.
            return
        self._upsert(pod)

    def pending_updated(self, _: Pod, pod: Pod) -> None:
        self.pending_added(pod)

    def pending_deleted(self, pod: Pod) -> None:
        key, uid = pod.key, _uid(pod)
        if self.pending.get(key) is not None and _uid(self.pending[key]) == uid:
            del self.pending[key]
        bound = self.assigned.get(key)
        if bound is not None and _uid(bound) == uid:
            return  # bound: the assigned informer told the engine already
        if self._binding.get(key) == uid:
            self._left[key] = pod  # judged when our bind's result comes back
            return
        if self._bound.get(key) == uid:
            return  # our binding; the assigned ADDED is on its way
        self._gone(pod)

    # --- the assigned pods' informer ---------------------------------------------------------

    def assigned_added(self, pod: Pod) -> None:
        key = pod.key
        self.assigned[key] = pod
        if self._bound.get(key) == _uid(pod):
            del self._bound[key]
        left = self._left.get(key)
        if left is not None and _uid(left) == _uid(pod):
            del self._left[key]
        self._upsert(pod)

    def assigned_updated(self, _: Pod, pod: Pod) -> None:
        self.assigned_added(pod)

    def assigned_deleted(self, pod: Pod) -> None:
        key = pod.key
        if self.assigned.get(key) is not None and _uid(self.assigned[key]) == _uid(pod):
            del self.assigned[key]
        self._gone(pod)
        waiting = self.pending.get(key)
        if waiting is not None and key not in self.told:
            self._upsert(waiting)  # a new pod of the same name was already pending

    # --- binds -------------------------------------------------------------------------------

    def bind_started(self, key: str, uid: str) -> None:
        self._binding[key] = uid

    def bind_finished(self, result: BindResult) -> None:
        """Pass `result` to the engine, then settle a pending pod that left meanwhile."""
        key = result.key
        if self._binding.get(key) == result.uid:
            del self._binding[key]
        self._deliver(result)
        left = self._left.pop(key, None)
        if result.ok:
            if key not in self.assigned or _uid(self.assigned[key]) != result.uid:
                self._bound[key] = result.uid
            return
        if left is not None and _uid(left) == result.uid:
            bound = self.assigned.get(key)
            if bound is None or _uid(bound) != result.uid:
                self._gone(left)

    def lookup(self, key: str) -> Pod | None:
        """The pod as last seen by either informer (the assigned view wins)."""
        return self.assigned.get(key) or self.pending.get(key)

    def callbacks(self) -> tuple[Callbacks, Callbacks]:
        """The (pending, assigned) informers' callbacks."""
        return (
            (self.pending_added, self.pending_updated, self.pending_deleted),
            (self.assigned_added, self.assigned_updated, self.assigned_deleted),
        )


def object_events(deliver: Deliver) -> Callbacks:
    """Callbacks turning a PriorityClass, PodGroup or ElasticQuota informer into `ObjectEvent`s."""

    def added(obj: KubeObject) -> None:
        deliver(ObjectEvent("Added", obj))

    def updated(_: KubeObject, obj: KubeObject) -> None:
        deliver(ObjectEvent("Modified", obj))

    def deleted(obj: KubeObject) -> None:
        deliver(ObjectEvent("Deleted", obj))

    return added, updated, deleted


def node_events(deliver: Deliver) -> Callbacks:
    """Callbacks turning the Node informer into `NodeEvent`s."""

    def added(node: Node) -> None:
        deliver(NodeEvent("Added", node))

    def updated(_: Node, node: Node) -> None:
        deliver(NodeEvent("Modified", node))

    def deleted(node: Node) -> None:
        deliver(NodeEvent("Deleted", node))

    return added, updated, deleted
