"""From a `ScheduleResult` to what the controller writes: the PlacementDecisions and the
Placement's status with OCM's `PlacementSatisfied` and `PlacementMisconfigured` conditions.

Deliberate difference (docs/replacing-ocm.md, 'Differences from OCM'): when the placement is
misconfigured or scheduling fails, no decisions are produced, so the previous ones stay, and
only the conditions change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from apis.meta import Condition, ConditionStatus
from apis.placements import (
    PLACEMENT_LABEL,
    PLACEMENT_MISCONFIGURED,
    PLACEMENT_SATISFIED,
    Placement,
    PlacementStatus,
)
from placement.decisions import Paged, cluster_decision_groups, paginate
from placement.framework import Code, Status
from placement.scheduler import ScheduleResult
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = [
    "MAX_CONDITION_MESSAGE",
    "Outcome",
    "decision_name_problem",
    "misconfigured_condition",
    "outcome",
    "satisfied_condition",
    "score_note",
    "set_condition",
    "truncate_message",
]

MAX_NOTE = 1000
"""OCM caps the ScoreUpdate note at 1000 of the 1024 characters an event allows."""
MAX_CONDITION_MESSAGE = 32768
"""metav1.Condition's `message` maxLength: a longer one fails the whole status write."""
_TRUNCATED = " ..."
# The longest label value. A placement name is a DNS-1123 subdomain, whose alphabet label values
# accept, and of at most 63 characters it leaves room for `-decision-<k>` in a 253-character
# PlacementDecision name: the length is the only thing to check.
_MAX_LABEL_VALUE = 63


def truncate_message(message: str, limit: int = MAX_CONDITION_MESSAGE) -> str:
    """`message` cut to `limit` characters, ending in ` ...` when cut, as Kubernetes
    controllers cut condition messages (kueue's TruncateConditionMessage); the reason stays."""
    if len(message) <= limit:
        return message
    return message[: limit - len(_TRUNCATED)] + _TRUNCATED


def decision_name_problem(placement: Placement) -> str | None:
    """Why this placement's PlacementDecisions cannot be written, or None. Their label
    `cluster.open-cluster-management.io/placement` carries the placement's name, and a label
    value is at most 63 characters, a name up to 253. OCM tries the write, gets 422 and
    retries forever without a word in the status; we say so in PlacementMisconfigured
    instead, keep the decisions there are and write none."""
    name = placement.name
    if not name:
        # Only an API server fills in a name from generateName; simulate has none to give.
        return "the placement has no name (generateName is filled in by the API server only)"
    if len(name) > _MAX_LABEL_VALUE:
        return (
            f"the placement name is {len(name)} characters long, but its PlacementDecisions "
            f"carry it in the label {PLACEMENT_LABEL}, whose values are at most "
            f"{_MAX_LABEL_VALUE} characters: rename the placement"
        )
    return None


@dataclass(frozen=True)
class Outcome:
    """Decisions to write (None: keep the current ones) and the new status."""

    result: ScheduleResult
    status: Status
    paged: Paged | None
    placement_status: PlacementStatus


def satisfied_condition(
    result: ScheduleResult, status: Status, selected: int
) -> tuple[ConditionStatus, str, str]:
    """OCM's PlacementSatisfied (status, reason, message); the first matching rule wins."""
    avail = result.availability
    wanted_sets = result.placement.spec.cluster_sets or []
    if avail is not None and not avail.has_bindings:
        return (
            "False",
            "NoManagedClusterSetBindings",
            "No valid ManagedClusterSetBindings found in placement namespace",
        )
    if avail is not None and not avail.eligible_sets:
        sets = ",".join(wanted_sets)
        return (
            "False",
            "NoIntersection",
            f"None of ManagedClusterSets [{sets}] is bound to placement namespace",
        )
    if avail is not None and not avail.available.any():
        sets = ",".join(avail.eligible_sets)
        return (
            "False",
            "AllManagedClusterSetsEmpty",
            f"All ManagedClusterSets [{sets}] have no member ManagedCluster",
        )
    if status.code == Code.ERROR:
        return "False", "NotAllDecisionsScheduled", status.message
    if selected == 0:
        return (
            "False",
            "NoManagedClusterMatched",
            "No ManagedCluster matches any of the cluster predicate",
        )
    if result.unscheduled == 0:
        return "True", "AllDecisionsScheduled", "All cluster decisions scheduled"
    return (
        "False",
        "NotAllDecisionsScheduled",
        f"{result.unscheduled} cluster decisions unscheduled",
    )


def misconfigured_condition(status: Status) -> tuple[ConditionStatus, str, str]:
    """OCM's PlacementMisconfigured (status, reason, message), `Succeedconfigured` as spelt."""
    if status.code == Code.MISCONFIGURED:
        return "True", "Misconfigured", f"{status.plugin}:{status.message}"
    return "False", "Succeedconfigured", "Placement configurations check pass"


def set_condition(
    conditions: Sequence[Condition],
    kind: str,
    value: tuple[ConditionStatus, str, str],
    now: datetime,
) -> list[Condition]:
    """meta.SetStatusCondition: replace in place; the transition time moves only when the
    status changes."""
    status, reason, message = value
    message = truncate_message(message)
    out = list(conditions)
    for i, existing in enumerate(out):
        if existing.type == kind:
            changed = existing.status != status
            out[i] = existing.model_copy(
                update={
                    "status": status,
                    "reason": reason,
                    "message": message,
                    "last_transition_time": now if changed else existing.last_transition_time,
                }
            )
            return out
    out.append(
        Condition(
            type=kind, status=status, reason=reason, message=message, last_transition_time=now
        )
    )
    return out


def outcome(
    result: ScheduleResult,
    fleet: FleetSnapshot,
    previous: PlacementStatus | None,
    now: datetime,
) -> Outcome:
    """The decisions and status to write for one scheduled placement.

    As OCM's `syncPlacement`: the decision groups are built whatever the scheduler said, and a
    group that cannot be built (a bad `groupClusterSelector` or `clustersPerDecisionGroup`)
    replaces the scheduler's status, so its message is the one shown; the Satisfied condition
    and `numberOfSelectedClusters` still count the clusters the scheduler selected."""
    status = result.status
    paged: Paged | None = None
    selected = len(result.selected)
    groups, group_status = cluster_decision_groups(result.placement, fleet, result.selected)
    if not group_status.ok:
        status = group_status
    elif status.ok:
        problem = decision_name_problem(result.placement)
        if problem is None:
            paged = paginate(result.placement, groups)
        else:  # ours, not OCM's: nothing can be written, so nothing is selected
            status, selected = Status(Code.MISCONFIGURED, problem), 0
    conditions = list(previous.conditions or []) if previous else []
    conditions = set_condition(
        conditions, PLACEMENT_SATISFIED, satisfied_condition(result, status, selected), now
    )
    conditions = set_condition(
        conditions, PLACEMENT_MISCONFIGURED, misconfigured_condition(status), now
    )
    if paged is not None:
        new_status = PlacementStatus(
            number_of_selected_clusters=selected,
            decision_groups=list(paged.groups),
            conditions=conditions,
        )
    elif previous is None:
        new_status = PlacementStatus(
            number_of_selected_clusters=selected, decision_groups=[], conditions=conditions
        )
    else:  # the decisions stay (a deliberate difference), and so do their groups
        update: dict[str, object] = {"conditions": conditions}
        if not group_status.ok:
            update["number_of_selected_clusters"] = selected
        new_status = previous.model_copy(update=update)
    return Outcome(result, status, paged, new_status)


def score_note(result: ScheduleResult, fleet: FleetSnapshot) -> str:
    """The ScoreUpdate event note: `name:total ` for every feasible cluster by name, cut with
    `......` before it would pass 1000 characters (OCM placement#40: fleets of >1000 clusters
    overflowed the event)."""
    if result.rows is None or result.row_total is None:
        return ""
    parts: list[str] = []
    length = 0
    # Each item takes 4 characters at least (`n:0 `): the note is cut within the first rows.
    head = MAX_NOTE // 4 + 1
    names = fleet.names
    rows, totals = result.rows[:head].tolist(), result.row_total[:head].tolist()
    for row, total in zip(rows, totals, strict=True):  # the candidates, in name order
        item = f"{names[row]}:{total} "
        if length + len(item) > MAX_NOTE:
            parts.append("......")
            break
        parts.append(item)
        length += len(item)
    return "".join(parts)
