"""Per-node results kept from one snapshot to the next and recomputed only where a node changed.

Between two scheduling cycles the engine's snapshot usually differs by one row: the node the
last pod was assumed on. A resource score or fit mask depends, row by row, on that row's
allocatable and requested amounts only, so the previous full-size result for the same pod shape
stays right everywhere except on the rows whose requested amounts changed. The `NodeTable`
knows those rows (`NodeSnapshot.changed_since`, from the generation each snapshot carries), so
nothing is compared and no old matrix is kept alive for a comparison.

Only snapshots a table took are trusted (their generation is known and their arrays frozen); a
snapshot built by hand or derived with `dataclasses.replace` (the engine's nominated pods,
preemption's hypothetical clusters) is recomputed every time.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from placement.pods.cluster.nodes import NodeSnapshot, SnapshotVersion

__all__ = ["MAX_CHANGED", "RowCache"]

MAX_CHANGED = 64
"""More changed rows than this: recompute everything (vector operations win again)."""

Array = npt.NDArray[Any]


class _Entry:
    __slots__ = ("nonzero", "result", "static", "version")

    def __init__(
        self, static: tuple[Any, ...], version: SnapshotVersion, result: Array, nonzero: int
    ):
        self.static = static
        self.version = version
        self.result = result
        self.nonzero = nonzero


class RowCache:
    """Full-size, row-wise results per key (a pod shape), kept across snapshots.

    `static` are the objects the result depends on that must be the very same (allocatable,
    the resource names); the requested matrices may differ on the rows `changed_since` names.
    `full()` computes every row as an array; `partial(rows)` the given rows only (a short list
    of row numbers), as one Python value per row, with the same arithmetic: between two
    cycles usually one row changed, and a few scalar reads and writes cost less than the
    gathers, the new array and the scatter of a vector update (about a microsecond each).

    Each entry also counts its non-zero rows, kept up to date row by row (`counted`): a fit
    mask that is True everywhere is then known without looking at it."""

    def __init__(self, limit: int = 64) -> None:
        self._limit = limit
        self._entries: dict[Hashable, _Entry] = {}

    def get(
        self,
        key: Hashable,
        nodes: NodeSnapshot,
        static: tuple[Any, ...],
        full: Callable[[], Array],
        partial: Callable[[list[int]], Iterable[Any]],
    ) -> Array:
        """The result for `key` on `nodes`."""
        version = nodes.version
        if version is None:
            return full()  # not a table's snapshot: nothing to start from
        return self._lookup(key, nodes, version, static, full, partial)[0]

    def counted(
        self,
        key: Hashable,
        nodes: NodeSnapshot,
        static: tuple[Any, ...],
        full: Callable[[], Array],
        partial: Callable[[list[int]], Iterable[Any]],
    ) -> tuple[Array, int]:
        """`get`, and how many of the result's rows are non-zero (True, for a mask)."""
        version = nodes.version
        if version is None:
            result = full()  # not a table's snapshot: nothing to start from
            return result, int(np.count_nonzero(result))
        return self._lookup(key, nodes, version, static, full, partial)

    def _lookup(
        self,
        key: Hashable,
        nodes: NodeSnapshot,
        version: SnapshotVersion,
        static: tuple[Any, ...],
        full: Callable[[], Array],
        partial: Callable[[list[int]], Iterable[Any]],
    ) -> tuple[Array, int]:
        entry = self._entries.pop(key, None)
        if entry is not None and _same(entry.static, static):
            rows = nodes.changed_since(entry.version)
            if rows is not None and rows.size <= MAX_CHANGED:
                if rows.size:
                    changed: list[int] = rows.tolist()
                    values = partial(changed)
                    old = entry.result
                    result = _private(old)  # held by `entry` and `old` during the call
                    nonzero = entry.nonzero
                    for row, value in zip(changed, values, strict=True):
                        nonzero += bool(value) - bool(old.item(row))
                        result[row] = value
                    result.flags.writeable = False
                    entry.result, entry.nonzero = result, nonzero
                entry.version = version
                self._keep(key, entry)
                return entry.result, entry.nonzero
        result = full()
        result.flags.writeable = False
        nonzero = int(np.count_nonzero(result))
        self._keep(key, _Entry(static, version, result, nonzero))
        return result, nonzero

    def _keep(self, key: Hashable, entry: _Entry) -> None:
        if len(self._entries) >= self._limit:
            del self._entries[next(iter(self._entries))]  # the least recently used
        self._entries[key] = entry


_HELD_HERE = 4
"""References to an array `_private` sees when only the entry being updated holds it: the
entry, the caller's local, the parameter and `sys.getrefcount`'s own argument."""


def _private(result: Array) -> Array:
    """`result` itself, made writable, when nothing but the cache entry being updated holds
    it (no caller kept the previous answer, no view of it is alive): nobody can see the rows
    change, and the copy (tens of kilobytes per plugin and pod) is saved. Otherwise a copy."""
    if result.base is None and sys.getrefcount(result) <= _HELD_HERE:
        result.flags.writeable = True
        return result
    return result.copy()


def _same(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    return len(old) == len(new) and all(map(operator.is_, old, new))
