"""Per-node results kept from one snapshot to the next and recomputed only where a node changed.

Between two scheduling cycles the engine's snapshot usually differs by one row: the node the
last pod was assumed on (`NodeTable` copies the requested matrices on each pod event and keeps
`allocatable` until a node event). A resource score or fit mask depends, row by row, on that
row's allocatable and requested amounts only, so the previous full-size result for the same pod
shape stays right everywhere except on the rows whose requested amounts differ. Finding them is
one comparison of the two matrices (shared by every plugin and pod shape through `changed_rows`),
much cheaper than the divisions it saves.

Only frozen arrays are trusted (a `NodeTable` snapshot freezes its arrays and copies before the
next write); a writable array, say from a test building a `NodeSnapshot` by hand, is recomputed
every time. Identity is checked on strong references kept in the cache, so an id is never reused
while an entry holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import numpy.typing as npt

from placement.arrays import RowIndex

__all__ = ["MAX_CHANGED", "RowCache", "changed_rows"]

MAX_CHANGED = 64
"""More changed rows than this: recompute everything (vector operations win again)."""

_PAIR_LIMIT = 32
_EMPTY: RowIndex = np.zeros(0, dtype=np.intp)
_EMPTY.flags.writeable = False

Array = npt.NDArray[Any]

# (id(old), id(new)) -> (old, new, rows or None): the rows two matrices differ on.
_pairs: dict[tuple[int, int], tuple[Array, Array, RowIndex | None]] = {}


def _trusted(array: Array) -> bool:
    return not array.flags.writeable


def changed_rows(old: Array, new: Array) -> RowIndex | None:
    """The rows on which two frozen matrices (or vectors) differ, ascending; None when they
    cannot be compared (shape, writable) or differ on more than MAX_CHANGED rows."""
    if old is new:
        return _EMPTY
    if old.shape != new.shape or not (_trusted(old) and _trusted(new)):
        return None
    key = (id(old), id(new))
    cached = _pairs.get(key)
    if cached is not None and cached[0] is old and cached[1] is new:
        return cached[2]
    width = old.shape[1] if old.ndim == 2 else 1
    flat = np.not_equal(old, new).ravel().nonzero()[0]
    rows: RowIndex | None = None
    if flat.size <= MAX_CHANGED * width:
        # A handful of rows: Python sets beat np.unique's sort-based machinery.
        found = sorted({i // width for i in flat.tolist()}) if width > 1 else flat.tolist()
        if len(found) <= MAX_CHANGED:
            rows = np.array(found, dtype=np.intp)
    if len(_pairs) >= _PAIR_LIMIT:
        _pairs.clear()
    _pairs[key] = (old, new, rows)
    return rows


class _Entry:
    __slots__ = ("dynamic", "result", "static")

    def __init__(self, static: tuple[Any, ...], dynamic: tuple[Array, ...], result: Array):
        self.static = static
        self.dynamic = dynamic
        self.result = result


class RowCache:
    """Full-size, row-wise results per key (a pod shape), kept across snapshots.

    `static` are the objects the result depends on that must be the very same (allocatable,
    the resource names); `dynamic` the matrices that may differ on a few rows (requested).
    `full()` computes every row; `partial(rows)` the given rows only, with the same arithmetic
    (the callers share one function over whole columns or gathered rows, so both agree)."""

    def __init__(self, limit: int = 64) -> None:
        self._limit = limit
        self._entries: dict[Hashable, _Entry] = {}

    def get(
        self,
        key: Hashable,
        static: tuple[Any, ...],
        dynamic: tuple[Array, ...],
        full: Callable[[], Array],
        partial: Callable[[RowIndex], Array],
    ) -> Array:
        entry = self._entries.pop(key, None)
        if entry is not None and _same(entry.static, static):
            if _same(entry.dynamic, dynamic):  # the same snapshot again
                self._entries[key] = entry
                return entry.result
        elif entry is not None:
            entry = None  # a node event: everything again
        if not all(_trusted(a) for a in dynamic) or not all(
            _trusted(a) for a in static if isinstance(a, np.ndarray)
        ):
            return full()
        result: Array | None = None
        if entry is not None:
            rows = _union(entry.dynamic, dynamic)
            if rows is not None:
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
        self._entries[key] = _Entry(static, dynamic, result)
        return result


def _same(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    return all(a is b for a, b in zip(old, new, strict=True))


def _union(old: tuple[Array, ...], new: tuple[Array, ...]) -> RowIndex | None:
    found: RowIndex | None = None
    for a, b in zip(old, new, strict=True):
        rows = changed_rows(a, b)
        if rows is None:
            return None
        if found is None or found.size == 0:
            found = rows
        elif rows.size:
            found = np.union1d(found, rows)
    return _EMPTY if found is None else found
