"""Offline simulation: schedule every Placement of a set of objects, in namespace/name order,
each seeing the decisions of the ones before it, exactly as the controller would write them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.meta import KubeObject
from apis.placements import Placement, PlacementDecision, is_disabled
from placement.outcome import Outcome, outcome
from placement.scheduler import Scheduler
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["SCHEDULING_KINDS", "Simulated", "fleet_of", "simulate"]

SCHEDULING_KINDS: tuple[type[KubeObject], ...] = (
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
    AddOnPlacementScore,
)


@dataclass(frozen=True)
class Simulated:
    """One placement with its computed status and the decisions it ends up with."""

    placement: Placement
    decisions: tuple[PlacementDecision, ...]
    outcome: Outcome | None  # None: skipped (disabled or being deleted)
    fleet: FleetSnapshot


def fleet_of(objects: Iterable[KubeObject]) -> tuple[FleetSnapshot, list[Placement]]:
    """The snapshot of the objects, and their placements sorted by namespace/name; an object
    given twice is its last definition (what applying them in order would leave)."""
    items = list(objects)

    def of(kind: type[KubeObject]) -> list[KubeObject]:
        return [o for o in items if isinstance(o, kind)]

    fleet = FleetSnapshot.build(
        of(ManagedCluster),  # type: ignore[arg-type]
        of(ManagedClusterSet),  # type: ignore[arg-type]
        of(ManagedClusterSetBinding),  # type: ignore[arg-type]
        of(PlacementDecision),  # type: ignore[arg-type]
        of(AddOnPlacementScore),  # type: ignore[arg-type]
    )
    latest = {(o.namespace, o.name): o for o in items if isinstance(o, Placement)}
    placements = [latest[key] for key in sorted(latest)]
    return fleet, placements


def simulate(
    objects: Iterable[KubeObject],
    scheduler: Scheduler,
    now: datetime,
    explain: Iterable[tuple[str, str]] = (),
    progress: Callable[[int, int], None] | None = None,
) -> list[Simulated]:
    """Schedule every placement in order; later ones see earlier ones' new decisions.
    Placements named in `explain` are scheduled with the extra trace explain shows;
    `progress(done, total)` is called after each placement."""
    items = list(objects)
    fleet, placements = fleet_of(items)
    current: dict[tuple[str, str], list[PlacementDecision]] = {}
    for obj in items:
        if isinstance(obj, PlacementDecision):
            owner = obj.placement_name
            if owner:
                current.setdefault((obj.namespace, owner), []).append(obj)
    out: list[Simulated] = []
    traced = set(explain)
    for placement in placements:
        if progress is not None:
            progress(len(out), len(placements))
        existing = tuple(
            sorted(current.get((placement.namespace, placement.name), []), key=lambda d: d.name)
        )
        if is_disabled(placement):
            out.append(Simulated(placement, existing, None, fleet))
            continue
        key = (placement.namespace, placement.name)
        result = scheduler.schedule(placement, fleet, now, explain=key in traced)
        done = outcome(result, fleet, placement.status, now)
        decisions = existing
        if done.paged is not None:
            decisions = done.paged.decisions
            chosen = [d.cluster_name for pd in decisions if pd.status for d in pd.status.decisions]
            fleet = fleet.with_decisions(placement.namespace, placement.name, chosen)
        updated = placement.model_copy(update={"status": done.placement_status})
        out.append(Simulated(updated, decisions, done, fleet))
    if progress is not None:
        progress(len(out), len(placements))
    return out
