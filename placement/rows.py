"""What the index and the controller's caches keep of a ManagedCluster or AddOnPlacementScore.

A `ClusterRow` holds the features a cluster's snapshot row shows and a `ScoreRow` what a score
adds to its cluster's row: a few hundred bytes instead of a model's kilobytes, with label and
claim strings interned across the fleet. `FleetIndex` takes them (or the models) per watch event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from sys import intern
from types import MappingProxyType

from apis.cluster import AddOnPlacementScore, ManagedCluster
from apis.quantity import Quantity
from placement.snapshot import RESOURCES

__all__ = ["ClusterRow", "ScoreRow", "cluster_row", "score_row"]

_TaintSpec = tuple[str, str, str, datetime | None]  # key, value, effect, timeAdded
_NO_RESOURCES: tuple[float | None, ...] = (None,) * len(RESOURCES)
_EMPTY: Mapping[str, str] = MappingProxyType({})  # shared by every row without labels or claims


@dataclass(frozen=True, slots=True)
class ClusterRow:
    """What the index (and the controller's cluster cache) keeps of a ManagedCluster: the
    features its row shows, a few hundred bytes instead of the model's kilobytes. Rows compare
    by those features only (name and resourceVersion do not count), so `==` tells whether an
    update changed anything the scheduler reads."""

    labels: Mapping[str, str]
    claims: Mapping[str, str]
    deleting: bool
    allocatable: tuple[float | None, ...]  # per RESOURCES; None, not NaN, so that == works
    capacity: tuple[float | None, ...]
    taints: tuple[_TaintSpec, ...]
    name: str = field(default="", compare=False)
    resource_version: str | None = field(default=None, compare=False)


def _interned(pairs: Iterable[tuple[str, str]]) -> Mapping[str, str]:
    """Keys and values repeat across clusters (a fleet has few label keys and, mostly, few
    values per key): one string object each instead of one per cluster."""
    out = {intern(key): intern(value) for key, value in pairs}
    return out or _EMPTY


def cluster_row(cluster: ManagedCluster) -> ClusterRow:
    """The features of a cluster that its row shows."""
    status = cluster.status
    claims: Mapping[str, str] = _EMPTY
    allocatable: tuple[float | None, ...] = _NO_RESOURCES
    capacity = allocatable
    if status is not None:
        if status.cluster_claims:  # later duplicates win
            claims = _interned((c.name or "", c.value or "") for c in status.cluster_claims)
        if status.allocatable:
            allocatable = _amounts(status.allocatable)
        if status.capacity:
            capacity = _amounts(status.capacity)
            if capacity == allocatable:
                capacity = allocatable  # one tuple for both, as is common
    taints = cluster.spec.taints
    meta = cluster.metadata
    return ClusterRow(
        _interned(meta.labels.items()) if meta.labels else _EMPTY,
        claims,
        meta.deletion_timestamp is not None,
        allocatable,
        capacity,
        tuple([(t.key, t.value or "", t.effect, t.time_added) for t in taints]) if taints else (),
        meta.name or "",
        meta.resource_version,
    )


def _amounts(resources: Mapping[str, Quantity]) -> tuple[float | None, ...]:
    amounts = tuple([resources[r].approximate() if r in resources else None for r in RESOURCES])
    return _NO_RESOURCES if amounts == _NO_RESOURCES else amounts


@dataclass(frozen=True, slots=True)
class ScoreRow:
    """What the index (and the controller's score cache) keeps of an AddOnPlacementScore: what
    it contributes to its cluster's row, validUntil and the scores (later duplicates win).
    Rows compare by that content only."""

    valid_until: float | None
    values: tuple[tuple[str, int], ...]
    namespace: str = field(default="", compare=False)
    name: str = field(default="", compare=False)
    resource_version: str | None = field(default=None, compare=False)


def score_row(score: AddOnPlacementScore) -> ScoreRow:
    status = score.status
    until: float | None = None
    values: tuple[tuple[str, int], ...] = ()
    if status is not None:
        if status.valid_until is not None:
            until = status.valid_until.timestamp()
        found = {intern(item.name): item.value for item in status.scores or []}
        values = tuple(found.items())
    meta = score.metadata
    return ScoreRow(
        until, values, meta.namespace or "", intern(meta.name or ""), meta.resource_version
    )
