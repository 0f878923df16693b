"""`FleetSnapshot`: an immutable, column-oriented view of the fleet for one scheduling cycle.

Rows are the ManagedClusters sorted by name (byte order), so a stable sort on the negated total
gives OCM's "score descending, name ascending" for free. Labels and claims are integer-coded
columns (one per key), resources are float columns (NaN where missing), taints are a short
table of the tainted rows only, and decisions are counted per placement so that Balance,
Steady and NoSelectIfNew read arrays, not objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.placements import PlacementDecision
from placement.arrays import BoolMask, RowIndex
from placement.cel.document import claims_text, cluster_document, kept_annotations
from placement.snapshot.taints import TaintKind, TaintRow, TaintTable

__all__ = [
    "RESOURCES",
    "AddOnColumn",
    "CelInputs",
    "Column",
    "DecisionTable",
    "FleetSnapshot",
    "TaintKind",
    "TaintRow",
    "TaintTable",
]

RESOURCES = ("cpu", "memory")
_MISSING = -1
_NO_ROWS = np.empty(0, dtype=np.intp)
_NO_ROWS.flags.writeable = False


@dataclass(frozen=True)
class Column:
    """A string attribute coded as integers: `codes[row]` indexes `values`, -1 = absent."""

    codes: npt.NDArray[np.int32]
    values: tuple[str, ...]
    index: Mapping[str, int]

    @classmethod
    def build(cls, size: int, cells: Iterable[tuple[int, str]]) -> Column:
        codes = np.full(size, _MISSING, dtype=np.int32)
        index: dict[str, int] = {}
        for row, value in cells:
            codes[row] = index.setdefault(value, len(index))
        return cls(codes, tuple(index), index)

    def code_of(self, value: str) -> int:
        return self.index.get(value, _MISSING - 1)  # -2 matches no row, not even absent ones

    def value_at(self, row: int) -> str | None:
        code = int(self.codes[row])
        return None if code < 0 else self.values[code]


@dataclass(frozen=True)
class AddOnColumn:
    """The AddOnPlacementScores named `resource`, one per cluster namespace. Rows without one
    (not `present`) hold NaN in `valid_until` and 0 in every `scores` vector, as do rows
    without that score name, so a reader may skip `present` and `has_score`."""

    present: BoolMask
    valid_until: npt.NDArray[np.float64]  # POSIX seconds, NaN = never expires
    scores: Mapping[str, npt.NDArray[np.int64]]
    has_score: Mapping[str, BoolMask]

    @cached_property
    def earliest(self) -> float:
        """The earliest `valid_until` (inf if none): nothing expired before, no pass needed."""
        known = self.valid_until[~np.isnan(self.valid_until)]
        return float(known.min()) if known.size else float("inf")


@dataclass(frozen=True)
class DecisionTable:
    """Decision entries of every PlacementDecision on the hub.

    Rows beyond the fleet stand for cluster names that appear in decisions but not in the fleet
    (they still count for Balance's maximum, as in OCM).
    """

    extra_names: tuple[str, ...]
    totals: npt.NDArray[np.int64]  # entries per row, over fleet rows then extra rows
    by_placement: Mapping[tuple[str, str], RowIndex]  # (namespace, placement) -> rows
    # What plugins derive from the table alone, computed once per table (the index keeps one
    # table until a decision changes, so every placement of a fan-out reads the same one).
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def rows_of(self, namespace: str, name: str) -> RowIndex:
        rows = self.by_placement.get((namespace, name))
        return _NO_ROWS if rows is None else rows

    @property
    def top(self) -> int:
        """The most entries any row has (0 for an empty table)."""
        found = self.memo.get("top")
        if found is None:
            found = self.memo["top"] = int(self.totals.max()) if self.totals.size else 0
        return int(found)


ScoreItems = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class CelInputs:
    """What CEL selectors read beyond the columns: the clusters as unstructured objects, the
    score objects' items, and the results cache.

    `revisions[row]` changes whenever the cluster's object or any score object in its
    namespace changes (a stamp unique over the life of the index), so a result cached under a
    stamp is still the result. `document(name)` gives the newest object with the stamp it was
    stored under (a snapshot older than that object must not cache what it computes from it).
    `cache` is shared by every snapshot of one index and is written to by the Predicate
    filter: the only mutable thing a snapshot reaches, as `_set_masks` is. `claim_lists`
    codes each row's `status.clusterClaims` as written (`claims_text`; absent: no claims),
    for the selectors grouped by the claims they read (None: they run per cluster), and
    `annotations` each row's (`kept_annotations`), coded by key on demand (`annotation_columns`,
    per snapshot) for those grouped by the annotations they read."""

    revisions: npt.NDArray[np.int64]
    document: Callable[[str], tuple[int, Mapping[str, Any]]]
    scores: Callable[[str, str], ScoreItems | None]
    cache: dict[Any, Any] = field(default_factory=dict)
    claim_lists: Column | None = None
    annotations: Sequence[Mapping[str, str]] | npt.NDArray[np.object_] | None = None
    annotation_columns: dict[str, Column] = field(init=False, default_factory=dict, repr=False)

    def __deepcopy__(self, memo: dict[int, Any]) -> CelInputs:
        """A view onto the index's live store: a copy shares the store, copies the stamps."""
        return replace(self, revisions=self.revisions.copy())


@dataclass(frozen=True)
class FleetSnapshot:
    """Everything a plugin may read, as columns over the clusters sorted by name."""

    names: tuple[str, ...]
    index: Mapping[str, int]
    labels: Mapping[str, Column]
    claims: Mapping[str, Column]
    deleting: BoolMask
    allocatable: Mapping[str, npt.NDArray[np.float64]]
    capacity: Mapping[str, npt.NDArray[np.float64]]
    taints: tuple[TaintRow, ...]
    cluster_sets: Mapping[str, ManagedClusterSet]
    bindings: Mapping[str, tuple[str, ...]]  # namespace -> binding names, sorted
    decisions: DecisionTable
    addons: Mapping[str, AddOnColumn]
    _set_masks: dict[str, BoolMask] = field(default_factory=dict, compare=False, repr=False)
    cel: CelInputs | None = field(default=None, compare=False, repr=False)

    @property
    def size(self) -> int:
        return len(self.names)

    @cached_property
    def taint_table(self) -> TaintTable:
        """`taints` as columns, built on first use."""
        return TaintTable.build(self.taints)

    @cached_property
    def incomplete_resources(self) -> frozenset[str]:
        """The resources some cluster lacks the allocatable or capacity of (NaN) in."""
        both = (self.allocatable, self.capacity)
        missing = (r for a in both for r in a if a[r].size and np.isnan(a[r].min()))
        return frozenset({*missing, *(self.allocatable.keys() ^ self.capacity.keys())})

    def empty_mask(self) -> BoolMask:
        return np.zeros(self.size, dtype=bool)

    def label(self, key: str) -> Column:
        return self.labels.get(key) or _absent_column(self.size)

    def claim(self, key: str) -> Column:
        return self.claims.get(key) or _absent_column(self.size)

    def rows_to_names(self, rows: Iterable[int]) -> list[str]:
        return [self.names[int(r)] for r in rows]

    def mask_of(self, names: Iterable[str]) -> BoolMask:
        mask = self.empty_mask()
        rows = [self.index[n] for n in names if n in self.index]
        mask[rows] = True
        return mask

    def decided_mask(self, namespace: str, name: str) -> BoolMask:
        """Clusters of the fleet in the current decisions of placement namespace/name."""
        table = self.decisions
        rows = table.rows_of(namespace, name)
        if not table.extra_names:
            mask = self.empty_mask()
            mask[rows] = True
            return mask
        # Rows past the fleet (clusters only named in decisions) land past the end.
        mask = np.zeros(self.size + len(table.extra_names), dtype=bool)
        mask[rows] = True
        return mask[: self.size]

    def with_decisions(self, namespace: str, name: str, clusters: Sequence[str]) -> FleetSnapshot:
        """A snapshot in which placement namespace/name decides exactly `clusters`."""
        table = self.decisions
        totals = table.totals.copy()
        np.subtract.at(totals, table.rows_of(namespace, name), 1)
        extra = list(table.extra_names)
        extra_index = {n: self.size + i for i, n in enumerate(extra)}
        rows: list[int] = []
        for cluster in clusters:
            row = self.index.get(cluster)
            if row is None:
                row = extra_index.get(cluster)
                if row is None:
                    row = extra_index[cluster] = self.size + len(extra)
                    extra.append(cluster)
            rows.append(row)
        totals = np.concatenate([totals, np.zeros(len(extra) - len(table.extra_names), np.int64)])
        new_rows = np.asarray(rows, dtype=np.intp)
        np.add.at(totals, new_rows, 1)
        by_placement = {**table.by_placement, (namespace, name): new_rows}
        out = replace(
            self,
            decisions=DecisionTable(tuple(extra), totals, by_placement),
            _set_masks=self._set_masks,
        )
        for cached in ("taint_table", "incomplete_resources"):  # same clusters: still right
            if cached in self.__dict__:
                out.__dict__[cached] = self.__dict__[cached]
        return out

    @classmethod
    def build(
        cls,
        clusters: Iterable[ManagedCluster],
        cluster_sets: Iterable[ManagedClusterSet] = (),
        bindings: Iterable[ManagedClusterSetBinding] = (),
        decisions: Iterable[PlacementDecision] = (),
        scores: Iterable[AddOnPlacementScore] = (),
    ) -> FleetSnapshot:
        """Build a snapshot from API objects (the controller keeps one up to date instead).
        A cluster given twice (two documents of one name) is the last one given, as applying
        them in order to an API server would leave it."""
        latest = {c.name: c for c in clusters}
        ordered = sorted(latest.values(), key=lambda c: c.name.encode())
        names = tuple(c.name for c in ordered)
        index = {n: i for i, n in enumerate(names)}
        size = len(names)
        label_cells: dict[str, list[tuple[int, str]]] = {}
        claim_cells: dict[str, list[tuple[int, str]]] = {}
        deleting = np.zeros(size, dtype=bool)
        allocatable = {r: np.full(size, np.nan) for r in RESOURCES}
        capacity = {r: np.full(size, np.nan) for r in RESOURCES}
        taints: list[TaintRow] = []
        for row, cluster in enumerate(ordered):
            for key, value in (cluster.metadata.labels or {}).items():
                label_cells.setdefault(key, []).append((row, value))
            deleting[row] = cluster.metadata.deletion_timestamp is not None
            for taint in cluster.spec.taints or []:
                taints.append(
                    TaintRow(row, taint.key, taint.value or "", taint.effect, taint.time_added)
                )
            status = cluster.status
            if status is None:
                continue
            claims: dict[str, str] = {}
            for claim in status.cluster_claims or []:
                claims[claim.name or ""] = claim.value or ""  # later duplicates win
            for key, value in claims.items():
                claim_cells.setdefault(key, []).append((row, value))
            for resource in RESOURCES:
                if status.allocatable and resource in status.allocatable:
                    allocatable[resource][row] = status.allocatable[resource].approximate()
                if status.capacity and resource in status.capacity:
                    capacity[resource][row] = status.capacity[resource].approximate()
        binding_names: dict[str, list[str]] = {}
        for binding in bindings:
            binding_names.setdefault(binding.namespace, []).append(binding.name)
        scores = list(scores)
        return cls(
            names=names,
            index=index,
            labels={k: Column.build(size, v) for k, v in label_cells.items()},
            claims={k: Column.build(size, v) for k, v in claim_cells.items()},
            deleting=deleting,
            allocatable=allocatable,
            capacity=capacity,
            taints=tuple(taints),
            cluster_sets={s.name: s for s in cluster_sets},
            bindings={ns: tuple(sorted(v)) for ns, v in binding_names.items()},
            decisions=_decision_table(index, decisions),
            addons=_addon_columns(index, scores),
            cel=_cel_inputs(ordered, scores),
        )


def _cel_inputs(
    ordered: Sequence[ManagedCluster], scores: Iterable[AddOnPlacementScore]
) -> CelInputs:
    """CEL's view of API objects: documents made on first use, stamps 1..N by row."""
    models = {c.name: (row + 1, c) for row, c in enumerate(ordered)}
    lists = [
        (row, claims_text((c.name or "", c.value or "") for c in cluster.status.cluster_claims))
        for row, cluster in enumerate(ordered)
        if cluster.status is not None and cluster.status.cluster_claims
    ]
    documents: dict[str, tuple[int, Mapping[str, Any]]] = {}
    items: dict[tuple[str, str], ScoreItems] = {}
    for score in scores:
        listed = score.status.scores if score.status and score.status.scores else []
        items[(score.namespace, score.name)] = [{"name": i.name, "value": i.value} for i in listed]

    def document(name: str) -> tuple[int, Mapping[str, Any]]:
        found = documents.get(name)
        if found is None:
            stamp, model = models[name]
            found = documents[name] = (stamp, unstructured(model))
        return found

    return CelInputs(
        np.arange(1, len(ordered) + 1, dtype=np.int64),
        document,
        lambda cluster, name: items.get((cluster, name)),
        claim_lists=Column.build(len(ordered), lists),
        annotations=tuple([kept_annotations(c.metadata.annotations) for c in ordered]),
    )


def unstructured(cluster: ManagedCluster) -> dict[str, Any]:
    """What OCM's `ConvertObjectToUnstructured` gives CEL as `managedCluster` (Go's type:
    `placement.cel.document`: canonical quantities, Go's nulls and zeros, CRD defaults)."""
    return cluster_document(cluster)


def _absent_column(size: int) -> Column:
    return Column(np.full(size, _MISSING, dtype=np.int32), (), {})


def _decision_table(
    index: Mapping[str, int], decisions: Iterable[PlacementDecision]
) -> DecisionTable:
    size = len(index)
    extra: dict[str, int] = {}
    all_rows: list[int] = []
    by_placement: dict[tuple[str, str], list[int]] = {}
    for decision in decisions:
        placement = decision.placement_name
        own = by_placement.setdefault((decision.namespace, placement), []) if placement else None
        for entry in decision.status.decisions if decision.status else []:
            row = index.get(entry.cluster_name)
            if row is None:
                row = extra.setdefault(entry.cluster_name, size + len(extra))
            all_rows.append(row)
            if own is not None:
                own.append(row)
    totals = np.bincount(np.asarray(all_rows, dtype=np.intp), minlength=size + len(extra))
    return DecisionTable(
        tuple(extra),
        totals.astype(np.int64),
        {k: np.asarray(v, dtype=np.intp) for k, v in by_placement.items()},
    )


def _addon_columns(
    index: Mapping[str, int], scores: Iterable[AddOnPlacementScore]
) -> dict[str, AddOnColumn]:
    size = len(index)
    grouped: dict[str, list[tuple[int, AddOnPlacementScore]]] = {}
    for score in scores:
        row = index.get(score.namespace)
        if row is not None:
            grouped.setdefault(score.name, []).append((row, score))
    columns: dict[str, AddOnColumn] = {}
    for resource, items in grouped.items():
        present = np.zeros(size, dtype=bool)
        valid_until = np.full(size, np.nan)
        values: dict[str, npt.NDArray[np.int64]] = {}
        has: dict[str, BoolMask] = {}
        for row, score in items:
            present[row] = True
            status = score.status
            if status is None:
                continue
            if status.valid_until is not None:
                valid_until[row] = status.valid_until.timestamp()
            for item in status.scores or []:
                if item.name not in values:
                    values[item.name] = np.zeros(size, dtype=np.int64)
                    has[item.name] = np.zeros(size, dtype=bool)
                values[item.name][row] = item.value  # later duplicates win
                has[item.name][row] = True
        columns[resource] = AddOnColumn(present, valid_until, values, has)
    return columns
