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

_ZEROS: dict[int, ScoreVector] = {}
_LIMIT = 8  # a few cluster sizes and feasible counts at a time
_SAME: dict[tuple[int, int], ScoreVector] = {}  # (value, size) -> the shared vector
_SAME_IDS: set[int] = set()  # ids of the vectors `_SAME` holds (alive while it does)


def no_scores(size: int) -> ScoreVector:
    """n zeros, read-only and shared: the answer that adds nothing."""
    found = _ZEROS.get(size)
    if found is None:
        if len(_ZEROS) >= _LIMIT:
            _ZEROS.clear()
        found = np.zeros(size, dtype=np.int64)
        found.flags.writeable = False
        _ZEROS[size] = found
    return found


def same_scores(value: int, size: int) -> ScoreVector:
    """n times `value`, read-only and shared: a score that prefers no row."""
    if value == 0:
        return no_scores(size)
    found = _SAME.get((value, size))
    if found is None:
        if len(_SAME) >= _LIMIT:
            _SAME.clear()
            _SAME_IDS.clear()
        found = np.full(size, value, dtype=np.int64)
        found.flags.writeable = False
        _SAME[(value, size)] = found
        _SAME_IDS.add(id(found))
    return found


def adds_nothing(vector: ScoreVector) -> bool:
    """Whether `vector` is `no_scores`' or `same_scores`' answer (by identity: an ordinary
    vector of zeros or of one value is not): it cannot move the highest total."""
    return _ZEROS.get(len(vector)) is vector or id(vector) in _SAME_IDS
