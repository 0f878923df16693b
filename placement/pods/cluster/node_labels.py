"""The label columns of a `NodeTable` (`placement.pods.cluster.nodes`): each node's labels and, per
label key, the integer-coded `Column` the hub's selector compilation reads
(`placement.snapshot.fleet_snapshot`).

Columns are immutable (frozen codes, a read-only index) and replaced whenever they change, so a
`NodeSnapshot` can keep the mapping it was given while the table moves on. The rows are the
table's (nodes sorted by name); the table tells this class when a row is inserted or removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

import numpy as np

from placement.snapshot.fleet_snapshot import Column

__all__ = ["MISSING", "LabelColumns", "absent_column"]

MISSING = -1
"""The code of a row without the label."""


def absent_column(size: int) -> Column:
    """The column of a label key no node has."""
    return Column(np.full(size, MISSING, dtype=np.int32), (), MappingProxyType({}))


def _frozen(column: Column) -> Column:
    """`column` with read-only codes and index."""
    column.codes.flags.writeable = False
    index = column.index
    return Column(column.codes, column.values, MappingProxyType(dict(index)))


def _built(size: int, cells: Iterable[tuple[int, str]]) -> Column:
    return _frozen(Column.build(size, cells))


class LabelColumns:
    """Node labels by node name, and the coded column of every label key some node has."""

    __slots__ = ("columns", "labels")

    def __init__(self) -> None:
        self.labels: dict[str, dict[str, str]] = {}  # node -> labels (nodes with some)
        self.columns: dict[str, Column] = {}  # label key -> column, replaced on change

    def view(self) -> Mapping[str, Column]:
        """The columns as a snapshot keeps them (a copy: the table goes on replacing them)."""
        return MappingProxyType(dict(self.columns))

    def remember(self, name: str, labels: Mapping[str, str]) -> None:
        """Record a node's labels without touching the columns (a bulk update: `rebuild`
        follows)."""
        if labels:
            self.labels[name] = dict(labels)
        else:
            self.labels.pop(name, None)

    def forget(self, name: str) -> None:
        """Forget a node's labels without touching the columns (bulk)."""
        self.labels.pop(name, None)

    def put(self, names: Sequence[str], row: int, name: str, labels: dict[str, str]) -> None:
        """Node `name`, at `row` of `names`, now has `labels`: the columns of the keys whose
        value changed are replaced."""
        old = self.labels.get(name, {})
        self.remember(name, labels)
        for key in old.keys() | labels.keys():
            if old.get(key) == labels.get(key):
                continue
            value = labels.get(key)
            if value is None:
                self._recode(names, key)  # the value may have no row left: drop it
                continue
            column = self.columns.get(key)
            if column is None:
                column = absent_column(len(names))
            index = dict(column.index)
            code = index.setdefault(value, len(index))
            codes = column.codes.copy()
            codes[row] = code
            codes.flags.writeable = False
            self.columns[key] = Column(codes, tuple(index), MappingProxyType(index))

    def insert_row(self, row: int) -> None:
        """A node without labels yet was inserted at `row`."""
        for key, column in list(self.columns.items()):
            codes = np.insert(column.codes, row, MISSING)
            codes.flags.writeable = False
            self.columns[key] = Column(codes, column.values, column.index)

    def remove_row(self, names: Sequence[str], row: int, name: str) -> None:
        """Node `name` was removed from `row`; `names` are the rows left."""
        labels = self.labels.pop(name, {})
        for key in labels:
            self._recode(names, key)
        for key, column in list(self.columns.items()):
            if key not in labels:  # only the row goes
                codes = np.delete(column.codes, row)
                codes.flags.writeable = False
                self.columns[key] = Column(codes, column.values, column.index)

    def rebuild(self, names: Sequence[str]) -> None:
        """Every column from the labels, over the rows `names`."""
        by_key: dict[str, list[tuple[int, str]]] = {}
        for row, name in enumerate(names):
            for key, label in self.labels.get(name, {}).items():
                by_key.setdefault(key, []).append((row, label))
        self.columns = {key: _built(len(names), by_key[key]) for key in sorted(by_key)}

    def _recode(self, names: Sequence[str], key: str) -> None:
        """Rebuild one key's column from the node labels (after a value or row went away)."""
        rows = ((row, self.labels.get(n, {}).get(key)) for row, n in enumerate(names))
        cells = [(row, value) for row, value in rows if value is not None]
        if not cells:
            self.columns.pop(key, None)
            return
        self.columns[key] = _built(len(names), cells)
