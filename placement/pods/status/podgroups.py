"""The PodGroup status rule: a gang's phase and counters, as the coscheduling design's PodGroup
controller keeps them (docs/gangs-and-quotas.md), with the members counted per namespace.

The anchor's controller moves a group one step per reconcile and relies on the watch echo of its
own write for the next step. The rule here runs those same steps until none applies, so one
reconcile (or one `scheduler simulate`) reaches the state the anchor reaches after its echoes,
and every phase change on the way is an event.

The steps, from the group's current phase:

* `Finished`, `Failed`: final, nothing changes.
* unset → `Pending`.
* `Pending` → `Scheduling` once at least `minMember` members exist (finished ones included, as
  in the anchor); `occupiedBy` is then taken from the owners of the first member by name, and
  `scheduleStartTime` is set.
* otherwise the counters are recomputed and, in this order, each later rule overriding:
  fewer members than `minMember` → `Pending` (and stop); running + succeeded below the quorum →
  `Scheduling`; at or above it → `Running`; some failed and failed + running + succeeded at or
  above it → `Failed`; succeeded at or above it → `Finished`.

The 48-hour guard: a group still `Pending` or `Scheduling` with no member running 48 hours after
its creation gets a Warning event, reason `Timeout`, message `schedule time longer than 48
hours` (the anchor's words), and nothing else: the phase is not changed by it. The rule returns
it as a notice (`StatusOutcome.notices`: the shells emit it once per group, not at every
reconcile), and until the mark it asks to be looked at again then (`requeue_at`), so the warning
comes on time even if nothing else happens to the group.

Differences from the anchor: members are the pods of the group's namespace only (the anchor
lists by label across namespaces); `scheduled` (members bound to a node, finished ones
included) is written. The anchor measures the 48 hours from creation to `scheduleStartTime`,
which it no longer writes, and once its guard holds it stops updating the group for good (its
stored `running` stays 0, so even members that start later never make it `Running`); here they
are measured from creation to now, and the status keeps following the members after the
warning.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from apis.core import Pod
from apis.meta import KubeObject, format_time
from apis.scheduling import POD_GROUP_LABEL, PodGroup
from placement.pods.status.rule import StatusEvent, StatusOutcome, StatusWorld

__all__ = [
    "TIMEOUT",
    "TIMEOUT_MESSAGE",
    "TIMEOUT_REASON",
    "PodGroupCounts",
    "PodGroupStatusRule",
    "members",
    "pod_group_status",
    "timeout_guard",
]

TIMEOUT = timedelta(hours=48)
"""How long after its creation a group that has no member running gets the Timeout warning."""
TIMEOUT_REASON = "Timeout"
TIMEOUT_MESSAGE = "schedule time longer than 48 hours"

_FINAL = ("Finished", "Failed")
_WAITING = ("Pending", "Scheduling")  # the phases the 48-hour guard watches
_MAX_STEPS = 8  # more than the longest chain of steps (unset → Pending → Scheduling → ...)


def members(group: PodGroup, pods: Iterable[Pod]) -> list[Pod]:
    """The group's member pods among `pods` (those of its namespace), by name."""
    name, namespace = group.metadata.name, group.metadata.namespace
    found = [
        p
        for p in pods
        if (p.metadata.labels or {}).get(POD_GROUP_LABEL) == name
        and p.metadata.namespace == namespace
    ]
    return sorted(found, key=lambda p: p.metadata.name or "")


@dataclass(frozen=True)
class PodGroupCounts:
    """The members by phase, and how many hold a node."""

    total: int
    scheduled: int
    running: int
    succeeded: int
    failed: int

    @classmethod
    def of(cls, pods: list[Pod]) -> PodGroupCounts:
        def phase(p: Pod) -> str | None:
            return p.status.phase if p.status is not None else None

        return cls(
            total=len(pods),
            scheduled=sum(1 for p in pods if p.spec is not None and p.spec.node_name),
            running=sum(1 for p in pods if phase(p) == "Running"),
            succeeded=sum(1 for p in pods if phase(p) == "Succeeded"),
            failed=sum(1 for p in pods if phase(p) == "Failed"),
        )


def _occupied_by(pods: list[Pod]) -> str | None:
    """`ns/owner` of the first member's owners, sorted and comma-joined (None without owners)."""
    if not pods:
        return None
    first = pods[0]
    refs = first.metadata.owner_references or ()
    owners = sorted(f"{first.metadata.namespace}/{o.name}" for o in refs)
    return ",".join(owners) or None


def _step(phase: str, quorum: int, counts: PodGroupCounts) -> str:
    """scheduler-plugins' one step from `phase` (docs/gangs-and-quotas.md); `phase` unchanged
    when no rule applies."""
    if phase in _FINAL:
        return phase
    if phase == "":
        return "Pending"
    if phase == "Pending":
        return "Scheduling" if counts.total >= quorum else "Pending"
    if counts.total < quorum:
        return "Pending"
    active = counts.running + counts.succeeded
    new = "Running" if active >= quorum else "Scheduling"
    if counts.failed and counts.failed + active >= quorum:
        new = "Failed"
    if counts.succeeded >= quorum:
        new = "Finished"
    return new


def pod_group_status(
    group: PodGroup, pods: list[Pod], now: datetime
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The group's status in wire form after every step that applies, and the phase changes
    on the way as (from, to). `pods`: its members."""
    status = group.status.to_wire() if group.status is not None else {}
    quorum = (group.spec.min_member if group.spec is not None else None) or 1
    counts = PodGroupCounts.of(pods)
    phase = status.get("phase") or ""
    changes: list[tuple[str, str]] = []
    for _ in range(_MAX_STEPS):
        new = _step(phase, quorum, counts)
        if phase not in ("", "Pending") and phase not in _FINAL:
            # The anchor recomputes the counters in these phases only.
            status.update(
                scheduled=counts.scheduled,
                running=counts.running,
                succeeded=counts.succeeded,
                failed=counts.failed,
            )
        if new == phase:
            break
        if phase == "Pending" and new == "Scheduling":
            occupied = _occupied_by(pods)
            if occupied is not None:
                status["occupiedBy"] = occupied
            status.setdefault("scheduleStartTime", format_time(now))
        changes.append((phase, new))
        phase = new
        status["phase"] = new
    return status, changes


def _event(group: PodGroup, change: tuple[str, str], counts: PodGroupCounts) -> StatusEvent:
    old, new = change
    quorum = (group.spec.min_member if group.spec is not None else None) or 1
    message = (
        f"PodGroup phase {old or '(none)'} -> {new}: {counts.total} member pod(s) for "
        f"minMember {quorum}; {counts.running} running, {counts.succeeded} succeeded, "
        f"{counts.failed} failed"
    )
    return StatusEvent("Warning" if new == "Failed" else "Normal", new, message)


def timeout_guard(
    group: PodGroup, phase: str, counts: PodGroupCounts, now: datetime
) -> tuple[StatusEvent | None, datetime | None]:
    """The 48-hour guard for a group in `phase` (after this reconcile's steps): the Timeout
    warning when it holds now, else when it would hold if nothing changed (None: never, as the
    group is past waiting or has a member running, or has no creation time)."""
    created = group.metadata.creation_timestamp
    if created is None or phase not in _WAITING or counts.running:
        return None, None
    mark = created + TIMEOUT
    if now >= mark:
        return StatusEvent("Warning", TIMEOUT_REASON, TIMEOUT_MESSAGE), None
    return None, mark


class PodGroupStatusRule:
    """The StatusRule of PodGroups (`placement.pods.status.rule`)."""

    kind = "PodGroup"
    watches_nodes = False
    couples_objects = False

    def affected(self, pod: Pod, objects: Mapping[str, KubeObject]) -> Iterable[str]:
        name = (pod.metadata.labels or {}).get(POD_GROUP_LABEL)
        if not name:
            return ()
        key = f"{pod.metadata.namespace}/{name}"
        return (key,) if key in objects else ()

    def compute(self, obj: KubeObject, world: StatusWorld, now: datetime) -> StatusOutcome:
        assert isinstance(obj, PodGroup)
        pods = members(obj, world.pods_in(obj.metadata.namespace or ""))
        status, changes = pod_group_status(obj, pods, now)
        counts = PodGroupCounts.of(pods)
        warning, mark = timeout_guard(obj, str(status.get("phase") or ""), counts, now)
        return StatusOutcome(
            status,
            tuple(_event(obj, c, counts) for c in changes),
            requeue_at=mark,
            notices=(warning,) if warning is not None else (),
        )
