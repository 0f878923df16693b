"""The plugin framework: what filters, prioritizers and selectors receive and return.

A scheduling cycle works on boolean masks and integer score vectors over the rows of a
`FleetSnapshot` (clusters sorted by name). There is one `Protocol` per extension point (`Filter`,
`Prioritizer`, `Selector`), each with one method; a plugin subclasses the ones it implements
(`class Balance(Prioritizer)`), so mypy checks its signatures, and the registry refuses a plugin
registered for a point it does not implement. Filters see a mask over every row; after them the
scheduler compacts the candidates into ascending row numbers (`RowIndex`), and prioritizers and
selectors work on those rows only. Expected outcomes are values (`Status`); a plugin
that raises has a bug, and the `Scheduler` turns the exception into an ERROR status. The array
types (`BoolMask`, `ScoreVector`, `RowIndex`) live in `placement.arrays`; they are re-exported
here, with the interfaces that use them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum
from typing import Any, Protocol

from apis.placements import Placement
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = [
    "SUCCESS",
    "BoolMask",
    "Code",
    "Cycle",
    "Filter",
    "FilterResult",
    "Prioritizer",
    "RowIndex",
    "ScoreResult",
    "ScoreVector",
    "Selection",
    "Selector",
    "Status",
    "worst",
]


class Code(IntEnum):
    """Outcome of a plugin call or a whole cycle, in ascending severity."""

    SUCCESS = 0
    """Nothing to report."""
    WARNING = 1
    """Decisions are written, and the user is told (event, requeue with backoff)."""
    MISCONFIGURED = 2
    """The spec is wrong: PlacementMisconfigured=True, previous decisions are kept."""
    ERROR = 3
    """Scheduling failed (a plugin bug or missing data); retried with backoff."""


@dataclass(frozen=True)
class Status:
    """A code with its message and the plugin that produced it ("" for the scheduler)."""

    code: Code = Code.SUCCESS
    message: str = ""
    plugin: str = ""

    @property
    def ok(self) -> bool:
        """True when decisions may be written (SUCCESS or WARNING)."""
        return self.code <= Code.WARNING

    def __str__(self) -> str:
        return f"{self.plugin}:{self.message}"


SUCCESS = Status()
"""The status of every plugin call that has nothing to report."""


def worst(*statuses: Status) -> Status:
    """The most severe status; the first one among equals."""
    best = SUCCESS
    for status in statuses:
        if status is not SUCCESS and status.code > best.code:
            best = status
    return best


@dataclass
class Cycle:
    """One scheduling cycle: the injected clock and scratch data shared by the plugins."""

    now: datetime
    scratch: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FilterResult:
    """The candidates a filter keeps; `requeue_at` asks for a new cycle at that time.
    `reasons` says why each removed row was removed (by snapshot row), filled only in a cycle
    run for explain (`cycle.scratch["explain"]`), so a normal cycle pays nothing for it."""

    mask: BoolMask
    status: Status = SUCCESS
    requeue_at: datetime | None = None
    reasons: Mapping[int, str] | None = None


@dataclass(frozen=True)
class ScoreResult:
    """Scores aligned with the rows asked about; `scored` (aligned too) marks the rows that have
    a score (None: every one of them)."""

    scores: ScoreVector
    status: Status = SUCCESS
    scored: BoolMask | None = None


@dataclass(frozen=True)
class Selection:
    """The rows selected, in pick order, and what the selector wants explained."""

    rows: RowIndex
    status: Status = SUCCESS
    trace: dict[str, Any] = field(default_factory=dict)
    wanted: int | None = None  # how many the selector tried to pick, when it decided that


class Filter(Protocol):
    """Removes candidates: `candidates` is a mask over every snapshot row, and the mask returned
    is the new candidate set (the scheduler ANDs it with the old one); a non-ok status stops
    the cycle. Filters see masks because the first ones usually keep most of the fleet."""

    name: str

    def filter(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> FilterResult: ...


class Prioritizer(Protocol):
    """Scores the candidates; the scheduler multiplies by the weight and adds up.

    `rows` are the candidates' snapshot row numbers, ascending (name order), and the result's
    `scores` and `scored` are aligned with `rows`: a cycle never touches the rows the filters
    removed, and what a prioritizer normalises over is the candidates, as OCM's see only the
    filtered clusters. `placement.scoring` has the helpers (`positions`, `own_positions`)."""

    name: str

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult: ...


class Selector(Protocol):
    """Picks the clusters to decide on from the candidates and their totals: `rows` are the
    candidates' snapshot row numbers, ascending, `total` is aligned with `rows`, and the
    selection holds snapshot rows in pick order."""

    name: str

    def select(
        self,
        cycle: Cycle,
        placement: Placement,
        fleet: FleetSnapshot,
        rows: RowIndex,
        total: ScoreVector,
    ) -> Selection: ...
