"""Caches the pod plugins keep per snapshot: a value derived from one part of a `NodeSnapshot`
(and results per pod shape) kept while that part stays the same object, read-only cached
arrays, and a vector read on the candidate rows.

A `NodeSnapshot` keeps the same `names`, `taints` and `labels` objects for every pod event and
replaces them on the next node event, so what depends only on the nodes can be computed once and
reused while those objects stay the same (identity, not equality: comparing would cost as much
as recomputing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np

from placement.arrays import RowIndex
from placement.pods.cluster.nodes import NodeSnapshot

__all__ = ["PerSnapshot", "frozen", "on_rows"]

T = TypeVar("T")

_MEMO_LIMIT = 512
"""Per-pod-shape results kept per snapshot (tolerations, selectors); cleared when full."""


def frozen(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A cached array nobody may write to (the engine and other plugins share it)."""
    array.flags.writeable = False
    return array


class PerSnapshot(Generic[T]):
    """One value derived from a part of the snapshot, rebuilt when that part is replaced.

    `memo` holds results per pod shape (a hashable key) for the same part, so that pods
    of one workload pay for their tolerations or selectors once per node event."""

    def __init__(
        self, part: Callable[[NodeSnapshot], object], build: Callable[[NodeSnapshot], T]
    ) -> None:
        self._part = part
        self._build = build
        self._key: object = None  # a strong reference: identity stays meaningful
        self._value: tuple[T] | None = None
        self.memo: dict[Any, Any] = {}

    def get(self, nodes: NodeSnapshot) -> T:
        key = self._part(nodes)
        if self._value is None or self._key is not key:
            self._value = (self._build(nodes),)
            self._key = key
            self.memo = {}
        elif len(self.memo) > _MEMO_LIMIT:
            self.memo = {}
        return self._value[0]


def on_rows(vector: np.ndarray[Any, Any], rows: RowIndex, size: int) -> np.ndarray[Any, Any]:
    """`vector[rows]`, without the gather when `rows` is every row in order."""
    if len(rows) == size:
        return vector
    return vector.take(rows)
