"""A score shaped by utilization: the piecewise-linear function kube's helper builds from a list
of (utilization, score) points, used by NodeResourcesFit's RequestedToCapacityRatio and by
VolumeBinding's capacity score."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from placement.pods.framework.interface import MAX_NODE_SCORE

__all__ = ["MAX_CUSTOM_PRIORITY_SCORE", "ShapePoint", "broken_linear"]

MAX_CUSTOM_PRIORITY_SCORE = 10  # a shape point's score range, scaled to MAX_NODE_SCORE

Int64Vector = npt.NDArray[np.int64]


class ShapePoint(NamedTuple):
    utilization: int
    score: int


def broken_linear(points: Sequence[ShapePoint], p: Int64Vector) -> Int64Vector:
    """kube's BuildBrokenLinearFunction: the score at utilization p, interpolated between
    the points with Go's integer division (truncation toward zero)."""
    u = np.array([pt.utilization for pt in points], dtype=np.int64)
    s = np.array([pt.score for pt in points], dtype=np.int64) * (
        MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    )
    i = np.searchsorted(u, p, side="left")  # first point with p <= utilization
    inner = np.clip(i, 1, len(u) - 1) if len(u) > 1 else np.zeros_like(i)
    lo_u, hi_u = u[inner - 1], u[inner]
    lo_s, hi_s = s[inner - 1], s[inner]
    num = (hi_s - lo_s) * (p - lo_u)
    den = np.maximum(hi_u - lo_u, 1)
    interpolated = lo_s + np.sign(num) * (np.abs(num) // den)
    out: Int64Vector = np.where(i == 0, s[0], np.where(i >= len(u), s[-1], interpolated))
    return out
