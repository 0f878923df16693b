"""`TaintToleration`: the filter of NoSelect / NoSelectIfNew taints (with tolerationSeconds and a
requeue at the earliest expiry, as OCM), and the prioritizer that penalizes untolerated
PreferNoSelect taints (OCM ignores them: a deliberate difference, docs/replacing-ocm.md,
'Differences from OCM')."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from apis.placements import Placement, ScoreCoordinate, Toleration
from placement.framework import (
    BoolMask,
    Code,
    Cycle,
    Filter,
    FilterResult,
    Prioritizer,
    RowIndex,
    ScoreResult,
    Status,
)
from placement.scoring import positions
from placement.snapshot.fleet_snapshot import FleetSnapshot, TaintRow, TaintTable

__all__ = [
    "PREFER_NO_SELECT_PENALTY",
    "TaintToleration",
    "TaintTolerationPrioritizer",
    "tolerance",
    "tolerated_until",
    "validate_tolerations",
]

PREFER_NO_SELECT_PENALTY = -100
FloatVector = npt.NDArray[np.float64]
# Go's zero time: a taint without timeAdded has always been there, so any tolerationSeconds ran out.
_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def validate_tolerations(tolerations: Sequence[Toleration]) -> str | None:
    """OCM's toleration checks, with its messages."""
    for toleration in tolerations:
        if not toleration.key and toleration.operator != "Exists":
            return "If the key is empty, operator must be Exists."
        if toleration.operator == "Exists" and toleration.value:
            return "If the operator is Exists, the value should be empty."
    return None


class TolerationLike(Protocol):
    """What matching reads of a toleration (a `Toleration`, or a derived plain tuple)."""

    @property
    def key(self) -> str | None: ...
    @property
    def operator(self) -> str: ...
    @property
    def value(self) -> str | None: ...
    @property
    def effect(self) -> str | None: ...
    @property
    def toleration_seconds(self) -> int | None: ...


class _Soft(NamedTuple):
    """A toleration applied to PreferNoSelect taints as if they were hard ones (no effect)."""

    key: str | None
    operator: str
    value: str | None
    effect: str | None
    toleration_seconds: int | None


def _matches(taint: TaintRow, toleration: TolerationLike) -> bool:
    return _kind_matches((taint.key, taint.value, taint.effect), toleration)


def _kind_matches(kind: tuple[str, str, str], toleration: TolerationLike) -> bool:
    """Whether the toleration matches taints of this (key, value, effect) kind."""
    if toleration.effect and toleration.effect != kind[2]:
        return False
    if toleration.key and toleration.key != kind[0]:
        return False
    if toleration.operator in ("", "Equal"):
        return (toleration.value or "") == kind[1]
    return toleration.operator == "Exists"  # any other operator never matches


def _expiry(added: datetime, seconds: int) -> datetime | None:
    """`added + seconds`, or None when that is past the last datetime (year 9999): a
    tolerationSeconds near the int64 maximum, or a taint added in the year 9999."""
    try:
        return added + timedelta(seconds=seconds)
    except OverflowError:
        if seconds < 0:
            return _ZERO_TIME  # long expired
        return None


def tolerance(
    taint: TaintRow, tolerations: Sequence[Toleration], in_decision: bool, now: datetime
) -> tuple[bool, datetime | None]:
    """Whether the taint is tolerated, and until when (None: for good)."""
    if taint.effect == "PreferNoSelect":
        return True, None  # never filters; the prioritizer scores it
    if taint.effect == "NoSelectIfNew" and in_decision:
        return True, None
    for toleration in tolerations:
        if not _matches(taint, toleration):
            continue
        if toleration.toleration_seconds is None:
            return True, None
        expiry = _expiry(taint.time_added or _ZERO_TIME, toleration.toleration_seconds)
        if expiry is None:
            return True, None  # runs out after the year 9999: for good, as far as we can tell
        if now < expiry:
            return True, expiry
        # an expired match does not end the search: a later toleration may still apply
    return False, None


def tolerated_until(
    kind: tuple[str, str, str],
    added: npt.NDArray[np.float64],
    in_decision: BoolMask,
    tolerations: Sequence[TolerationLike],
    now: float,
) -> tuple[BoolMask, npt.NDArray[np.float64]]:
    """`tolerance` for many taints of one (key, value, effect) kind at once: whether each is
    tolerated, and until when (POSIX seconds, NaN: for good). `added` is each taint's timeAdded
    (-inf when unset) and `now` the cycle's clock in POSIX seconds."""
    effect = kind[2]
    size = added.size
    if effect == "PreferNoSelect":
        return np.ones(size, dtype=bool), np.full(size, np.nan)
    tolerated = in_decision.copy() if effect == "NoSelectIfNew" else None
    until = None
    for toleration in tolerations:
        if not _kind_matches(kind, toleration):
            continue
        seconds = toleration.toleration_seconds
        if seconds is None:
            tolerated = np.ones(size, dtype=bool)  # every one still pending, for good
            break
        expiry = added + seconds
        hit = expiry > now
        if tolerated is None:
            tolerated = hit
        else:
            hit &= ~tolerated  # an expired match does not end the search
            tolerated |= hit
        if until is None:
            until = np.where(hit, expiry, np.nan)
        else:
            np.copyto(until, expiry, where=hit)
    if tolerated is None:
        tolerated = np.zeros(size, dtype=bool)
    return tolerated, np.full(size, np.nan) if until is None else until


T = TypeVar("T", bound="TolerationLike")


def _matching(kind: tuple[str, str, str], tolerations: Sequence[T]) -> list[T]:
    """The tolerations that match taints of this (key, value, effect) kind, in order."""
    return [t for t in tolerations if _kind_matches(kind, t)]


class TaintToleration(Filter):
    """Removes candidates carrying a taint the placement does not tolerate."""

    name = "TaintToleration"

    def filter(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> FilterResult:
        if not candidates.any():
            return FilterResult(candidates)
        tolerations = placement.spec.tolerations or []
        problem = validate_tolerations(tolerations)
        if problem:
            return FilterResult(candidates, Status(Code.MISCONFIGURED, problem, self.name))
        now = cycle.now.timestamp()
        decided: BoolMask | None = None
        dropped: list[RowIndex] = []  # rows with a taint that is not tolerated
        # explain only: the dropped rows of each taint kind, and why
        notes: list[tuple[RowIndex, str]] | None = [] if cycle.scratch.get("explain") else None
        timed: list[tuple[RowIndex, FloatVector]] = []  # decided entries tolerated until then
        for kind in fleet.taint_table.by_kind:
            effect = kind.signature[2]
            if effect == "PreferNoSelect":
                continue  # never filters; the prioritizer scores it
            matching = _matching(kind.signature, tolerations)
            if matching and matching[0].toleration_seconds is None:
                continue  # every taint of the kind is tolerated for good
            if not matching and effect == "NoSelect":
                dropped.append(kind.rows)
                if notes is not None:
                    notes.append((kind.rows, f"untolerated taint {_taint(kind.signature)}"))
                continue
            if decided is None:
                decided = fleet.decided_mask(placement.namespace, placement.name)
            in_decision = decided.take(kind.rows)
            tolerated, until = tolerated_until(
                kind.signature, kind.added, in_decision, matching, now
            )
            if not tolerated.all():
                dropped.append(kind.rows[~tolerated])
                if notes is not None:  # NoSelectIfNew says why by itself
                    why = " (toleration expired)" if matching else ""
                    note = f"untolerated taint {_taint(kind.signature)}{why}"
                    notes.append((kind.rows[~tolerated], note))
            if matching:
                # Every candidate tolerated only for a while, decided or not: a cluster this
                # cycle newly selects must be dropped when its toleration runs out too, and no
                # later event is sure to come (the echo of our own write is ignored).
                expiring = ~np.isnan(until)  # set on tolerated entries only
                expiring &= candidates[kind.rows]
                if expiring.any():
                    timed.append((kind.entries[expiring], until[expiring]))
        if not dropped:
            requeue_at = self._requeue_at(cycle, fleet, tolerations, timed)
            return FilterResult(candidates, requeue_at=requeue_at)
        drop = dropped[0] if len(dropped) == 1 else np.concatenate(dropped)
        keep = candidates.copy()
        keep[drop] = False
        requeue_at = self._requeue_at(cycle, fleet, tolerations, timed, drop)
        reasons = None if notes is None else _reasons(notes, candidates)
        return FilterResult(keep, requeue_at=requeue_at, reasons=reasons)

    @staticmethod
    def _requeue_at(
        cycle: Cycle,
        fleet: FleetSnapshot,
        tolerations: Sequence[Toleration],
        timed: list[tuple[RowIndex, FloatVector]],
        dropped: RowIndex | None = None,
    ) -> datetime | None:
        """Earliest toleration expiry among candidates that are still tolerated (no other
        taint of theirs is not): the moment the first of them must be dropped. Candidates the
        placement does not select count too, since losing one can change what it selects
        (scores are normalized over the candidates), as OCM's requeue counts every cluster."""
        if not timed:
            return None
        if len(timed) == 1:
            entries, until = timed[0]
        else:
            entries = np.concatenate([e for e, _ in timed])
            until = np.concatenate([u for _, u in timed])
        if dropped is not None:
            intolerable = np.zeros(fleet.size, dtype=bool)
            intolerable[dropped] = True
            still = ~intolerable[fleet.taint_table.rows[entries]]
            entries, until = entries[still], until[still]
            if entries.size == 0:
                return None
        # The exact expiry (datetime arithmetic) of the earliest entry, the first in table
        # order among equals (entries of one kind are ascending, argmin takes the first).
        if len(timed) == 1:
            first = int(entries[until.argmin()])
        else:
            first = int(entries[until == until.min()].min())
        return tolerance(fleet.taints[first], tolerations, True, cycle.now)[1]


class TaintTolerationPrioritizer(Prioritizer):
    """Scores -100 for candidates with a PreferNoSelect taint the placement does not tolerate."""

    name = "TaintToleration"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult:
        scores: npt.NDArray[np.int64] | None = None
        soft: list[_Soft] | None = None
        table = fleet.taint_table
        for at, kind in enumerate(table.by_kind):
            key, value, effect = kind.signature
            if effect != "PreferNoSelect":
                continue
            if soft is None:
                soft = _as_no_select(placement.spec.tolerations or [])
            # Matched with the same rules as a hard taint.
            hard = (key, value, "NoSelect")
            matching = _matching(hard, soft)
            if matching and matching[0].toleration_seconds is None:
                continue  # tolerated for good
            if not matching:  # every taint of the kind penalized: read the kind's penalties
                hit = _penalties(table, at, fleet.size).take(rows)
                scores = hit if scores is None else np.minimum(scores, hit, out=scores)
                continue
            no = np.zeros(kind.rows.size, dtype=bool)
            tolerated, _ = tolerated_until(hard, kind.added, no, matching, cycle.now.timestamp())
            if scores is None:
                scores = np.zeros(rows.size, dtype=np.int64)
            scores[positions(rows, kind.rows[~tolerated])] = PREFER_NO_SELECT_PENALTY
        return ScoreResult(np.zeros(rows.size, dtype=np.int64) if scores is None else scores)


def _penalties(table: TaintTable, at: int, size: int) -> npt.NDArray[np.int64]:
    """The penalty of every row for the table's `at`-th kind (0 where it has no such taint),
    read-only, kept with the table: a cycle gathers the candidates' instead of searching the
    penalized rows among them."""
    known = table.__dict__.setdefault(_PENALTIES, {})  # a cache of the table, which never changes
    found = known.get((at, size))
    if found is None:
        found = np.zeros(size, dtype=np.int64)
        found[table.by_kind[at].rows] = PREFER_NO_SELECT_PENALTY
        found.flags.writeable = False
        known[(at, size)] = found
    return found  # type: ignore[no-any-return]


_PENALTIES = "plugins.tainttoleration.penalties"


def _taint(kind: tuple[str, str, str]) -> str:
    """A taint as kubectl prints it: `key=value:Effect`, or `key:Effect` without a value."""
    key, value, effect = kind
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _reasons(notes: list[tuple[RowIndex, str]], candidates: BoolMask) -> dict[int, str]:
    """Explain only: the untolerated taints of each dropped candidate row, joined."""
    found: dict[int, list[str]] = {}
    for rows, note in notes:
        for row in rows[candidates[rows]]:
            found.setdefault(int(row), []).append(note)
    return {row: "; ".join(parts) for row, parts in found.items()}


def _as_no_select(tolerations: Sequence[Toleration]) -> list[_Soft]:
    # Match PreferNoSelect taints with the same rules as hard ones: an effect-less toleration,
    # or one naming PreferNoSelect, applies.
    return [
        _Soft(t.key, t.operator, t.value, None, t.toleration_seconds)
        for t in tolerations
        if t.effect in (None, "PreferNoSelect")
    ]
