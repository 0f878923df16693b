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
from collections.abc import Callable, Hashable
from typing import Any

import numpy.typing as npt

from placement.arrays import RowIndex
from placement.pods.nodes import NodeSnapshot, SnapshotVersion

__all__ = ["MAX_CHANGED", "RowCache"]

MAX_CHANGED = 64
"""More changed rows than this: recompute everything (vector operations win again)."""

Array = npt.NDArray[Any]


class _Entry:
    __slots__ = ("result", "static", "version")

    def __init__(self, static: tuple[Any, ...], version: SnapshotVersion, result: Array):
        self.static = static
        self.version = version
        self.result = result


class RowCache:
    """Full-size, row-wise results per key (a pod shape), kept across snapshots.

    `static` are the objects the result depends on that must be the very same (allocatable,
    the resource names); the requested matrices may differ on the rows `changed_since` names.
    `full()` computes every row; `partial(rows)` the given rows only, with the same arithmetic
    (the callers share one function over whole columns or gathered rows, so both agree)."""

    def __init__(self, limit: int = 64) -> None:
        self._limit = limit
        self._entries: dict[Hashable, _Entry] = {}

    def get(
        self,
        key: Hashable,
        nodes: NodeSnapshot,
        static: tuple[Any, ...],
        full: Callable[[], Array],
        partial: Callable[[RowIndex], Array],
    ) -> Array:
        version = nodes.version
        if version is None:
            return full()  # not a table's snapshot: nothing to start from
        entry = self._entries.pop(key, None)
        result: Array | None = None
        if entry is not None and _same(entry.static, static):
            rows = nodes.changed_since(entry.version)
            if rows is not None and rows.size <= MAX_CHANGED:
                if rows.size == 0:
                    result = entry.result
                else:
                    result = entry.result.copy()
                    result[rows] = partial(rows)
        if result is None:
            result = full()
        result.flags.writeable = False
        if len(self._entries) >= self._limit:
            del self._entries[next(iter(self._entries))]  # the least recently used
        self._entries[key] = _Entry(static, version, result)
        return result


def _same(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    return len(old) == len(new) and all(map(operator.is_, old, new))
