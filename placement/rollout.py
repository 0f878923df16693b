"""Which clusters a rollout goes to next: OCM's `RolloutStrategy` applied to a placement's
decision groups and each cluster's rollout status, as sdk-go's `RolloutHandler` does it
(`pkg/apis/cluster/v1alpha1/rollout.go`), pure and on an injected clock.

Given the clusters by decision group (what a `DecisionTracker` holds) and the status the caller
knows for each cluster (ToApply, Progressing, Succeeded, Failed, TimeOut, Skip, with the time it
last changed), `rollout` returns the clusters to roll out to now (those still in progress
included, so a caller applies the same set again idempotently), the ones that timed out, the
statuses of clusters no longer selected, whether the failures passed `maxFailures`, and when to
look again (the earliest progress deadline or end of a soak time still ahead).

* `All`: every cluster; `progressDeadline` turns long Progressing/Failed clusters into TimeOut.
* `Progressive`: mandatory decision groups first, group by group, tolerating no failure; then
  the other clusters by name, `maxConcurrency` at a time (a number, or a percent of them rounded
  up; unset or 0: all), stopping new ones once failures pass `maxFailures` (a number, or a
  percent of all clusters rounded up); a Succeeded cluster within `minSuccessTime` of its
  success still counts as in progress (soak time).
* `ProgressivePerGroup`: mandatory groups first, then one decision group at a time, moving on
  when the group has nothing left in progress; `maxFailures` per group.

Behaviour kept from sdk-go on purpose, quirks included: `All` ignores its own `maxFailures` and
`minSuccessTime`; a threshold that computes to 0 or to more than the total falls back to the
default; `progressDeadline` "None" or empty means no deadline, and its pattern is a prefix match
(`10m30s` is accepted and means ten and a half minutes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import Enum

from apis.rollout import PROGRESS_DEADLINE_PATTERN, MandatoryDecisionGroup, RolloutStrategy

__all__ = [
    "ClusterGroups",
    "ClusterRolloutStatus",
    "GroupKey",
    "RolloutError",
    "RolloutResult",
    "RolloutStatus",
    "parse_go_duration",
    "rollout",
    "rollout_size",
]


class RolloutError(ValueError):
    """A strategy whose thresholds or durations cannot be read (the message says which)."""


class RolloutStatus(Enum):
    TO_APPLY = "ToApply"
    PROGRESSING = "Progressing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIME_OUT = "TimeOut"
    SKIP = "Skip"


@dataclass(frozen=True, order=True)
class GroupKey:
    """A decision group: its index and name (the PlacementDecision labels)."""

    index: int = 0
    name: str = ""


ClusterGroups = Mapping[GroupKey, frozenset[str]]
"""The placement's clusters by decision group."""


@dataclass(frozen=True)
class ClusterRolloutStatus:
    cluster: str
    status: RolloutStatus
    group: GroupKey | None = None
    last_transition: datetime | None = None
    """When the status last changed: the start of a progress deadline or of a soak time."""
    recheck: datetime | None = None
    """Set in results: when this cluster's deadline or soak time ends."""


@dataclass
class RolloutResult:
    to_rollout: list[ClusterRolloutStatus] = field(default_factory=list)
    timed_out: list[ClusterRolloutStatus] = field(default_factory=list)
    removed: list[ClusterRolloutStatus] = field(default_factory=list)
    max_failure_breach: bool = False
    recheck_after: timedelta | None = None


_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DEADLINE = re.compile(PROGRESS_DEADLINE_PATTERN)
_FAILED = (RolloutStatus.TIME_OUT, RolloutStatus.FAILED)


def parse_go_duration(text: str) -> timedelta:
    """Go's `time.ParseDuration` (`1h30m`, `90s`, `1.5h`, `0`); RolloutError otherwise."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return timedelta(0)
    seconds, at = 0.0, 0
    for match in _PART.finditer(body):
        if match.start() != at:
            break
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        at = match.end()
    if not body or at != len(body):
        raise RolloutError(f"time: invalid duration {text!r}")
    return timedelta(seconds=-seconds if text.startswith("-") else seconds)


def _timeout(text: str | None) -> timedelta | None:
    """A progress deadline; None: no deadline ("None", empty or unset)."""
    if text in (None, "", "None"):
        return None
    assert text is not None
    if not _DEADLINE.search(text):
        raise RolloutError("invalid timeout format")
    return parse_go_duration(text)


def rollout_size(threshold: int | str | None, total: int, default: int) -> int:
    """A number, or a percent of `total` rounded up; 0, negative or above `total`: `default`."""
    if threshold is None:
        size = 0
    elif isinstance(threshold, int):
        size = threshold
    elif threshold.endswith("%"):
        try:
            size = math.ceil(float(threshold[:-1]) / 100 * total)
        except ValueError:
            raise RolloutError(f"'{threshold}' is an invalid maximum threshold value") from None
    else:
        raise RolloutError(
            f"'{threshold}' is an invalid maximum threshold value: string is not a percentage"
        )
    return default if size <= 0 or size > total else size


# --- decision groups ---------------------------------------------------------------------------


def _resolve(groups: ClusterGroups, wanted: Sequence[MandatoryDecisionGroup]) -> list[GroupKey]:
    """The groups `wanted` names: by name (every index with that name), else by index."""
    out: list[GroupKey] = []
    for want in wanted:
        if want.group_name:
            out += sorted(k for k in groups if k.name == want.group_name)
        else:
            out += [k for k in groups if k.index == (want.group_index or 0)]
    return out


def _only(groups: ClusterGroups, keys: Iterable[GroupKey]) -> dict[GroupKey, frozenset[str]]:
    return {k: groups[k] for k in keys if k in groups}


def _besides(groups: ClusterGroups, keys: Iterable[GroupKey]) -> dict[GroupKey, frozenset[str]]:
    excluded = set(keys)
    return {k: v for k, v in groups.items() if k not in excluded}


def _clusters(groups: ClusterGroups) -> set[str]:
    return set().union(*groups.values()) if groups else set()


# --- one cluster's status ----------------------------------------------------------------------


def _recheck(start: datetime | None, duration: timedelta | None, now: datetime) -> datetime | None:
    if duration is None:
        return None
    return (start or now) + duration


def _determine(
    status: ClusterRolloutStatus,
    min_success: timedelta,
    timeout: timedelta | None,
    now: datetime,
    result: RolloutResult,
) -> ClusterRolloutStatus:
    """Sort one known status into `result` (to roll out, or timed out); returns it as updated
    (a deadline passed makes it TimeOut)."""
    kind = status.status
    if kind is RolloutStatus.TO_APPLY:
        result.to_rollout.append(status)
    elif kind is RolloutStatus.SUCCEEDED:
        soaked = _recheck(status.last_transition, min_success, now)
        if soaked is not None and now < soaked:
            status = replace(status, recheck=soaked)
            result.to_rollout.append(status)
    elif kind not in (RolloutStatus.TIME_OUT, RolloutStatus.SKIP):
        deadline = _recheck(status.last_transition, timeout, now)
        status = replace(status, recheck=deadline)
        if deadline is None or now < deadline:
            result.to_rollout.append(status)
        else:
            status = replace(status, status=RolloutStatus.TIME_OUT)
            result.timed_out.append(status)
    return status


def _finish(result: RolloutResult, now: datetime) -> RolloutResult:
    ahead = [s.recheck - now for s in result.to_rollout if s.recheck is not None]
    ahead = [d for d in ahead if d > timedelta(0)]
    result.recheck_after = min(ahead) if ahead else None
    return result


# --- the two progressions ------------------------------------------------------------------------


def _per_cluster(
    groups: ClusterGroups,
    size: int,
    max_failures: int,
    min_success: timedelta,
    timeout: timedelta | None,
    statuses: Sequence[ClusterRolloutStatus],
    now: datetime,
) -> RolloutResult:
    result = RolloutResult()
    known: set[str] = set()
    failures = 0
    for status in sorted(statuses, key=lambda s: s.cluster):
        if not status.cluster:
            continue
        known.add(status.cluster)
        if not result.max_failure_breach or status.status is not RolloutStatus.TO_APPLY:
            status = _determine(status, min_success, timeout, now, result)
        if status.status in _FAILED:
            failures += 1
            result.max_failure_breach = failures > max_failures
        if len(result.to_rollout) >= size:
            return _finish(result, now)
    if result.max_failure_breach:
        return _finish(result, now)
    group_of = {c: k for k, members in groups.items() for c in members}
    for cluster in sorted(_clusters(groups) - known):
        result.to_rollout.append(
            ClusterRolloutStatus(cluster, RolloutStatus.TO_APPLY, group_of[cluster])
        )
        if len(result.to_rollout) >= size:
            break
    return _finish(result, now)


def _per_group(
    groups: ClusterGroups,
    max_failures: int | str | None,
    min_success: timedelta,
    timeout: timedelta | None,
    statuses: Sequence[ClusterRolloutStatus],
    now: datetime,
) -> RolloutResult:
    result = RolloutResult()
    known: dict[str, RolloutStatus] = {}
    for status in statuses:
        if status.cluster and status.status is not RolloutStatus.TO_APPLY:
            known[status.cluster] = _determine(status, min_success, timeout, now, result).status
    total_failures = 0
    for key in sorted(groups):
        members = groups[key]
        allowed = rollout_size(max_failures, len(members), 0)
        failures = 0
        for cluster in sorted(members):
            if cluster in known:
                if known[cluster] in _FAILED:
                    failures += 1
                    result.max_failure_breach = failures > allowed
                continue
            result.to_rollout.append(ClusterRolloutStatus(cluster, RolloutStatus.TO_APPLY, key))
        total_failures += failures
        if len(result.to_rollout) - total_failures > 0 or result.max_failure_breach:
            return _finish(result, now)
    return _finish(result, now)


# --- the strategies ---------------------------------------------------------------------------


def rollout(
    strategy: RolloutStrategy,
    groups: ClusterGroups,
    statuses: Sequence[ClusterRolloutStatus],
    now: datetime,
) -> RolloutResult:
    """The clusters to roll out to now (module docstring). `groups`: the placement's clusters
    by decision group; `statuses`: what the caller knows of each cluster (clusters without one
    are ToApply). RolloutError on a threshold or duration that cannot be read."""
    selected = _clusters(groups)
    current = [s for s in statuses if s.cluster in selected]
    removed = [s for s in statuses if s.cluster not in selected]
    if strategy.type == "All":
        settings = strategy.all
        timeout = _timeout(settings.progress_deadline if settings else None)
        count = len(selected)
        result = _per_cluster(groups, count, count, timedelta(0), timeout, current, now)
        result.removed = removed
        return result
    per_group = strategy.type == "ProgressivePerGroup"
    config = strategy.progressive_per_group if per_group else strategy.progressive
    min_success = parse_go_duration(config.min_success_time or "0") if config else timedelta(0)
    timeout = _timeout(config.progress_deadline if config else None)
    max_failures = config.max_failures if config else None
    try:  # checked before anything is rolled out, as sdk-go does
        failures_allowed = rollout_size(max_failures, len(selected), 0)
    except RolloutError as exc:
        raise RolloutError(f"failed to parse the provided maxFailures: {exc}") from None
    mandatory = _resolve(groups, (config.mandatory_decision_groups or []) if config else [])
    first = _only(groups, mandatory)
    if first:
        result = _per_group(first, 0, min_success, timeout, current, now)
        if result.to_rollout or result.timed_out:
            result.removed = removed
            return result
    rest = _besides(groups, mandatory)
    if per_group:
        result = _per_group(rest, max_failures, min_success, timeout, current, now)
    else:
        count = len(_clusters(rest))
        concurrency = strategy.progressive.max_concurrency if strategy.progressive else None
        try:
            size = rollout_size(concurrency, count, count)
        except RolloutError as exc:
            raise RolloutError(f"failed to parse the provided maxConcurrency: {exc}") from None
        result = _per_cluster(rest, size, failures_allowed, min_success, timeout, current, now)
    result.removed = removed
    return result
