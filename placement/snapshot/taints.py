"""The taints of a `FleetSnapshot` (`placement.snapshot.fleet_snapshot`): one row per taint of a
tainted cluster, kept as columns and grouped by (key, value, effect) kind, so that a cycle loops
over the few kinds instead of the tainted clusters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from placement.arrays import RowIndex

__all__ = ["TaintKind", "TaintRow", "TaintTable"]


@dataclass(frozen=True)
class TaintRow:
    """One taint of one cluster."""

    row: int
    key: str
    value: str
    effect: str
    time_added: datetime | None


@dataclass(frozen=True)
class TaintTable:
    """The taints as columns, entry i being `FleetSnapshot.taints[i]`: a cycle loops over the
    few distinct (key, value, effect) kinds, not over the tainted clusters."""

    rows: RowIndex
    kinds: npt.NDArray[np.intp]  # index into `signatures`
    signatures: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    added: npt.NDArray[np.float64]  # timeAdded in POSIX seconds, -inf when unset (Go's zero time)

    @classmethod
    def build(cls, taints: Sequence[TaintRow]) -> TaintTable:
        index: dict[tuple[str, str, str], int] = {}
        kinds = [index.setdefault((t.key, t.value, t.effect), len(index)) for t in taints]
        added = [t.time_added.timestamp() if t.time_added else -np.inf for t in taints]
        return cls(
            np.asarray([t.row for t in taints], dtype=np.intp),
            np.asarray(kinds, dtype=np.intp),
            tuple(index),
            np.asarray(added, dtype=np.float64),
        )

    @cached_property
    def by_kind(self) -> tuple[TaintKind, ...]:
        """The entries of each kind (aligned with `signatures`), built on first use with the
        table: a cycle reads each kind's rows without comparing every entry's kind."""
        order = np.argsort(self.kinds, kind="stable")
        bounds = np.searchsorted(self.kinds[order], np.arange(len(self.signatures) + 1))
        out = []
        for k, signature in enumerate(self.signatures):
            entries = order[bounds[k] : bounds[k + 1]]
            out.append(TaintKind(signature, entries, self.rows[entries], self.added[entries]))
        return tuple(out)


class TaintKind(NamedTuple):
    """The taints of one (key, value, effect) kind: their entries in the `TaintTable`
    (ascending), rows and timeAdded."""

    signature: tuple[str, str, str]
    entries: RowIndex
    rows: RowIndex
    added: npt.NDArray[np.float64]
