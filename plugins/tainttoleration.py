"""`TaintToleration`: the filter of NoSelect / NoSelectIfNew taints (with tolerationSeconds and a
requeue at the earliest expiry, as OCM), and the prioritizer that penalizes untolerated
PreferNoSelect taints (DESIGN §4.4; OCM ignores them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from apis.placements import Placement, ScoreCoordinate, Toleration
from placement.framework import BoolMask, Code, Cycle, FilterResult, ScoreResult, Status
from placement.snapshot import FleetSnapshot, TaintRow

__all__ = [
    "PREFER_NO_SELECT_PENALTY",
    "TaintToleration",
    "TaintTolerationPrioritizer",
    "tolerance",
    "validate_tolerations",
]

PREFER_NO_SELECT_PENALTY = -100
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


def _matches(taint: TaintRow, toleration: Toleration) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return (toleration.value or "") == taint.value
    return toleration.operator == "Exists"  # any other operator never matches


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
        expiry = (taint.time_added or _ZERO_TIME) + timedelta(seconds=toleration.toleration_seconds)
        if now < expiry:
            return True, expiry
        # an expired match does not end the search: a later toleration may still apply
    return False, None


class TaintToleration:
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
        decided = fleet.decided_mask(placement.namespace, placement.name)
        keep = candidates.copy()
        for taint in fleet.taints:
            if keep[taint.row]:
                tolerated, _ = tolerance(taint, tolerations, bool(decided[taint.row]), cycle.now)
                keep[taint.row] = tolerated
        return FilterResult(keep, requeue_at=self._requeue_at(cycle, placement, fleet, decided))

    @staticmethod
    def _requeue_at(
        cycle: Cycle, placement: Placement, fleet: FleetSnapshot, decided: BoolMask
    ) -> datetime | None:
        """Earliest toleration expiry among clusters in the placement's decisions that are
        still tolerated: the moment they must be dropped."""
        tolerations = placement.spec.tolerations or []
        per_row: dict[int, list[datetime]] = {}
        intolerable: set[int] = set()
        for taint in fleet.taints:
            if not decided[taint.row]:
                continue
            tolerated, until = tolerance(taint, tolerations, True, cycle.now)
            if not tolerated:
                intolerable.add(taint.row)
            elif until is not None:
                per_row.setdefault(taint.row, []).append(until)
        times = [min(v) for row, v in per_row.items() if row not in intolerable]
        return min(times) if times else None


class TaintTolerationPrioritizer:
    """Scores -100 for candidates with a PreferNoSelect taint the placement does not tolerate."""

    name = "TaintToleration"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> ScoreResult:
        scores = np.zeros(fleet.size, dtype=np.int64)
        tolerations = [
            t for t in placement.spec.tolerations or [] if t.effect in (None, "PreferNoSelect")
        ]
        for taint in fleet.taints:
            if taint.effect != "PreferNoSelect" or not candidates[taint.row]:
                continue
            as_hard = TaintRow(taint.row, taint.key, taint.value, "NoSelect", taint.time_added)
            tolerated, _ = tolerance(as_hard, _as_no_select(tolerations), False, cycle.now)
            if not tolerated:
                scores[taint.row] = PREFER_NO_SELECT_PENALTY
        return ScoreResult(scores)


def _as_no_select(tolerations: Sequence[Toleration]) -> list[Toleration]:
    # Match PreferNoSelect taints with the same rules as hard ones: an effect-less toleration,
    # or one naming PreferNoSelect, applies.
    return [t.model_copy(update={"effect": None}) for t in tolerations]
