"""The `Scheduler`: cluster sets -> filters -> weights -> prioritizers -> selector, for one
placement against one snapshot, with OCM's order of checks and its integer arithmetic."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache, cached_property
from typing import Any, NamedTuple, Protocol, TypeVar

import numpy as np

from apis.placements import Placement, ScoreCoordinate
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.clustersets import Availability, availability
from placement.framework import (
    SUCCESS,
    Code,
    Cycle,
    Prioritizer,
    Selection,
    Selector,
    Status,
    worst,
)
from placement.registry import Profile, Registry
from placement.scoring import own_positions, rows_mask, scatter
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = [
    "KEEP_BONUS",
    "FilterRecord",
    "PrioritizerRecord",
    "ScheduleResult",
    "Scheduler",
    "WeightedCoordinate",
    "rank",
    "rank_rows",
    "weighted_coordinates",
]


class _Outcome(Protocol):
    @property
    def status(self) -> Status: ...


T = TypeVar("T", bound=_Outcome)


@dataclass(frozen=True)
class FilterRecord:
    """Candidates left after the filters in `name` (e.g. `Predicate,TaintToleration`), and
    why the last of them removed each row it removed (explain cycles only)."""

    name: str
    mask: BoolMask
    reasons: Mapping[int, str] | None = None


@dataclass(eq=False)
class PrioritizerRecord:
    """One prioritizer's scores and weight over the candidate `rows`: `row_scores` is aligned
    with `rows`, and `row_scored` (None: all of them) marks the rows that got a score."""

    name: str
    weight: int
    rows: RowIndex
    row_scores: ScoreVector
    row_scored: BoolMask | None
    size: int

    @cached_property
    def scores(self) -> ScoreVector:
        """The scores over every snapshot row (0 outside the candidates)."""
        return scatter(self.rows, self.row_scores, self.size)

    @cached_property
    def scored(self) -> BoolMask:
        """The snapshot rows that got a score (a subset of the candidates)."""
        return rows_mask(self.rows, self.size, self.row_scored)


class WeightedCoordinate(NamedTuple):
    """A prioritizer to run: its coordinate, the registry entry serving it and its weight."""

    coordinate: ScoreCoordinate
    plugin: str
    weight: int


@dataclass
class ScheduleResult:
    """Everything one cycle decided and how; input to decisions, conditions and explain."""

    placement: Placement
    size: int
    status: Status = SUCCESS
    availability: Availability | None = None
    filters: list[FilterRecord] = field(default_factory=list)
    prioritizers: list[PrioritizerRecord] = field(default_factory=list)
    candidates: BoolMask | None = None
    rows: RowIndex | None = None
    """The candidate rows (ascending) once the prioritizers ran."""
    row_total: ScoreVector | None = None
    """The total score of each of `rows`."""
    selection: Selection | None = None
    unscheduled: int = 0
    requeue_at: datetime | None = None
    timings: list[tuple[str, str, float]] = field(default_factory=list)
    """(plugin type, plugin name, seconds) of every plugin call, for the duration metrics."""
    _total: ScoreVector | None = field(default=None, repr=False, compare=False)

    @property
    def total(self) -> ScoreVector | None:
        """The total score per snapshot row (0 outside the candidates), once the prioritizers
        ran; built on first use, since a cycle itself only needs `row_total`."""
        if self._total is None and self.rows is not None and self.row_total is not None:
            self._total = scatter(self.rows, self.row_total, self.size)
        return self._total

    @property
    def selected(self) -> RowIndex:
        if self.selection is None:
            return np.empty(0, dtype=np.intp)
        return self.selection.rows

    @property
    def feasible(self) -> RowIndex:
        """Feasible rows, total descending then name ascending."""
        if self.rows is None or self.row_total is None:
            return np.empty(0, dtype=np.intp)
        return rank_rows(self.rows, self.row_total)


def rank(candidates: BoolMask, total: ScoreVector, limit: int | None = None) -> RowIndex:
    """Candidate rows by total descending (the first `limit` of them); rows are name-ordered,
    so a stable sort breaks ties by name ascending."""
    rows = np.flatnonzero(candidates)
    return rank_rows(rows, total[rows], limit)


def rank_rows(rows: RowIndex, total: ScoreVector, limit: int | None = None) -> RowIndex:
    """`rank` over candidate rows (ascending) and their totals (aligned with `rows`)."""
    if limit is not None and limit < rows.size:
        # Sort only the best `limit`: all above the limit-th best total, then the ties at that
        # total in name order.
        if limit <= 0:
            return rows[:0]
        cut = rows.size - limit
        # The same values as 32-bit integers when they fit (they do but for `keep`'s bonus):
        # partitioning and comparing them is several times faster.
        values = total
        if rows.size >= _NARROW_FROM and _INT32.min <= total.min() and total.max() <= _INT32.max:
            values = total.astype(np.int32)
        threshold = np.partition(values, cut)[cut]
        # The best `limit`: every candidate above the threshold, then the first ties in row
        # order; the stable sort below keeps equal totals in row (name) order.
        at = (values >= threshold).nonzero()[0]
        if at.size > limit:
            keep = values.take(at) > threshold
            keep[(~keep).nonzero()[0][: limit - int(np.count_nonzero(keep))]] = True
            at = at[keep]
        rows, total = rows.take(at), total.take(at)
    order: RowIndex = (-total).argsort(kind="stable")
    return rows[order]


_NARROW_FROM = 4096  # candidates from which `rank_rows` narrows the totals to int32
_INT32 = np.iinfo(np.int32)


@cache
def _builtin(name: str) -> ScoreCoordinate:
    """The coordinate of a default prioritizer, built once (plugins only read it)."""
    return ScoreCoordinate(type="BuiltIn", built_in=name)


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
            merged[("BuiltIn", name)] = (_builtin(name), weight)
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
    return out, SUCCESS


def _coordinate_key(item: WeightedCoordinate) -> tuple[str | None, ...]:
    coordinate = item.coordinate
    add_on = coordinate.add_on
    if add_on is None:
        return (item.plugin, coordinate.type, coordinate.built_in)
    return (
        item.plugin,
        coordinate.type,
        coordinate.built_in,
        add_on.resource_name,
        add_on.score_name,
    )


KEEP_BONUS = 2**40
"""Added to the current decisions' totals by `schedule(keep=True)`: more than any spread of
weighted scores (a prioritizer scores within -100..100, weights within -10..10)."""

_MAX_PRIORITIZERS = 1024  # distinct coordinates kept built; beyond that the cache starts over


class Scheduler:
    """Schedules placements with the plugins of `registry` as `profile` arranges them.

    Plugins are built once and reused: filters and selectors per name, prioritizers per score
    coordinate (a plugin's behaviour depends on its coordinate's value only)."""

    def __init__(self, registry: Registry, profile: Profile) -> None:
        profile.check(registry)
        self.registry = registry
        self.profile = profile
        self.filters = [registry.build_filter(name) for name in profile.filters]
        self._prioritizers: dict[tuple[str | None, ...], Prioritizer] = {}
        self._selectors: dict[str, Selector] = {}
        self._plans: dict[int, tuple[object, list[tuple[Prioritizer, int]]]] = {}

    @staticmethod
    def _guard(plugin: str, call: Callable[..., T], *args: Any) -> T | Status:
        """The plugin's result, or the Status that stops the cycle (its own non-ok status,
        or an ERROR for an exception)."""
        try:
            out = call(*args)
        except Exception as exc:  # a plugin bug must not stop the controller
            return _crashed(plugin, exc)
        status = out.status
        return out if status is SUCCESS or status.ok else status

    def selector_name(self, placement: Placement) -> str:
        return self.profile.selector_for(placement)

    def _prioritizer(self, item: WeightedCoordinate) -> Prioritizer:
        key = _coordinate_key(item)
        built = self._prioritizers.get(key)
        if built is None:
            built = self.registry.build_prioritizer(item.plugin, item.coordinate)
            if len(self._prioritizers) >= _MAX_PRIORITIZERS:
                self._prioritizers.clear()
            self._prioritizers[key] = built
        return built

    def _plan(self, placement: Placement) -> tuple[list[tuple[Prioritizer, int]], Status]:
        """The prioritizers to run with their weights, kept per prioritizer policy object
        (holding the object itself keeps the identity test sound; policies are not changed
        in place, a changed placement is a new object)."""
        policy = placement.spec.prioritizer_policy
        known = self._plans.get(id(policy))
        if known is not None and known[0] is policy:
            return known[1], SUCCESS
        coordinates, status = weighted_coordinates(placement, self.profile, self.registry)
        if not status.ok:
            return [], status
        plan = [(self._prioritizer(item), item.weight) for item in coordinates]
        if len(self._plans) >= _MAX_PRIORITIZERS:
            self._plans.clear()
        self._plans[id(policy)] = (policy, plan)
        return plan, SUCCESS

    def _selector(self, name: str) -> Selector:
        built = self._selectors.get(name)
        if built is None:
            built = self._selectors[name] = self.registry.build_selector(name)
        return built

    def schedule(
        self,
        placement: Placement,
        fleet: FleetSnapshot,
        now: datetime,
        explain: bool = False,
        keep: bool = False,
    ) -> ScheduleResult:
        """One cycle. `explain` asks plugins for the extra trace `placement explain` shows.
        `keep` ranks the placement's current decisions above every other feasible cluster
        (KEEP_BONUS added to their totals for the selector only; the scores reported stay the
        prioritizers'): the result is the current decision whenever the filters, the number
        of clusters and the selector's rules still allow it (the hub controller's restart
        and resync use it, README "Differences from OCM")."""
        cycle = Cycle(now=now, scratch={"explain": explain})
        result = ScheduleResult(placement=placement, size=fleet.size)
        avail = availability(placement, fleet)
        result.availability = avail
        if avail.error is not None:  # OCM's sync stops here; we report it (README, differences)
            result.status = Status(Code.MISCONFIGURED, avail.error)
            return result
        candidates = avail.available
        pipeline = ""
        requeue: list[datetime] = []
        statuses: list[Status] = []  # the ok ones that are not SUCCESS
        timings = result.timings
        clock = time.perf_counter
        for plugin in self.filters:
            name = plugin.name
            started = clock()
            outcome = self._guard(name, plugin.filter, cycle, placement, fleet, candidates)
            timings.append(("filter", name, clock() - started))
            if isinstance(outcome, Status):
                result.status = outcome
                return result
            if outcome.status is not SUCCESS:
                statuses.append(outcome.status)
            candidates = outcome.mask & candidates
            if outcome.requeue_at is not None:
                requeue.append(outcome.requeue_at)
            pipeline = f"{pipeline},{name}" if pipeline else name
            result.filters.append(FilterRecord(pipeline, candidates, outcome.reasons))

        plan, status = self._plan(placement)
        if not status.ok:
            result.status = status
            return result
        # From here on only the candidates are scored and ranked, as a compacted index.
        rows = candidates.nonzero()[0]
        total: ScoreVector | None = None
        records = result.prioritizers
        for prioritizer, weight in plan:
            name = prioritizer.name
            started = clock()
            try:  # _guard, inlined in this loop
                scored = prioritizer.score(cycle, placement, fleet, rows)
            except Exception as exc:  # a plugin bug must not stop the controller
                timings.append(("prioritizer", name, clock() - started))
                result.status = _crashed(name, exc)
                return result
            timings.append(("prioritizer", name, clock() - started))
            if scored.status is not SUCCESS:
                if not scored.status.ok:
                    result.status = scored.status
                    return result
                statuses.append(scored.status)
            scores = scored.scores
            if total is None:  # a new array: `scores` stays as the prioritizer gave it
                total = scores.astype(np.int64) if weight == 1 else scores * weight
            else:
                total += scores if weight == 1 else scores * weight
            records.append(PrioritizerRecord(name, weight, rows, scores, scored.scored, fleet.size))
        if total is None:
            total = np.zeros(rows.size, dtype=np.int64)
        result.candidates = candidates
        result.rows = rows
        result.row_total = total

        selector = self._selector(self.selector_name(placement))
        started = clock()
        ranked = total
        if keep:
            ranked = total.copy()
            ranked[own_positions(cycle, placement, fleet, rows)] += KEEP_BONUS
        args = (cycle, placement, fleet, rows, ranked)
        selection = self._guard(selector.name, selector.select, *args)
        timings.append(("selector", selector.name, clock() - started))
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


def _crashed(plugin: str, exc: Exception) -> Status:
    return Status(Code.ERROR, f"{type(exc).__name__}: {exc}", plugin)
