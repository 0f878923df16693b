"""The `Scheduler`: cluster sets -> filters -> weights -> prioritizers -> selector, for one
placement against one snapshot, with OCM's order of checks and its integer arithmetic."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.clustersets import Availability, availability
from placement.framework import (
    BoolMask,
    Code,
    Cycle,
    Prioritizer,
    RowIndex,
    ScoreVector,
    Selection,
    Status,
    worst,
)
from placement.registry import Profile, Registry
from placement.snapshot import FleetSnapshot

__all__ = [
    "FilterRecord",
    "PrioritizerRecord",
    "ScheduleResult",
    "Scheduler",
    "WeightedCoordinate",
    "rank",
    "weighted_coordinates",
]


class _Outcome(Protocol):
    @property
    def status(self) -> Status: ...


T = TypeVar("T", bound=_Outcome)


@dataclass(frozen=True)
class FilterRecord:
    """Candidates left after the filters in `name` (e.g. `Predicate,TaintToleration`)."""

    name: str
    mask: BoolMask


@dataclass(frozen=True)
class PrioritizerRecord:
    """One prioritizer's scores and weight; `scored` marks the candidate rows that got a score
    (values outside `scored` are meaningless)."""

    name: str
    weight: int
    scores: ScoreVector
    scored: BoolMask


@dataclass(frozen=True)
class WeightedCoordinate:
    """A prioritizer to run: its coordinate, the registry entry serving it and its weight."""

    coordinate: ScoreCoordinate
    plugin: str
    weight: int


@dataclass
class ScheduleResult:
    """Everything one cycle decided and how; input to decisions, conditions and explain."""

    placement: Placement
    size: int
    status: Status = field(default_factory=Status)
    availability: Availability | None = None
    filters: list[FilterRecord] = field(default_factory=list)
    prioritizers: list[PrioritizerRecord] = field(default_factory=list)
    candidates: BoolMask | None = None
    total: ScoreVector | None = None
    selection: Selection | None = None
    unscheduled: int = 0
    requeue_at: datetime | None = None
    timings: list[tuple[str, str, float]] = field(default_factory=list)
    """(plugin type, plugin name, seconds) of every plugin call, for the duration metrics."""

    @property
    def selected(self) -> RowIndex:
        if self.selection is None:
            return np.empty(0, dtype=np.intp)
        return self.selection.rows

    @property
    def feasible(self) -> RowIndex:
        """Feasible rows, total descending then name ascending."""
        if self.candidates is None or self.total is None:
            return np.empty(0, dtype=np.intp)
        return rank(self.candidates, self.total)


def rank(candidates: BoolMask, total: ScoreVector, limit: int | None = None) -> RowIndex:
    """Candidate rows by total descending (the first `limit` of them); rows are name-ordered,
    so a stable sort breaks ties by name ascending."""
    rows = np.flatnonzero(candidates)
    scores = total[rows]
    if limit is not None and limit < rows.size:
        # Sort only the best `limit`: all above the limit-th best total, then the ties at that
        # total in name order.
        if limit <= 0:
            return rows[:0]
        threshold = np.partition(scores, rows.size - limit)[rows.size - limit]
        keep = scores > threshold
        keep[np.flatnonzero(scores == threshold)[: limit - int(keep.sum())]] = True
        rows, scores = rows[keep], scores[keep]
    return rows[np.argsort(-scores, kind="stable")]


def weighted_coordinates(
    placement: Placement, profile: Profile, registry: Registry
) -> tuple[list[WeightedCoordinate], Status]:
    """The prioritizers to run with their weights (weight 0 dropped), or a Misconfigured status
    with OCM's message."""
    policy = placement.spec.prioritizer_policy
    mode = policy.mode if policy else ""
    configured = (policy.configurations or []) if policy else []
    merged: dict[object, tuple[ScoreCoordinate, int]] = {}
    if mode in ("Additive", ""):
        for name, weight in profile.default_weights.items():
            merged[("BuiltIn", name)] = (ScoreCoordinate(type="BuiltIn", built_in=name), weight)
    elif mode != "Exact":
        return [], Status(Code.MISCONFIGURED, f"incorrect prioritizer policy mode: {mode}")
    for config in configured:
        coordinate = config.score_coordinate
        # BuiltIn coordinates override each other (last wins); each AddOn entry stands alone.
        builtin = coordinate.type == "BuiltIn"
        key: object = ("BuiltIn", coordinate.built_in) if builtin else id(config)
        merged[key] = (coordinate, config.weight)
    out: list[WeightedCoordinate] = []
    for coordinate, weight in merged.values():
        if weight == 0:
            continue
        if coordinate.type == "BuiltIn":
            name = coordinate.built_in or ""
            if name in profile.selector_coordinates:
                continue  # weighs the selector's own score (Spread), not a prioritizer
            if name not in registry.prioritizers or name == profile.addon_prioritizer:
                msg = f"incorrect builtin prioritizer: {name}"
                return [], Status(Code.MISCONFIGURED, msg)
            out.append(WeightedCoordinate(coordinate, name, weight))
        else:
            if coordinate.add_on is None:
                return [], Status(Code.MISCONFIGURED, "addOn should not be empty")
            out.append(WeightedCoordinate(coordinate, profile.addon_prioritizer, weight))
    return out, Status()


class Scheduler:
    """Schedules placements with the plugins of `registry` as `profile` arranges them."""

    def __init__(self, registry: Registry, profile: Profile) -> None:
        profile.check(registry)
        self.registry = registry
        self.profile = profile
        self.filters = [registry.filters[name]() for name in profile.filters]

    @staticmethod
    def _guard(plugin: str, call: Callable[..., T], *args: Any) -> T | Status:
        """The plugin's result, or the Status that stops the cycle (its own non-ok status,
        or an ERROR for an exception)."""
        try:
            out = call(*args)
        except Exception as exc:  # a plugin bug must not stop the controller
            return Status(Code.ERROR, f"{type(exc).__name__}: {exc}", plugin)
        return out if out.status.ok else out.status

    def selector_name(self, placement: Placement) -> str:
        return self.profile.selector_for(placement)

    def schedule(
        self, placement: Placement, fleet: FleetSnapshot, now: datetime, explain: bool = False
    ) -> ScheduleResult:
        """One cycle. `explain` asks plugins for the extra trace `placement explain` shows."""
        cycle = Cycle(now=now, scratch={"explain": explain})
        result = ScheduleResult(placement=placement, size=fleet.size)
        avail = availability(placement, fleet)
        result.availability = avail
        candidates = avail.available
        pipeline: list[str] = []
        requeue: list[datetime] = []
        statuses: list[Status] = []
        clock = time.perf_counter
        for plugin in self.filters:
            started = clock()
            outcome = self._guard(plugin.name, plugin.filter, cycle, placement, fleet, candidates)
            result.timings.append(("filter", plugin.name, clock() - started))
            if isinstance(outcome, Status):
                result.status = outcome
                return result
            statuses.append(outcome.status)
            candidates = outcome.mask & candidates
            if outcome.requeue_at is not None:
                requeue.append(outcome.requeue_at)
            pipeline.append(plugin.name)
            result.filters.append(FilterRecord(",".join(pipeline), candidates))

        coordinates, status = weighted_coordinates(placement, self.profile, self.registry)
        if not status.ok:
            result.status = status
            return result
        total = np.zeros(fleet.size, dtype=np.int64)
        for item in coordinates:
            prioritizer: Prioritizer = self.registry.prioritizers[item.plugin](item.coordinate)
            started = clock()
            scored = self._guard(
                prioritizer.name, prioritizer.score, cycle, placement, fleet, candidates
            )
            result.timings.append(("prioritizer", prioritizer.name, clock() - started))
            if isinstance(scored, Status):
                result.status = scored
                return result
            statuses.append(scored.status)
            mask = candidates if scored.scored is None else scored.scored & candidates
            scores = scored.scores
            # Rows outside the candidates may hold anything: only candidates are ranked,
            # explained or selected, so masking every vector would be wasted passes.
            if item.weight == 1:
                total += scores
            else:
                total += scores * item.weight
            result.prioritizers.append(
                PrioritizerRecord(prioritizer.name, item.weight, scores, mask)
            )
        result.candidates = candidates
        result.total = total

        selector = self.registry.selectors[self.selector_name(placement)]()
        started = clock()
        selection = self._guard(
            selector.name, selector.select, cycle, placement, fleet, candidates, total
        )
        result.timings.append(("selector", selector.name, clock() - started))
        if isinstance(selection, Status):
            result.status = selection
            return result
        result.selection = selection
        statuses.append(selection.status)
        wanted = placement.spec.number_of_clusters
        if wanted is None:
            wanted = selection.wanted
        if wanted is not None:
            result.unscheduled = max(wanted - len(selection.rows), 0)
        result.requeue_at = min(requeue) if requeue else None
        result.status = worst(*statuses)
        return result
