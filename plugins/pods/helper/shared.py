"""Helpers the pod plugins share: args checks, per-snapshot caches, kube's score normalization.

A `NodeSnapshot` keeps the same `names`, `taints` and `labels` objects for every pod event and
replaces them on the next node event, so what depends only on the nodes can be computed once and
reused while those objects stay the same (identity, not equality: comparing would cost as much
as recomputing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar, cast

import numpy as np

from apis.pluginargs import ArgsModel, validate_args
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.interface import MAX_NODE_SCORE
from placement.pods.framework.noscore import same_scores

__all__ = [
    "PerSnapshot",
    "args_of",
    "check_fields",
    "default_normalize",
    "frozen",
    "on_rows",
]

T = TypeVar("T")
M = TypeVar("M", bound=ArgsModel)
K = TypeVar("K")

_MEMO_LIMIT = 512
"""Per-pod-shape results kept per snapshot (tolerations, selectors); cleared when full."""


def args_of(model: type[M], args: M | Mapping[str, Any] | None) -> M:
    """A plugin's args as its model: the model the registry's caller validated already, or a
    mapping (tests, direct use) validated here. ValueError `field: problem` naming the field."""
    return cast(M, validate_args(model, args))


def check_fields(args: Mapping[str, Any], allowed: Iterable[str], where: str = "") -> None:
    """Refuse unknown fields, as kube-scheduler's strict decoding of plugin args does."""
    if not isinstance(args, Mapping):
        raise ValueError(f"{where or 'args'}: must be a mapping, not {type(args).__name__}")
    known = set(allowed)
    for name in args:
        if name not in known:
            raise ValueError(f"{where}{name}: unknown field")


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


def default_normalize(
    scores: ScoreVector, reverse: bool, *, nonnegative: bool = False
) -> ScoreVector:
    """kube-scheduler's DefaultNormalizeScore: scale to 0..MAX_NODE_SCORE by the maximum
    (integer division), reversed if asked; all zero stays zero (or all MAX reversed).

    `nonnegative` (the caller knows no score is below 0, e.g. counts of taints) with a small
    maximum reads the answer from a table per maximum: one gather instead of four passes."""
    if scores.size == 0:
        return scores.astype(np.int64)
    top = int(scores.max())
    if top <= 0:
        return same_scores(MAX_NODE_SCORE if reverse else 0, scores.size)  # shared, read-only
    if nonnegative and top <= _TABLE_LIMIT:
        table = _TABLES.get((top, reverse))
        if table is None:
            table = _scaled(np.arange(top + 1, dtype=np.int64), top, reverse)
            _TABLES[(top, reverse)] = frozen(table)
        found: ScoreVector = table.take(scores)
        return found
    return _scaled(scores.astype(np.int64), top, reverse)


def _scaled(scores: ScoreVector, top: int, reverse: bool) -> ScoreVector:
    scaled: ScoreVector = (scores * MAX_NODE_SCORE) // top
    return MAX_NODE_SCORE - scaled if reverse else scaled


_TABLE_LIMIT = 256
_TABLES: dict[tuple[int, bool], ScoreVector] = {}  # (maximum, reverse) -> score per value


def fail_reason_rows(candidates: BoolMask, failing: BoolMask) -> BoolMask:
    """The candidate rows a filter removes (reasons cover only the rows it removed)."""
    rows: BoolMask = candidates & failing
    return rows
