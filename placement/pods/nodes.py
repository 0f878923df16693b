"""`NodeTable` and `NodeSnapshot`: the nodes of the local cluster as numpy columns.

Rows are the nodes sorted by name (byte order, as the hub's `FleetSnapshot`), so ties broken by
row are broken by name. Resources are int64 matrices [nodes x resources] in the scheduler's units
(`placement.pods.requests`): `allocatable` from the node status, `requested` the sum of the pods
counted on the node (bound, or assumed by the scheduler until their binding is seen), and
`non_zero_requested` the cpu and memory that scoring counts (`non_zero_requests`). Labels
are integer-coded columns the hub's selector compilation reads, taints a small mapping of the
tainted rows only.

`NodeTable` is updated per event (node added, updated, removed; a pod's requests added to or
removed from a node) without rebuilding; `NodeTable.snapshot()` is the immutable view one
scheduling cycle reads. Arrays are shared with the view and copied on the next write (copy on
write): a pod event copies only the two requested matrices, and names, taints and label
columns are reused until a node event (a snapshot plus an assumed pod: ~26 us at 5,000 nodes).

Each snapshot carries the table's generation, and the table remembers which row each of its
last HISTORY pod events wrote, so `NodeSnapshot.changed_since` names the rows that changed
between two snapshots without comparing matrices (plugins keep per-row results across cycles
with it); a node event, a new resource column or a rebuild answers "everything". The per-event
copy stays: it is ~10 us at 5,000 nodes (a few percent of a cycle), and writing in place would
need proof that no snapshot holding the arrays is alive, which the engine cannot give cheaply
while a cycle still holds its snapshot when it assumes the pod.

Inside `bulk()` (an initial sync, a burst of informer events) the arrays are not touched: events
update the per-node and per-pod dicts only, and the arrays are rebuilt from them once, when the
bulk ends or a snapshot is asked for (inserting 5,000 nodes one row at a time is quadratic).
Resource columns are still registered in event order, so the result is the same table.
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from apis.core import Node, NodeTaint
from placement.arrays import BoolMask, RowIndex
from placement.pods.requests import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Requests, amount
from placement.snapshot import Column

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

BASE_RESOURCES = (CPU, MEMORY, PODS, EPHEMERAL_STORAGE)
NON_ZERO_RESOURCES = (CPU, MEMORY)  # the columns of `non_zero_requested`
_MISSING = -1

HISTORY = 64
"""Pod events remembered per table for `NodeSnapshot.changed_since` (older: "everything")."""

ResourceMatrix = npt.NDArray[np.int64]
"""One row per node, one column per resource (`NodeSnapshot.resources`)."""


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
    generation: int = field(default=-1, init=False, compare=False)
    """The table's count of writes when this was taken; -1 for a snapshot no table took
    (built by hand, or derived with `dataclasses.replace`: init=False fields are not copied,
    so a derived snapshot never claims its source's history)."""
    _history: _History | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def version(self) -> SnapshotVersion | None:
        """What `changed_since` needs of this snapshot later, without keeping its arrays
        alive; None for a snapshot no table took."""
        history = self._history
        return None if history is None else SnapshotVersion(history, self.generation)

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
        return column if column is not None else _absent(self.size)

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


class _History:
    """The rows the table's last HISTORY pod events wrote, one per generation; node events
    (and new resource columns, rebuilds) start a new epoch in which nothing older is known."""

    __slots__ = ("epoch", "generation", "last", "rows")

    def __init__(self) -> None:
        self.generation = 0
        self.epoch = 0  # the generation of the last "everything changed"
        self.rows: deque[int] = deque(maxlen=HISTORY)  # rows[i]: generation - len + 1 + i
        # The last answer: every cached plugin result asks the same question in a cycle.
        self.last: tuple[int, int, RowIndex | None] = (-1, -1, None)

    def wrote(self, row: int) -> None:
        self.generation += 1
        self.rows.append(row)

    def everything(self) -> None:
        self.generation += 1
        self.epoch = self.generation
        self.rows.clear()

    def rows_between(self, old: int, new: int) -> RowIndex | None:
        last = self.last
        if last[0] == old and last[1] == new:
            return last[2]
        first = self.generation - len(self.rows)  # the generation before rows[0]
        if old < 0 or new < old or old < self.epoch or old < first or new > self.generation:
            return None
        if old == new:
            return _NONE_CHANGED
        if new - old == 1:
            found = [self.rows[old - first]]
        else:
            found = sorted(set(itertools.islice(self.rows, old - first, new - first)))
        rows = np.array(found, dtype=np.intp)
        rows.flags.writeable = False
        self.last = (old, new, rows)
        return rows


_NONE_CHANGED: RowIndex = np.zeros(0, dtype=np.intp)
_NONE_CHANGED.flags.writeable = False


def _absent(size: int) -> Column:
    return Column(np.full(size, _MISSING, dtype=np.int32), (), MappingProxyType({}))


def _frozen(array: npt.NDArray[np.generic]) -> None:
    array.flags.writeable = False


class NodeTable:
    """The mutable side: apply events, take `snapshot()`s."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._resources: list[str] = list(BASE_RESOURCES)
        self._allocatable: ResourceMatrix = np.zeros((0, len(BASE_RESOURCES)), dtype=np.int64)
        self._requested: ResourceMatrix = np.zeros((0, len(BASE_RESOURCES)), dtype=np.int64)
        self._non_zero: ResourceMatrix = np.zeros((0, len(NON_ZERO_RESOURCES)), dtype=np.int64)
        self._unschedulable: BoolMask = np.zeros(0, dtype=bool)
        self._taints: dict[str, tuple[Taint, ...]] = {}
        self._labels: dict[str, dict[str, str]] = {}  # node -> labels
        self._columns: dict[str, Column] = {}  # label key -> column, replaced on change
        self._pods: dict[str, tuple[str, _Counted]] = {}  # pod key -> (node, what it counts)
        self._per_node: dict[str, dict[str, _Counted]] = {}  # node -> pod key -> the same
        # The arrays are referenced by a snapshot: copy before writing. Pod events write only
        # the requested matrices, so the node-side arrays are tracked apart.
        self._shared_pods = False
        self._shared_nodes = False
        self._static: _Static | None = None  # what only node events change, for snapshots
        self._last: NodeSnapshot | None = None
        self._allocatable_of: dict[str, Requests] = {}  # node -> allocatable amounts
        self._cordoned: dict[str, bool] = {}  # node -> spec.unschedulable
        self._cols: dict[tuple[str, ...], tuple[int, ...]] = {}  # resource names -> columns
        self._bulk = 0  # nesting depth of `bulk()`
        self._stale = False  # the arrays lag the dicts (bulk): rebuild before reading them
        self._history = _History()

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
        quantities = (node.status.allocatable if node.status else None) or {}
        amounts = {resource: amount(resource, q) for resource, q in quantities.items()}
        self._allocatable[row] = self._amount_vector(amounts)
        self._allocatable_of[name] = amounts
        self._cordoned[name] = bool(node.spec.unschedulable)
        self._unschedulable[row] = bool(node.spec.unschedulable)
        taints = tuple(Taint.of(t) for t in node.spec.taints or ())
        if taints:
            self._taints[name] = taints
        else:
            self._taints.pop(name, None)
        self._set_labels(row, name, dict(node.metadata.labels or {}))

    def remove_node(self, name: str) -> None:
        """Forget a node; its pods are remembered and counted again if it comes back."""
        if self._bulk:
            if self._allocatable_of.pop(name, None) is not None:
                self._cordoned.pop(name, None)
                self._taints.pop(name, None)
                self._labels.pop(name, None)
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
        self._allocatable = np.delete(self._allocatable, row, axis=0)
        self._requested = np.delete(self._requested, row, axis=0)
        self._non_zero = np.delete(self._non_zero, row, axis=0)
        self._unschedulable = np.delete(self._unschedulable, row)
        self._taints.pop(name, None)
        labels = self._labels.pop(name, {})
        for key in labels:
            self._recode(key)
        for key, column in list(self._columns.items()):
            if key not in labels:  # only the row goes
                codes = np.delete(column.codes, row)
                _frozen(codes)
                self._columns[key] = Column(codes, column.values, column.index)

    # --- pods --------------------------------------------------------------------------------

    def add_pod(
        self, key: str, node_name: str, requests: Requests, non_zero: Requests | None = None
    ) -> None:
        """Count a pod (bound or assumed) on a node with its `pod_requests` and
        `non_zero_requests` (the same when not given); a pod already counted moves or changes."""
        self.remove_pod(key)
        counted = _Counted(dict(requests), _non_zero_pair(non_zero or requests))
        self._pods[key] = (node_name, counted)
        self._per_node.setdefault(node_name, {})[key] = counted
        if self._bulk or self._stale:
            if node_name in self._allocatable_of:
                self._register(counted.requests)
                self._mark_stale(nodes=False)
            return
        row = self._row(node_name)
        if row is not None:
            self._add_to_row(row, counted, 1)

    def remove_pod(self, key: str) -> None:
        """Stop counting a pod (deleted, finished, or an assumption dropped); unknown: no-op."""
        placed = self._pods.pop(key, None)
        if placed is None:
            return
        node_name, counted = placed
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
            self._add_to_row(row, counted, -1)

    def pod_node(self, key: str) -> str | None:
        placed = self._pods.get(key)
        return placed[0] if placed else None

    # --- views -------------------------------------------------------------------------------

    def snapshot(self) -> NodeSnapshot:
        """The immutable view for one cycle (the same object until the next event)."""
        if self._stale:
            self._rebuild()
        if self._last is None:
            arrays = (self._allocatable, self._requested, self._non_zero, self._unschedulable)
            for array in arrays:
                _frozen(array)
            self._shared_pods = self._shared_nodes = True
            if self._static is None:
                rows = {name: row for row, name in enumerate(self._names)}
                taints = {rows[n]: t for n, t in sorted(self._taints.items())}
                self._static = _Static(
                    tuple(self._names),
                    tuple(self._resources),
                    MappingProxyType(taints),
                    MappingProxyType(dict(self._columns)),
                )
            names, resources, taints_view, labels = self._static
            self._last = NodeSnapshot(
                names=names,
                resources=resources,
                allocatable=self._allocatable,
                requested=self._requested,
                non_zero_requested=self._non_zero,
                unschedulable=self._unschedulable,
                taints=taints_view,
                labels=labels,
            )
            object.__setattr__(self._last, "generation", self._history.generation)
            object.__setattr__(self._last, "_history", self._history)
        return self._last

    # --- internals ---------------------------------------------------------------------------

    def _put_node_data(self, node: Node, name: str) -> None:
        """put_node in bulk: the dicts only, columns registered in the per-event order."""
        if name not in self._allocatable_of:  # a new row: its pods' resources come first
            self._register(_summed(p.requests for p in self._per_node.get(name, {}).values()))
        self._allocatable_of[name] = self._allocatable_amounts(node)
        self._cordoned[name] = bool(node.spec.unschedulable)
        taints = tuple(Taint.of(t) for t in node.spec.taints or ())
        if taints:
            self._taints[name] = taints
        else:
            self._taints.pop(name, None)
        labels = dict(node.metadata.labels or {})
        if labels:
            self._labels[name] = labels
        else:
            self._labels.pop(name, None)
        self._mark_stale(nodes=True)

    def _allocatable_amounts(self, node: Node) -> Requests:
        quantities = (node.status.allocatable if node.status else None) or {}
        amounts = {name: amount(name, q) for name, q in quantities.items()}
        self._register(amounts)
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
        rows = {name: row for row, name in enumerate(names)}
        cols = {name: col for col, name in enumerate(self._resources)}
        size, width = len(names), len(self._resources)
        cells: tuple[list[int], list[int], list[int]] = ([], [], [])
        for row, name in enumerate(names):
            for resource, value in self._allocatable_of[name].items():
                cells[0].append(row)
                cells[1].append(cols[resource])
                cells[2].append(value)
        allocatable = np.zeros((size, width), dtype=np.int64)
        allocatable[cells[0], cells[1]] = cells[2]
        used: tuple[list[int], list[int], list[int]] = ([], [], [])
        non_zero = np.zeros((size, len(NON_ZERO_RESOURCES)), dtype=np.int64)
        for node_name, pods in self._per_node.items():
            row_of = rows.get(node_name)
            if row_of is None:
                continue
            cpu = memory = 0
            for counted in pods.values():
                for resource, value in counted.requests.items():
                    used[0].append(row_of)
                    used[1].append(cols[resource])
                    used[2].append(value)
                cpu += counted.non_zero[0]
                memory += counted.non_zero[1]
            non_zero[row_of] = (cpu, memory)
        requested = np.zeros((size, width), dtype=np.int64)
        np.add.at(requested, (used[0], used[1]), np.array(used[2], dtype=np.int64))
        by_key: dict[str, list[tuple[int, str]]] = {}
        for row, name in enumerate(names):
            for key, label in self._labels.get(name, {}).items():
                by_key.setdefault(key, []).append((row, label))
        columns: dict[str, Column] = {}
        for key in sorted(by_key):
            column = Column.build(size, by_key[key])
            _frozen(column.codes)
            columns[key] = Column(column.codes, column.values, MappingProxyType(column.index))
        self._names = names
        self._allocatable = allocatable
        self._requested = requested
        self._non_zero = non_zero
        self._unschedulable = np.array([self._cordoned[n] for n in names], dtype=bool)
        self._columns = columns
        self._shared_pods = self._shared_nodes = False
        self._static = None
        self._last = None
        self._stale = False
        self._history.everything()

    def _writable(self, nodes: bool) -> None:
        """Make the arrays an event writes private again; `nodes` for node events, which
        may change any array and everything else a snapshot holds."""
        self._last = None
        if self._shared_pods:
            self._requested = self._requested.copy()
            self._non_zero = self._non_zero.copy()
            self._shared_pods = False
        if nodes:
            self._static = None
            self._history.everything()
            if self._shared_nodes:
                self._allocatable = self._allocatable.copy()
                self._unschedulable = self._unschedulable.copy()
                self._shared_nodes = False

    def _row(self, name: str) -> int | None:
        row = bisect.bisect_left(self._names, name)
        return row if row < len(self._names) and self._names[row] == name else None

    def _insert_row(self, row: int, name: str) -> None:
        self._names.insert(row, name)
        width = len(self._resources)
        self._allocatable = np.insert(self._allocatable, row, np.zeros(width, np.int64), axis=0)
        self._requested = np.insert(self._requested, row, np.zeros(width, np.int64), axis=0)
        self._non_zero = np.insert(
            self._non_zero, row, np.zeros(len(NON_ZERO_RESOURCES), np.int64), axis=0
        )
        self._unschedulable = np.insert(self._unschedulable, row, False)
        for key, column in list(self._columns.items()):
            codes = np.insert(column.codes, row, _MISSING)
            _frozen(codes)
            self._columns[key] = Column(codes, column.values, column.index)
        pods = self._per_node.get(name, {}).values()
        self._requested[row] = self._amount_vector(_summed(p.requests for p in pods))
        for counted in pods:
            self._non_zero[row] += counted.non_zero

    def _column(self, resource: str) -> int:
        try:
            return self._resources.index(resource)
        except ValueError:
            self._resources.append(resource)
            self._static = None
            self._last = None
            self._history.everything()
            pad = np.zeros((len(self._names), 1), dtype=np.int64)
            self._allocatable = np.hstack([self._allocatable, pad])
            self._requested = np.hstack([self._requested, pad])
            return len(self._resources) - 1

    def _add_to_row(self, row: int, counted: _Counted, sign: int) -> None:
        """Add (sign 1) or take away (-1) one pod's amounts on a row, cell by cell: a pod asks
        for a few resources, and a few scalar updates beat building a full-width vector."""
        names = tuple(counted.requests)
        cols = self._cols.get(names)
        if cols is None:
            cols = tuple(self._column(name) for name in names)  # may widen the matrices
            self._cols[names] = cols
        self._writable(nodes=False)
        self._history.wrote(row)
        requested = self._requested
        for col, value in zip(cols, counted.requests.values(), strict=True):
            requested[row, col] += sign * value
        cpu, memory = counted.non_zero
        non_zero = self._non_zero
        non_zero[row, 0] += sign * cpu
        non_zero[row, 1] += sign * memory

    def _amount_vector(self, requests: Mapping[str, int]) -> npt.NDArray[np.int64]:
        cols = [self._column(name) for name in requests]  # may widen the matrices first
        out = np.zeros(len(self._resources), dtype=np.int64)
        out[cols] = list(requests.values())
        return out

    def _set_labels(self, row: int, name: str, labels: dict[str, str]) -> None:
        old = self._labels.get(name, {})
        if labels:
            self._labels[name] = labels
        else:
            self._labels.pop(name, None)
        for key in old.keys() | labels.keys():
            if old.get(key) == labels.get(key):
                continue
            column = self._columns.get(key)
            value = labels.get(key)
            if value is None:
                self._recode(key)  # the value may have no row left: drop it from the codes
                continue
            if column is None:
                column = _absent(len(self._names))
            index = dict(column.index)
            code = index.setdefault(value, len(index))
            codes = column.codes.copy()
            codes[row] = code
            _frozen(codes)
            self._columns[key] = Column(codes, tuple(index), MappingProxyType(index))

    def _recode(self, key: str) -> None:
        """Rebuild one key's column from the node labels (after a value or row went away)."""
        rows = ((row, self._labels.get(n, {}).get(key)) for row, n in enumerate(self._names))
        cells = [(row, value) for row, value in rows if value is not None]
        if not cells:
            self._columns.pop(key, None)
            return
        column = Column.build(len(self._names), cells)
        _frozen(column.codes)
        self._columns[key] = Column(column.codes, column.values, MappingProxyType(column.index))


class _Static(NamedTuple):
    """The parts of a snapshot that only node events (and new resources) change."""

    names: tuple[str, ...]
    resources: tuple[str, ...]
    taints: Mapping[int, tuple[Taint, ...]]
    labels: Mapping[str, Column]


class _Counted(NamedTuple):
    """What one pod counts on its node."""

    requests: Requests
    non_zero: tuple[int, int]  # cpu, memory (NON_ZERO_RESOURCES)


def _non_zero_pair(requests: Mapping[str, int]) -> tuple[int, int]:
    return requests.get(CPU, 0), requests.get(MEMORY, 0)


def _name(node: Node) -> str:
    return node.metadata.name or ""


def _summed(requests: Iterable[Mapping[str, int]]) -> Requests:
    out: Requests = {}
    for one in requests:
        for name, value in one.items():
            out[name] = out.get(name, 0) + value
    return out
