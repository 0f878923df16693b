"""A Score plugin's way of saying it adds nothing for this pod (kube's PreScore `Skip`).

`no_scores(n)` is a shared, read-only vector of n zeros; the scheduling cycle recognises it by
identity (`adds_nothing`) and leaves it out of the weighted total, which it could not change.
A plugin returns it when it knows without computing that every row scores 0 (NodeAffinity
without preferred terms, InterPodAffinity with no term on either side, an image no node
holds); callers other than the cycle see an ordinary vector of zeros.

`same_scores(value, n)` is the same for a vector scoring every row alike (TaintToleration
when no node has a PreferNoSchedule taint: 100 everywhere): it adds the same amount to every
total, so the highest total and its first row, all the cycle reads, stay where they were."""

from __future__ import annotations

import numpy as np

from placement.arrays import ScoreVector

__all__ = ["adds_nothing", "no_scores", "same_scores"]

_SHARED: dict[tuple[int, int], ScoreVector] = {}  # (value, size) -> the shared vector
_IDS: set[int] = set()  # ids of the vectors `_SHARED` holds (alive while it does)
_LIMIT = 16  # a few cluster sizes and feasible counts at a time


def no_scores(size: int) -> ScoreVector:
    """n zeros, read-only and shared: the answer that adds nothing."""
    return same_scores(0, size)


def same_scores(value: int, size: int) -> ScoreVector:
    """n times `value`, read-only and shared: a score that prefers no row."""
    found = _SHARED.get((value, size))
    if found is None:
        if len(_SHARED) >= _LIMIT:
            _SHARED.clear()
            _IDS.clear()
        found = np.full(size, value, dtype=np.int64)
        found.flags.writeable = False
        _SHARED[(value, size)] = found
        _IDS.add(id(found))
    return found


def adds_nothing(vector: ScoreVector) -> bool:
    """Whether `vector` is `no_scores`' or `same_scores`' answer (by identity: an ordinary
    vector of zeros or of one value is not): it cannot move the highest total."""
    return id(vector) in _IDS
