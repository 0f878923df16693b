"""`TaintToleration`: the filter of NoSelect / NoSelectIfNew taints (with tolerationSeconds and a
requeue at the earliest expiry, as OCM), and the prioritizer that penalizes untolerated
PreferNoSelect taints (DESIGN §4.4; OCM ignores them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from apis.placements import Placement, ScoreCoordinate, Toleration
from placement.framework import BoolMask, Code, Cycle, FilterResult, ScoreResult, Status
from placement.snapshot import FleetSnapshot, TaintRow

__all__ = [
    "PREFER_NO_SELECT_PENALTY",
    "TaintToleration",
    "TaintTolerationPrioritizer",
    "tolerance",
    "tolerated_until",
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


def tolerated_until(
    kind: tuple[str, str, str],
    added: npt.NDArray[np.float64],
    in_decision: BoolMask,
    tolerations: Sequence[Toleration],
    now: float,
) -> tuple[BoolMask, npt.NDArray[np.float64]]:
    """`tolerance` for many taints of one (key, value, effect) kind at once: whether each is
    tolerated, and until when (POSIX seconds, NaN: for good). `added` is each taint's timeAdded
    (-inf when unset) and `now` the cycle's clock in POSIX seconds."""
    key, value, effect = kind
    tolerated = np.zeros(added.size, dtype=bool)
    until = np.full(added.size, np.nan)
    if effect == "PreferNoSelect":
        tolerated[:] = True
        return tolerated, until
    if effect == "NoSelectIfNew":
        tolerated |= in_decision
    pending = ~tolerated
    probe = TaintRow(-1, key, value, effect, None)
    for toleration in tolerations:
        if not pending.any():
            break
        if not _matches(probe, toleration):
            continue
        if toleration.toleration_seconds is None:
            tolerated |= pending
            break
        expiry = added + toleration.toleration_seconds
        hit = pending & (now < expiry)
        tolerated |= hit
        until[hit] = expiry[hit]
        pending &= ~hit  # an expired match does not end the search
    return tolerated, until


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
        table = fleet.taint_table
        decided_at = decided[table.rows]
        now = cycle.now.timestamp()
        tolerated = np.ones(table.rows.size, dtype=bool)
        for kind, signature in enumerate(table.signatures):
            of_kind = table.kinds == kind
            tolerated[of_kind], _ = tolerated_until(
                signature, table.added[of_kind], decided_at[of_kind], tolerations, now
            )
        keep = candidates.copy()
        keep[table.rows[~tolerated]] = False
        return FilterResult(keep, requeue_at=self._requeue_at(cycle, placement, fleet, decided))

    @staticmethod
    def _requeue_at(
        cycle: Cycle, placement: Placement, fleet: FleetSnapshot, decided: BoolMask
    ) -> datetime | None:
        """Earliest toleration expiry among clusters in the placement's decisions that are
        still tolerated: the moment they must be dropped."""
        tolerations = placement.spec.tolerations or []
        table = fleet.taint_table
        mine = decided[table.rows]
        tolerated = np.ones(table.rows.size, dtype=bool)
        until = np.full(table.rows.size, np.nan)
        now = cycle.now.timestamp()
        for kind, signature in enumerate(table.signatures):
            of_kind = mine & (table.kinds == kind)
            tolerated[of_kind], until[of_kind] = tolerated_until(
                signature, table.added[of_kind], mine[of_kind], tolerations, now
            )
        intolerable = np.zeros(fleet.size, dtype=bool)
        intolerable[table.rows[~tolerated]] = True
        expiring = mine & ~intolerable[table.rows] & ~np.isnan(until)
        if not expiring.any():
            return None
        # The exact expiry (datetime arithmetic) of the earliest entry.
        first = fleet.taints[int(np.flatnonzero(expiring)[np.argmin(until[expiring])])]
        return tolerance(first, tolerations, True, cycle.now)[1]


class TaintTolerationPrioritizer:
    """Scores -100 for candidates with a PreferNoSelect taint the placement does not tolerate."""

    name = "TaintToleration"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> ScoreResult:
        scores = np.zeros(fleet.size, dtype=np.int64)
        tolerations = _as_no_select(
            [t for t in placement.spec.tolerations or [] if t.effect in (None, "PreferNoSelect")]
        )
        table = fleet.taint_table
        now = cycle.now.timestamp()
        for kind, (key, value, effect) in enumerate(table.signatures):
            if effect != "PreferNoSelect":
                continue
            of_kind = table.kinds == kind
            # Matched with the same rules as a hard taint.
            tolerated, _ = tolerated_until(
                (key, value, "NoSelect"),
                table.added[of_kind],
                np.zeros(int(of_kind.sum()), dtype=bool),
                tolerations,
                now,
            )
            scores[table.rows[of_kind][~tolerated]] = PREFER_NO_SELECT_PENALTY
        return ScoreResult(np.where(candidates, scores, 0))


def _as_no_select(tolerations: Sequence[Toleration]) -> list[Toleration]:
    # Match PreferNoSelect taints with the same rules as hard ones: an effect-less toleration,
    # or one naming PreferNoSelect, applies.
    return [t.model_copy(update={"effect": None}) for t in tolerations]
