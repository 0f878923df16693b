"""The plugin framework: what filters, prioritizers and selectors receive and return.

A scheduling cycle works on boolean masks and integer score vectors over the rows of a
`FleetSnapshot` (clusters sorted by name). Expected outcomes are values (`Status`); a plugin
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
from placement.snapshot import FleetSnapshot

__all__ = [
    "SUCCESS",
    "BoolMask",
    "Code",
    "Cycle",
    "Filter",
    "FilterResult",
    "Prioritizer",
    "RowIndex",
    "RowPrioritizer",
    "RowSelector",
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
    """Scores over all rows (from `score`), or aligned with the rows asked about (from
    `score_rows`); `scored` marks the rows that have a score (None: every candidate)."""

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
    """Removes candidates. The scheduler ANDs nothing itself: the mask returned is the new
    candidate set, and a non-ok status stops the cycle."""

    name: str

    def filter(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> FilterResult: ...


class Prioritizer(Protocol):
    """Scores the candidates; the scheduler multiplies by the weight and adds up."""

    name: str

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> ScoreResult: ...


class RowPrioritizer(Prioritizer, Protocol):
    """A prioritizer that can also score only the candidates, which the scheduler then calls
    instead of `score`: `rows` are the candidates' row numbers, ascending, and the result's
    `scores` and `scored` are aligned with `rows`. A cycle then never touches the rows the
    filters removed, and OCM's prioritizers see only the filtered clusters too."""

    def score_rows(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult: ...


class Selector(Protocol):
    """Picks the clusters to decide on from the feasible candidates and their totals."""

    name: str

    def select(
        self,
        cycle: Cycle,
        placement: Placement,
        fleet: FleetSnapshot,
        candidates: BoolMask,
        total: ScoreVector,
    ) -> Selection: ...


class RowSelector(Selector, Protocol):
    """A selector that can also work on the candidates only (called instead of `select`):
    `rows` are the candidates' row numbers, ascending, `total` is aligned with `rows`, and the
    selection holds snapshot rows as usual."""

    def select_rows(
        self,
        cycle: Cycle,
        placement: Placement,
        fleet: FleetSnapshot,
        rows: RowIndex,
        total: ScoreVector,
    ) -> Selection: ...
