"""kube-scheduler's default score normalization (its helper's DefaultNormalizeScore), on arrays."""

from __future__ import annotations

import numpy as np

from placement.arrays import ScoreVector
from placement.pods.framework.interface import MAX_NODE_SCORE
from placement.pods.framework.noscore import same_scores
from plugins.pods.helper.snapshot_cache import frozen

__all__ = ["default_normalize"]


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
