"""Status rules: the pure half of the PodGroup and ElasticQuota status controllers.

A status controller watches pods and one kind of object and keeps each object's `status` true
to the pods it covers (a PodGroup's members, an ElasticQuota's namespace). What the status
should be is a function of the object and the world; this module names that function's shape
so that the two shells share one implementation:

* the controller (`controllers/addons/status.py`) feeds a `StatusWorld` from its informers,
  writes `StatusOutcome.status` through the `/status` subresource when it differs from the
  object's, and emits the outcome's events then;
* `placement scheduler simulate` (`placement/pods/simulator/simulation.py`) runs the same rules on
its
  in-memory world after each step, so its output shows the statuses the controllers would write.

Rules are pure: no I/O, the clock is the `now` they are given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from apis.core import Node, Pod
from apis.meta import KubeObject, without_nulls

__all__ = [
    "StatusEvent",
    "StatusOutcome",
    "StatusRule",
    "StatusWorld",
    "same_status",
]


@dataclass(frozen=True)
class StatusEvent:
    """An event about the object, e.g. a PodGroup's phase change (`type` Normal or Warning)."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class StatusOutcome:
    """What a rule wants: the object's whole `status` in wire form (camelCase keys, quantities
    as strings), or None to leave it alone; the events that go with the change (emitted only
    when the status written differs from the object's: a rule returns them on transitions);
    when to look again even if nothing changes (a time-driven transition or notice), or None;
    and `notices`: events about a standing condition that changes no status (the PodGroup
    48-hour Timeout), which the rule returns at every computation while the condition holds
    and the shells emit once per object (its uid) and reason."""

    status: Mapping[str, Any] | None
    events: tuple[StatusEvent, ...] = ()
    requeue_at: datetime | None = None
    notices: tuple[StatusEvent, ...] = ()


class StatusWorld(Protocol):
    """What a rule may read: the cluster as the controller's informers (or the simulation)
    see it."""

    def pods_in(self, namespace: str) -> Iterable[Pod]:
        """Every pod of a namespace, finished ones included (their phase says so)."""
        ...

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        """Objects of a watched kind ("PodGroup", "ElasticQuota"), by `namespace/name`."""
        ...

    def nodes(self) -> Iterable[Node]:
        """Every node (for rules that compare with the cluster's capacity)."""
        ...


class StatusRule(Protocol):
    """One kind's status: which objects a pod change concerns, and what the status should be."""

    kind: str
    """The object kind the rule writes ("PodGroup" or "ElasticQuota")."""

    watches_nodes: bool
    """True when node changes may change a status (all objects are recomputed then)."""

    couples_objects: bool
    """True when one object's status reads the others (a change to any recomputes all)."""

    def affected(self, pod: Pod, objects: Mapping[str, KubeObject]) -> Iterable[str]:
        """The keys (`namespace/name`) of the objects whose status may depend on this pod,
        among `objects` (the kind's objects by key)."""
        ...

    def compute(self, obj: KubeObject, world: StatusWorld, now: datetime) -> StatusOutcome:
        """The status `obj` should have now."""
        ...


def same_status(current: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> bool:
    """Whether writing `wanted` over `current` (wire forms) would change nothing: the API
    server stores no nulls, so a null and a missing field are the same."""
    return bool(without_nulls(dict(current or {})) == without_nulls(dict(wanted)))
