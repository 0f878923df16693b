"""`NodeTable` and `NodeSnapshot`: the nodes of the local cluster as numpy columns.

Rows are the nodes sorted by name (byte order, as the hub's `FleetSnapshot`), so ties broken by
row are broken by name. Resources are int64 matrices [nodes x resources] in the scheduler's units
(`placement.pods.cluster.requests`): `allocatable` from the node status, `requested` the sum of the
pods counted on the node (bound, or assumed by the scheduler until their binding is seen), and
`non_zero_requested` the cpu and memory that scoring counts (`non_zero_requests`). Labels
are integer-coded columns the hub's selector compilation reads, taints a small mapping of the
tainted rows only.

`NodeTable` is updated per event (node added, updated, removed; a pod's requests added to or
removed from a node) without rebuilding; `NodeTable.snapshot()` is the immutable view one
scheduling cycle reads. Arrays are shared with the view and copied on the next write (copy on
write): a pod event copies only the two requested matrices, and names, taints and label
columns are reused until a node event (a snapshot plus an assumed pod: ~26 us at 5,000 nodes).

Each snapshot carries the table's generation, and the table remembers which row each of its
last HISTORY pod events wrote (`node_history`), so `NodeSnapshot.changed_since` names the rows
that changed between two snapshots without comparing matrices (plugins keep per-row results
across cycles with it); a node event, a new resource column or a rebuild answers "everything".
Arrays and copy on write: `node_arrays`; label columns: `node_labels`. The copy is skipped
when the arrays' reference counts show no snapshot (nor view) of them alive any more: the
cycle lets go of its snapshot before it assumes the pod, so a pod event usually writes in place.

Inside `bulk()` (an initial sync, a burst of informer events) the arrays are not touched: events
update the per-node and per-pod dicts only, and the arrays are rebuilt from them once, when the
bulk ends or a snapshot is asked for (inserting 5,000 nodes one row at a time is quadratic).
Resource columns are still registered in event order, so the result is the same table.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from apis.core import Node, NodeTaint
from placement.arrays import BoolMask, RowIndex
from placement.pods.cluster.node_arrays import (
    BASE_RESOURCES,
    NON_ZERO_RESOURCES,
    Counted,
    NodeArrays,
    ResourceMatrix,
    counted,
    summed,
)
from placement.pods.cluster.node_history import HISTORY, WriteHistory
from placement.pods.cluster.node_labels import LabelColumns, absent_column
from placement.pods.cluster.overlay import NO_OVERLAY, PodOverlay
from placement.pods.cluster.requests import Requests, amount
from placement.snapshot.fleet_snapshot import Column

__all__ = [
    "BASE_RESOURCES",
    "HISTORY",
    "NON_ZERO_RESOURCES",
    "NodeSnapshot",
    "NodeTable",
    "ResourceMatrix",
    "SnapshotVersion",
    "Taint",
]


@dataclass(frozen=True)
class Taint:
    """One taint of a node, as the TaintToleration plugin compares it."""

    key: str
    value: str
    effect: str

    @classmethod
    def of(cls, taint: NodeTaint) -> Taint:
        return cls(taint.key, taint.value or "", taint.effect)


class SnapshotVersion(NamedTuple):
    """A snapshot's place in its table's history (`NodeSnapshot.version`)."""

    history: object  # the table's history, compared by identity
    generation: int


@dataclass(frozen=True)
class NodeSnapshot:
    """The nodes for one scheduling cycle; never changes once taken."""

    names: tuple[str, ...]
    resources: tuple[str, ...]
    allocatable: ResourceMatrix
    requested: ResourceMatrix
    non_zero_requested: ResourceMatrix  # [nodes x NON_ZERO_RESOURCES], for scoring
    unschedulable: BoolMask
    taints: Mapping[int, tuple[Taint, ...]]  # row -> taints, tainted rows only
    labels: Mapping[str, Column]
    overlay: PodOverlay = NO_OVERLAY  # pods gone or added in a hypothetical cluster (preemption)
    generation: int = field(default=-1, init=False, compare=False)
    """The table's count of writes when this was taken; -1 for a snapshot no table took
    (built by hand, or derived with `dataclasses.replace`: init=False fields are not copied,
    so a derived snapshot never claims its source's history)."""
    _history: WriteHistory | None = field(default=None, init=False, compare=False, repr=False)
    _version: SnapshotVersion | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def version(self) -> SnapshotVersion | None:
        """What `changed_since` needs of this snapshot later, without keeping its arrays
        alive; None for a snapshot no table took (set with `_history` by the table)."""
        return self._version

    def changed_since(self, earlier: NodeSnapshot | SnapshotVersion | None) -> RowIndex | None:
        """The rows whose requested amounts (`requested`, `non_zero_requested`) may differ
        between `earlier` and this snapshot, ascending, everything else being the very same;
        None when that is not known: snapshots of different tables, a node event or a new
        resource between them, more than HISTORY pod events, or a snapshot no table took.

        Cheaper than comparing matrices, and it needs no old matrix kept alive."""
        if isinstance(earlier, NodeSnapshot):
            earlier = earlier.version
        history = self._history
        if history is None or earlier is None or earlier.history is not history:
            return None
        return history.rows_between(earlier.generation, self.generation)

    def row_of(self, name: str) -> int | None:
        row = bisect.bisect_left(self.names, name)
        return row if row < self.size and self.names[row] == name else None

    def column_of(self, resource: str) -> int | None:
        try:
            return self.resources.index(resource)
        except ValueError:
            return None

    def label(self, key: str) -> Column:
        """The coded column of a label key (all absent when no node has it), the shape
        `placement.selectors` compiles selectors against."""
        column = self.labels.get(key)
        return column if column is not None else absent_column(self.size)

    def free(self) -> ResourceMatrix:
        """allocatable - requested (negative where a node is over-committed)."""
        free: ResourceMatrix = self.allocatable - self.requested
        return free

    def vector(self, requests: Mapping[str, int]) -> npt.NDArray[np.int64]:
        """A pod's requests laid out over `resources`; a resource no node knows is dropped
        (check `column_of` first: no node can fit it)."""
        out = np.zeros(len(self.resources), dtype=np.int64)
        for name, value in requests.items():
            col = self.column_of(name)
            if col is not None:
                out[col] = value
        return out


class NodeTable:
    """The mutable side: apply events, take `snapshot()`s."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._resources: list[str] = list(BASE_RESOURCES)
        self._arrays = NodeArrays.empty(len(BASE_RESOURCES))  # copied on write
        self._taints: dict[str, tuple[Taint, ...]] = {}
        self._labels = LabelColumns()
        self._pods: dict[str, tuple[str, Counted]] = {}  # pod key -> (node, what it counts)
        self._per_node: dict[str, dict[str, Counted]] = {}  # node -> pod key -> the same
        self._static: _Static | None = None  # what only node events change, for snapshots
        self._last: NodeSnapshot | None = None
        self._allocatable_of: dict[str, Requests] = {}  # node -> allocatable amounts
        self._cordoned: dict[str, bool] = {}  # node -> spec.unschedulable
        self._cols: dict[tuple[str, ...], tuple[int, ...]] = {}  # resource names -> columns
        self._bulk = 0  # nesting depth of `bulk()`
        self._stale = False  # the arrays lag the dicts (bulk): rebuild before reading them
        self._history = WriteHistory()

    @classmethod
    def build(
        cls, nodes: Iterable[Node], pods: Iterable[tuple[str, str, Requests, Requests]] = ()
    ) -> NodeTable:
        """A table from nodes and (pod key, node name, requests, non-zero requests), filled
        in bulk: node by node, each insert would copy every array (quadratic)."""
        table = cls()
        by_name = {_name(node): node for node in nodes}  # the last of a name wins
        with table.bulk():
            for name in sorted(by_name):
                table.put_node(by_name[name])
            for key, node_name, requests, non_zero in pods:
                table.add_pod(key, node_name, requests, non_zero)
        return table

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Apply many events, then rebuild the arrays once (see the module docstring)."""
        self._bulk += 1
        try:
            yield
        finally:
            self._bulk -= 1
            if not self._bulk and self._stale:
                self._rebuild()

    # --- nodes -------------------------------------------------------------------------------

    def put_node(self, node: Node) -> None:
        """Add a node, or replace everything known of it (its pods stay counted)."""
        name = _name(node)
        if self._bulk:
            self._put_node_data(node, name)
            return
        if self._stale:
            self._rebuild()
        self._writable(nodes=True)
        row = bisect.bisect_left(self._names, name)
        if row == len(self._names) or self._names[row] != name:
            self._insert_row(row, name)
        amounts = self._remember(node, name)
        self._arrays.allocatable[row] = self._amount_vector(amounts)
        self._arrays.unschedulable[row] = self._cordoned[name]
        self._labels.put(self._names, row, name, dict(node.metadata.labels or {}))

    def remove_node(self, name: str) -> None:
        """Forget a node; its pods are remembered and counted again if it comes back."""
        if self._bulk:
            if self._allocatable_of.pop(name, None) is not None:
                self._cordoned.pop(name, None)
                self._taints.pop(name, None)
                self._labels.forget(name)
                self._mark_stale(nodes=True)
            return
        if self._stale:
            self._rebuild()
        self._allocatable_of.pop(name, None)
        self._cordoned.pop(name, None)
        row = bisect.bisect_left(self._names, name)
        if row == len(self._names) or self._names[row] != name:
            return
        self._writable(nodes=True)
        del self._names[row]
        self._arrays.delete_row(row)
        self._taints.pop(name, None)
        self._labels.remove_row(self._names, row, name)

    # --- pods --------------------------------------------------------------------------------

    def add_pod(
        self, key: str, node_name: str, requests: Requests, non_zero: Requests | None = None
    ) -> None:
        """Count a pod (bound or assumed) on a node with its `pod_requests` and
        `non_zero_requests` (the same when not given); a pod already counted moves or changes."""
        self.remove_pod(key)
        pod = counted(requests, non_zero)
        self._pods[key] = (node_name, pod)
        self._per_node.setdefault(node_name, {})[key] = pod
        if self._bulk or self._stale:
            if node_name in self._allocatable_of:
                self._register(pod.requests)
                self._mark_stale(nodes=False)
            return
        row = self._row(node_name)
        if row is not None:
            self._add_to_row(row, pod, 1)

    def remove_pod(self, key: str) -> None:
        """Stop counting a pod (deleted, finished, or an assumption dropped); unknown: no-op."""
        placed = self._pods.pop(key, None)
        if placed is None:
            return
        node_name, pod = placed
        pods = self._per_node[node_name]
        del pods[key]
        if not pods:
            del self._per_node[node_name]
        if self._bulk or self._stale:
            if node_name in self._allocatable_of:
                self._mark_stale(nodes=False)
            return
        row = self._row(node_name)
        if row is not None:
            self._add_to_row(row, pod, -1)

    def pod_node(self, key: str) -> str | None:
        placed = self._pods.get(key)
        return placed[0] if placed else None

    # --- views -------------------------------------------------------------------------------

    def snapshot(self) -> NodeSnapshot:
        """The immutable view for one cycle (the same object until the next event)."""
        if self._stale:
            self._rebuild()
        if self._last is None:
            arrays = self._arrays
            arrays.share()
            if self._static is None:
                rows = {name: row for row, name in enumerate(self._names)}
                taints = {rows[n]: t for n, t in sorted(self._taints.items())}
                self._static = _Static(
                    tuple(self._names),
                    tuple(self._resources),
                    MappingProxyType(taints),
                    self._labels.view(),
                )
            names, resources, taints_view, labels = self._static
            self._last = NodeSnapshot(
                names=names,
                resources=resources,
                allocatable=arrays.allocatable,
                requested=arrays.requested,
                non_zero_requested=arrays.non_zero,
                unschedulable=arrays.unschedulable,
                taints=taints_view,
                labels=labels,
            )
            history, last = self._history, self._last
            object.__setattr__(last, "generation", history.generation)
            object.__setattr__(last, "_history", history)
            object.__setattr__(last, "_version", SnapshotVersion(history, history.generation))
        return self._last

    # --- internals ---------------------------------------------------------------------------

    def _put_node_data(self, node: Node, name: str) -> None:
        """put_node in bulk: the dicts only, columns registered in the per-event order."""
        if name not in self._allocatable_of:  # a new row: its pods' resources come first
            self._register(summed(p.requests for p in self._per_node.get(name, {}).values()))
        self._register(self._remember(node, name))
        self._labels.remember(name, node.metadata.labels or {})
        self._mark_stale(nodes=True)

    def _remember(self, node: Node, name: str) -> Requests:
        """Record a node's allocatable amounts (returned), cordon and taints by name."""
        quantities = (node.status.allocatable if node.status else None) or {}
        amounts = {r: amount(r, q, capacity=True) for r, q in quantities.items()}
        self._allocatable_of[name] = amounts
        self._cordoned[name] = bool(node.spec.unschedulable)
        taints = tuple(Taint.of(t) for t in node.spec.taints or ())
        if taints:
            self._taints[name] = taints
        else:
            self._taints.pop(name, None)
        return amounts

    def _register(self, requests: Mapping[str, int]) -> None:
        """New resource names get a column (appended, in the order met)."""
        for name in requests:
            if name not in self._resources:
                self._column(name)

    def _mark_stale(self, nodes: bool) -> None:
        self._stale = True
        self._last = None
        if nodes:
            self._static = None

    def _rebuild(self) -> None:
        """Every array from the dicts (fresh arrays: nothing shared with a snapshot)."""
        names = sorted(self._allocatable_of)
        self._arrays = NodeArrays.rebuilt(
            names, self._resources, self._allocatable_of, self._cordoned, self._per_node
        )
        self._labels.rebuild(names)
        self._names = names
        self._static = None
        self._last = None
        self._stale = False
        self._history.everything()

    def _writable(self, nodes: bool) -> None:
        """Make the arrays an event writes private again; `nodes` for node events, which
        may change any array and everything else a snapshot holds."""
        self._last = None
        self._arrays.writable(nodes)
        if nodes:
            self._static = None
            self._history.everything()

    def _row(self, name: str) -> int | None:
        row = bisect.bisect_left(self._names, name)
        return row if row < len(self._names) and self._names[row] == name else None

    def _insert_row(self, row: int, name: str) -> None:
        self._names.insert(row, name)
        arrays = self._arrays
        arrays.insert_row(row)
        self._labels.insert_row(row)
        pods = self._per_node.get(name, {}).values()
        arrays.requested[row] = self._amount_vector(summed(p.requests for p in pods))
        for pod in pods:
            arrays.non_zero[row] += pod.non_zero

    def _column(self, resource: str) -> int:
        try:
            return self._resources.index(resource)
        except ValueError:
            self._resources.append(resource)
            self._static = None
            self._last = None
            self._history.everything()
            self._arrays.widen()
            return len(self._resources) - 1

    def _add_to_row(self, row: int, counted: Counted, sign: int) -> None:
        """Add (sign 1) or take away (-1) one pod's amounts on a row, cell by cell: a pod asks
        for a few resources, and a few scalar updates beat building a full-width vector."""
        names = tuple(counted.requests)
        cols = self._cols.get(names)
        if cols is None:
            cols = tuple(self._column(name) for name in names)  # may widen the matrices
            self._cols[names] = cols
        self._writable(nodes=False)
        self._history.wrote(row)
        arrays = self._arrays
        requested = arrays.requested
        for col, value in zip(cols, counted.requests.values(), strict=True):
            requested[row, col] += sign * value
        cpu, memory = counted.non_zero
        non_zero = arrays.non_zero
        non_zero[row, 0] += sign * cpu
        non_zero[row, 1] += sign * memory

    def _amount_vector(self, requests: Mapping[str, int]) -> npt.NDArray[np.int64]:
        cols = [self._column(name) for name in requests]  # may widen the matrices first
        out = np.zeros(len(self._resources), dtype=np.int64)
        out[cols] = list(requests.values())
        return out


class _Static(NamedTuple):
    """The parts of a snapshot that only node events (and new resources) change."""

    names: tuple[str, ...]
    resources: tuple[str, ...]
    taints: Mapping[int, tuple[Taint, ...]]
    labels: Mapping[str, Column]


def _name(node: Node) -> str:
    return node.metadata.name or ""
