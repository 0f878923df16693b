"""A Score plugin's way of saying it adds nothing for this pod (kube's PreScore `Skip`).

`no_scores(n)` is a shared, read-only vector of n zeros; the scheduling cycle recognises it by
identity (`adds_nothing`) and leaves it out of the weighted total, which it could not change.
A plugin returns it when it knows without computing that every row scores 0 (NodeAffinity
without preferred terms, InterPodAffinity with no term on either side, an image no node
holds); callers other than the cycle see an ordinary vector of zeros."""

from __future__ import annotations

import numpy as np

from placement.arrays import ScoreVector

__all__ = ["adds_nothing", "no_scores"]

_ZEROS: dict[int, ScoreVector] = {}
_LIMIT = 8  # a few cluster sizes and feasible counts at a time


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


def adds_nothing(vector: ScoreVector) -> bool:
    """Whether `vector` is `no_scores`' answer (by identity: an ordinary zero vector is not)."""
    return _ZEROS.get(len(vector)) is vector
