"""Mutable column state behind `FleetIndex` (private).

Every array that ends up in a snapshot lives in a `Cow`: the index writes it in place until a
snapshot is handed out, and copies it before the first write after that. String columns only
ever add codes, so a published `Column` keeps seeing its own prefix of them (`Prefix`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from placement.arrays import BoolMask, RowIndex
from placement.rows import ScoreRow
from placement.snapshot.fleet_snapshot import AddOnColumn, Column

__all__ = [
    "AddOnState",
    "CodedColumn",
    "Cow",
    "Epoch",
    "Layout",
    "Prefix",
    "columns_of",
]

ScalarT = TypeVar("ScalarT", bound=np.generic)
MISSING = -1
# A column recodes when it holds more unused values than used ones (and more than this), so
# that churning values (timestamps in labels) do not grow it forever.
_COMPACT_AT = 64


class Epoch:
    """Counts the snapshots handed out: an array made in the current epoch is in none of them."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0


class Cow(Generic[ScalarT]):
    """One array of the index: `read` to read or publish it, `write()` before writing to it."""

    __slots__ = ("_array", "_epoch", "_made")

    def __init__(self, epoch: Epoch, array: npt.NDArray[ScalarT]) -> None:
        self._epoch = epoch
        self._array = array
        self._made = epoch.now

    @property
    def read(self) -> npt.NDArray[ScalarT]:
        return self._array

    def write(self) -> npt.NDArray[ScalarT]:
        if self._made != self._epoch.now:  # a snapshot holds it: copy before the first write
            self._array = self._array.copy()
            self._made = self._epoch.now
        return self._array

    def replace(self, array: npt.NDArray[ScalarT]) -> None:
        self._array = array
        self._made = self._epoch.now


@dataclass(frozen=True)
class Layout:
    """How rows move when clusters are added and deleted: old rows `keep` go to `kept_rows`."""

    keep: BoolMask
    kept_rows: RowIndex
    size: int

    def move(self, array: npt.NDArray[ScalarT], fill: object) -> npt.NDArray[ScalarT]:
        moved = np.full(self.size, fill, dtype=array.dtype)
        moved[self.kept_rows] = array[self.keep]
        return moved


class Prefix(Mapping[str, int]):
    """The first `size` entries of an append-only value -> code dict: values coded after a
    Column was published stay invisible to it."""

    __slots__ = ("_codes", "_size")

    def __init__(self, codes: dict[str, int], size: int) -> None:
        self._codes = codes
        self._size = size

    def __getitem__(self, value: str) -> int:
        code = self._codes[value]
        if code >= self._size:
            raise KeyError(value)
        return code

    def __iter__(self) -> Iterator[str]:
        return islice(self._codes, self._size)  # dicts iterate in code order

    def __len__(self) -> int:
        return self._size


class CodedColumn:
    """One label or claim key: codes per row, and how many rows use each code."""

    __slots__ = ("_column", "_epoch", "codes", "index", "live", "rows", "uses", "values")

    def __init__(self, epoch: Epoch, size: int) -> None:
        self._epoch = epoch
        self.codes = Cow(epoch, np.full(size, MISSING, dtype=np.int32))
        self.values: list[str] = []
        self.index: dict[str, int] = {}
        self.uses: list[int] = []
        self.live = 0  # values some row uses
        self.rows = 0  # rows with a value; the key leaves the snapshot at 0
        self._column: Column | None = None

    def code(self, value: str) -> int:
        code = self.index.get(value)
        if code is None:
            code = self.index[value] = len(self.values)
            self.values.append(value)
            self.uses.append(0)
        return code

    def set(self, row: int, value: str | None) -> None:
        old = int(self.codes.read[row])
        new = MISSING if value is None else self.code(value)
        if old == new:
            return
        self.codes.write()[row] = new
        if old >= 0:
            self.uses[old] -= 1
            self.live -= not self.uses[old]
            self.rows -= 1
        if new >= 0:
            self.live += not self.uses[new]
            self.uses[new] += 1
            self.rows += 1
        self._column = None

    def fill(self, rows: list[int], values: list[str]) -> None:
        """Write many cells at once (new rows); call `recount` afterwards."""
        for value in dict.fromkeys(values):  # code the new values first, then map in C
            self.code(value)
        self.codes.write()[rows] = [*map(self.index.__getitem__, values)]
        self._column = None

    def relayout(self, layout: Layout) -> None:
        self.codes.replace(layout.move(self.codes.read, MISSING))
        self._column = None

    def recount(self) -> None:
        codes = self.codes.read
        used = codes[codes >= 0]
        self.rows = int(used.size)
        uses = np.bincount(used, minlength=len(self.values))
        self.live = int(np.count_nonzero(uses))
        self.uses = uses.tolist()

    def column(self) -> Column:
        if self._column is None:
            if len(self.values) - self.live > max(self.live, _COMPACT_AT):
                self._compact()
            self._column = Column(
                self.codes.read, tuple(self.values), Prefix(self.index, len(self.values))
            )
        return self._column

    def _compact(self) -> None:
        # New list and dict: published Columns keep the old ones.
        recode = np.full(len(self.values) + 1, MISSING, dtype=np.int32)  # [-1] maps -1 to -1
        values = [v for v, n in zip(self.values, self.uses, strict=True) if n]
        uses = [n for n in self.uses if n]
        recode[:-1][np.asarray(self.uses) > 0] = np.arange(len(values), dtype=np.int32)
        self.codes.replace(recode[self.codes.read])
        self.values, self.uses = values, uses
        self.index = {v: i for i, v in enumerate(values)}


class AddOnState:
    """The AddOnPlacementScores of one resource name, one row per cluster namespace."""

    __slots__ = ("_column", "_epoch", "has", "has_rows", "present", "rows", "scores", "valid_until")

    def __init__(self, epoch: Epoch, size: int) -> None:
        self._epoch = epoch
        self.present = Cow(epoch, np.zeros(size, dtype=bool))
        self.valid_until = Cow(epoch, np.full(size, np.nan))
        self.scores: dict[str, Cow[np.int64]] = {}
        self.has: dict[str, Cow[np.bool_]] = {}
        self.rows = 0
        self.has_rows: dict[str, int] = {}
        self._column: AddOnColumn | None = None

    def put(self, row: int, score: ScoreRow | None) -> None:
        """Make `row` show `score` (None: no score)."""
        self._column = None
        if self.present.read[row]:
            self.present.write()[row] = False
            self.rows -= 1
            if not np.isnan(self.valid_until.read[row]):
                self.valid_until.write()[row] = np.nan
            for name, has in self.has.items():
                if has.read[row]:
                    has.write()[row] = False
                    self.scores[name].write()[row] = 0  # AddOn reads values without `has`
                    self.has_rows[name] -= 1
        if score is None:
            return
        self.present.write()[row] = True
        self.rows += 1
        if score.valid_until is not None:
            self.valid_until.write()[row] = score.valid_until
        size = self.present.read.size
        for name, value in score.values:
            if name not in self.has:
                self.scores[name] = Cow(self._epoch, np.zeros(size, dtype=np.int64))
                self.has[name] = Cow(self._epoch, np.zeros(size, dtype=bool))
                self.has_rows[name] = 0
            self.scores[name].write()[row] = value
            self.has[name].write()[row] = True
            self.has_rows[name] += 1

    def fill(self, items: list[tuple[int, ScoreRow]]) -> None:
        """Write the scores of new rows (no score yet): one numpy call per array."""
        self._column = None
        rows = [row for row, _ in items]
        self.present.write()[rows] = True
        self.rows += len(rows)
        until: tuple[list[int], list[float]] = ([], [])
        cells: dict[str, tuple[list[int], list[int]]] = {}
        for row, score in items:
            if score.valid_until is not None:
                until[0].append(row)
                until[1].append(score.valid_until)
            for name, value in score.values:
                cell = cells.get(name)
                if cell is None:
                    cell = cells[name] = ([], [])
                cell[0].append(row)
                cell[1].append(value)
        self.valid_until.write()[until[0]] = until[1]
        size = self.present.read.size
        for name, (at, values_at) in cells.items():
            if name not in self.has:
                self.scores[name] = Cow(self._epoch, np.zeros(size, dtype=np.int64))
                self.has[name] = Cow(self._epoch, np.zeros(size, dtype=bool))
                self.has_rows[name] = 0
            self.scores[name].write()[at] = values_at
            self.has[name].write()[at] = True
            self.has_rows[name] += len(at)

    def relayout(self, layout: Layout) -> None:
        self._column = None
        self.present.replace(layout.move(self.present.read, False))
        self.valid_until.replace(layout.move(self.valid_until.read, np.nan))
        for name, has in self.has.items():
            has.replace(layout.move(has.read, False))
            self.scores[name].replace(layout.move(self.scores[name].read, 0))
        self.rows = int(np.count_nonzero(self.present.read))
        self.has_rows = {name: int(np.count_nonzero(has.read)) for name, has in self.has.items()}

    def column(self) -> AddOnColumn:
        if self._column is None:
            for name in [n for n, count in self.has_rows.items() if count == 0]:
                del self.has[name], self.scores[name], self.has_rows[name]
            self._column = AddOnColumn(
                self.present.read,
                self.valid_until.read,
                {name: values.read for name, values in self.scores.items()},
                {name: has.read for name, has in self.has.items()},
            )
        return self._column


def columns_of(states: Mapping[str, CodedColumn]) -> dict[str, Column]:
    """The published columns of the keys some row still has."""
    return {key: state.column() for key, state in states.items() if state.rows}
