"""What the index and the controller's caches keep of a ManagedCluster, an AddOnPlacementScore
or a PlacementDecision.

A `ClusterRow` holds the features a cluster's snapshot row shows and a `ScoreRow` what a score
adds to its cluster's row: a few hundred bytes instead of a model's kilobytes, with label and
claim strings interned across the fleet. A `DecisionRow` holds what the decision writer compares
and patches: a PlacementDecision of 100 decisions is ~1 KB instead of ~55 KB of models (each
decision a model with its own dict and field set), which at wide placements was most of the
controller's memory. `FleetIndex` takes them (or the models) per watch event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from sys import intern
from types import MappingProxyType
from typing import Any

from apis.cluster import AddOnPlacementScore, ManagedCluster
from apis.meta import without_nulls
from apis.placements import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    PLACEMENT_LABEL,
    PlacementDecision,
)
from apis.quantity import Quantity
from placement.cel.document import claims_text, kept_annotations
from placement.snapshot.fleet_snapshot import RESOURCES

__all__ = [
    "ClaimMap",
    "ClusterRow",
    "DecisionRow",
    "ScoreRow",
    "claims_list_text",
    "cluster_row",
    "decision_labels",
    "decision_row",
    "score_row",
]

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
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)
    """`metadata.annotations`, for the CEL selectors grouped by the annotations they read
    (`NOT_KEPT` when a value is longer than `ANNOTATION_LIMIT`: those run per cluster). Not a
    feature: a change restamps the cluster for CEL, as any change of its object does."""


class ClaimMap(dict[str, str]):
    """A cluster's claims by name (later duplicates win, in first-occurrence order) and, as
    `text`, the list as written (`claims_text`: order and duplicate names kept), which CEL
    sees. Equal only when both are: a reordered list is a change of the row's features (the
    index rewrites its claims-list cell), though the mapping is the same."""

    __slots__ = ("text",)
    text: str

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClaimMap) and self.text != other.text:
            return False
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None


def claims_list_text(claims: Mapping[str, str]) -> str:
    """The claims list as written, of a row's claims (a mapping without `text` shows its
    items)."""
    text = getattr(claims, "text", None)
    return text if isinstance(text, str) else claims_text(claims.items())


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
        if status.cluster_claims:  # later duplicates win; `text` keeps them all, in order
            pairs = [(c.name or "", c.value or "") for c in status.cluster_claims]
            claims = ClaimMap(_interned(pairs))
            claims.text = intern(claims_text(pairs))
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
        kept_annotations(meta.annotations),
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


# (clusterName, reason, score) of one decision: how the writer compares a PD's decisions.
DecisionEntry = tuple[str, str, int | None]


@dataclass(frozen=True, slots=True)
class DecisionRow:
    """What the controller keeps of a PlacementDecision: identity, labels, owner references
    and the decisions, cluster names interned. `details` holds (reason, score) per decision,
    None when every reason is empty and no score is set (as the controller writes them).
    `has_status` tells a PD without any status (as a create leaves it) from one with an empty
    list."""

    namespace: str
    name: str
    uid: str | None
    resource_version: str | None
    labels: Mapping[str, str]
    owners: tuple[Mapping[str, Any], ...]  # ownerReferences as on the wire, nulls left out
    clusters: tuple[str, ...]
    details: tuple[tuple[str, int | None], ...] | None
    has_status: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def placement_name(self) -> str | None:
        """The placement this decision belongs to, by its label (None when unlabelled)."""
        return self.labels.get(PLACEMENT_LABEL)

    def entries(self) -> tuple[DecisionEntry, ...] | None:
        """(clusterName, reason, score) per decision; None when the PD has no status."""
        if not self.has_status:
            return None
        if self.details is None:
            return tuple([(c, "", None) for c in self.clusters])
        return tuple([(c, r, s) for c, (r, s) in zip(self.clusters, self.details, strict=True)])

    def wire_decisions(self) -> list[dict[str, Any]]:
        """`status.decisions` as on the wire."""
        out: list[dict[str, Any]] = []
        for cluster, reason, score in self.entries() or ():
            one: dict[str, Any] = {"clusterName": cluster, "reason": reason}
            if score is not None:
                one["score"] = score
            out.append(one)
        return out


def decision_labels(placement: str, group: str, index: str) -> Mapping[str, str]:
    """The labels of a placement's PD in decision group `group` (number `index`), as
    `decision_row` keeps them."""
    return _interned(
        (
            (PLACEMENT_LABEL, placement),
            (DECISION_GROUP_NAME_LABEL, group),
            (DECISION_GROUP_INDEX_LABEL, index),
        )
    )


def decision_row(pd: PlacementDecision) -> DecisionRow:
    meta = pd.metadata
    decisions = pd.status.decisions if pd.status is not None else []
    clusters = tuple([intern(d.cluster_name) for d in decisions])
    details: tuple[tuple[str, int | None], ...] | None = None
    if any(d.reason or d.score is not None for d in decisions):
        details = tuple([(d.reason, d.score) for d in decisions])
    return DecisionRow(
        meta.namespace or "",
        meta.name or "",
        meta.uid,
        meta.resource_version,
        _interned(meta.labels.items()) if meta.labels else _EMPTY,
        tuple([without_nulls(ref.to_wire()) for ref in meta.owner_references or ()]),
        clusters,
        details,
        pd.status is not None,
    )
