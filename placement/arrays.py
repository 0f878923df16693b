"""The numpy array types that the scheduling core passes around, named for shape and meaning.

They are plain aliases with no behaviour, kept in a module that imports nothing of the core, so
that every module (`snapshot`, `framework`, the index, the plugins) can use them without
importing each other. `placement.framework` re-exports them with the plugin interfaces.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["BoolMask", "RowIndex", "ScoreVector"]

BoolMask = npt.NDArray[np.bool_]
"""One flag per snapshot row."""
ScoreVector = npt.NDArray[np.int64]
"""One integer score per snapshot row (0 where a plugin has no score)."""
RowIndex = npt.NDArray[np.intp]
"""Snapshot row numbers, in a meaningful order (e.g. pick order)."""
