"""Rollout strategies as sdk-go's RolloutHandler applies them: our own vectors for every
strategy and option, including the cases of sdk-go's rollout tests (read, not copied)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apis.rollout import RolloutStrategy
from placement.rollout import (
    ClusterRolloutStatus,
    GroupKey,
    RolloutError,
    RolloutResult,
    RolloutStatus,
    parse_go_duration,
    rollout,
    rollout_size,
)

NOW = datetime(2022, 1, 1, tzinfo=UTC)
G0, G1, G2 = GroupKey(0, "group1"), GroupKey(1), GroupKey(2)
TWO_GROUPS = {G0: frozenset({"c1", "c2", "c3"}), G1: frozenset({"c4", "c5", "c6"})}
THREE_GROUPS = {**TWO_GROUPS, G2: frozenset({"c7", "c8", "c9"})}
T, P, S, F = (
    RolloutStatus.TO_APPLY,
    RolloutStatus.PROGRESSING,
    RolloutStatus.SUCCEEDED,
    RolloutStatus.FAILED,
)


def ago(seconds: int) -> datetime:
    return NOW - timedelta(seconds=seconds)


def status(
    cluster: str, kind: RolloutStatus, seconds_ago: int | None = None
) -> ClusterRolloutStatus:
    at = ago(seconds_ago) if seconds_ago is not None else None
    return ClusterRolloutStatus(cluster, kind, last_transition=at)


def strategy(kind: str, **settings: Any) -> RolloutStrategy:
    key = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}
    return RolloutStrategy.model_validate({"type": kind, key[kind]: settings})


def names(items: list[ClusterRolloutStatus]) -> list[str]:
    return [s.cluster for s in items]


def run(
    kind: str, groups: Any, statuses: list[ClusterRolloutStatus], **settings: Any
) -> RolloutResult:
    return rollout(strategy(kind, **settings), groups, statuses, NOW)


# --- All -------------------------------------------------------------------------------------


def test_all_without_any_status_rolls_out_to_every_cluster_by_name() -> None:
    result = run("All", TWO_GROUPS, [], progressDeadline="90s")
    assert names(result.to_rollout) == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert all(s.status is T for s in result.to_rollout)
    assert result.to_rollout[0].group == G0 and result.to_rollout[3].group == G1
    assert result.recheck_after is None


def test_all_keeps_progressing_clusters_and_times_out_those_past_the_deadline() -> None:
    statuses = [status("c1", S, 60), status("c2", P, 60), status("c3", F, 120), status("c4", F, 30)]
    result = run("All", TWO_GROUPS, statuses, progressDeadline="90s")
    assert names(result.to_rollout) == ["c2", "c4", "c5", "c6"]
    assert [(s.cluster, s.status) for s in result.timed_out] == [("c3", RolloutStatus.TIME_OUT)]
    assert result.timed_out[0].recheck == ago(30)
    assert result.to_rollout[0].recheck == NOW + timedelta(seconds=30)
    assert result.recheck_after == timedelta(seconds=30)  # c2's deadline (c4's is at 60 s)


def test_all_ignores_its_own_max_failures() -> None:
    statuses = [status("c1", F, 10), status("c2", F, 10)]
    result = run("All", TWO_GROUPS, statuses, maxFailures=0)
    assert not result.max_failure_breach
    assert names(result.to_rollout) == ["c1", "c2", "c3", "c4", "c5", "c6"]


def test_no_deadline_keeps_a_failed_cluster_in_progress_forever() -> None:
    result = run("All", TWO_GROUPS, [status("c1", F, 10**6)], progressDeadline="None")
    assert "c1" in names(result.to_rollout) and result.timed_out == []
    assert result.recheck_after is None


def test_clusters_no_longer_selected_are_reported_removed() -> None:
    gone = status("c9", S, 10)
    result = run("All", TWO_GROUPS, [gone, status("c1", S, 10)])
    assert result.removed == [gone]
    assert "c9" not in names(result.to_rollout)


# --- Progressive ---------------------------------------------------------------------------


def test_progressive_max_concurrency_as_a_number() -> None:
    result = run("Progressive", TWO_GROUPS, [], maxConcurrency=2)
    assert names(result.to_rollout) == ["c1", "c2"]


@pytest.mark.parametrize(
    ("concurrency", "expected"),
    [
        pytest.param("50%", 3, id="half-of-6"),
        pytest.param("40%", 3, id="2.4-rounds-up"),
        pytest.param("1%", 1, id="at-least-one"),
        pytest.param("100%", 6, id="all"),
        pytest.param(0, 6, id="zero-means-all"),
        pytest.param(10, 6, id="above-total-means-all"),
    ],
)
def test_progressive_max_concurrency_percent_rounds_up(concurrency: Any, expected: int) -> None:
    result = run("Progressive", TWO_GROUPS, [], maxConcurrency=concurrency)
    assert len(result.to_rollout) == expected


def test_progressive_counts_clusters_in_progress_against_the_concurrency() -> None:
    statuses = [status("c1", S, 60), status("c2", F, 120), status("c3", P, 60)]
    result = run(
        "Progressive", TWO_GROUPS, statuses, progressDeadline="90s", maxFailures=1, maxConcurrency=2
    )
    # sdk-go's "timeout 90s and maxFailures 1": c2 timed out, c3 in progress, c4 next.
    assert names(result.to_rollout) == ["c3", "c4"]
    assert names(result.timed_out) == ["c2"]
    assert not result.max_failure_breach
    assert result.recheck_after == timedelta(seconds=30)


def test_progressive_stops_adding_clusters_once_failures_pass_max_failures() -> None:
    statuses = [status("c1", F, 10), status("c2", F, 10), status("c3", S, 10)]
    result = run("Progressive", TWO_GROUPS, statuses, maxFailures=1, maxConcurrency=4)
    assert result.max_failure_breach
    assert names(result.to_rollout) == ["c1", "c2"]  # the failing ones stay in progress
    result = run("Progressive", TWO_GROUPS, statuses, maxFailures="50%", maxConcurrency=4)
    assert not result.max_failure_breach  # 50% of 6 is 3 failures allowed
    assert names(result.to_rollout) == ["c1", "c2", "c4", "c5"]


def test_a_timed_out_cluster_counts_as_a_failure() -> None:
    statuses = [status("c1", P, 120)]
    result = run("Progressive", TWO_GROUPS, statuses, progressDeadline="90s", maxConcurrency=2)
    assert result.max_failure_breach  # maxFailures defaults to 0
    assert names(result.timed_out) == ["c1"] and result.to_rollout == []


def test_a_zero_deadline_times_out_at_once() -> None:
    result = run(
        "Progressive", TWO_GROUPS, [status("c1", P, 0)], progressDeadline="0s", maxFailures=3
    )
    assert names(result.timed_out) == ["c1"]


def test_min_success_time_keeps_a_fresh_success_in_progress_and_rechecks_at_its_end() -> None:
    statuses = [status("c1", S, 30), status("c2", S, 90)]
    result = run("Progressive", TWO_GROUPS, statuses, minSuccessTime="1m", maxConcurrency=2)
    assert names(result.to_rollout) == ["c1", "c3"]  # c1 still soaking, c2 done
    assert result.to_rollout[0].recheck == NOW + timedelta(seconds=30)
    assert result.recheck_after == timedelta(seconds=30)


def test_mandatory_groups_go_first_and_alone_until_they_succeed() -> None:
    mandatory = {"mandatoryDecisionGroups": [{"groupName": "group1"}], "maxConcurrency": 1}
    result = run("Progressive", TWO_GROUPS, [], **mandatory)
    assert names(result.to_rollout) == ["c1", "c2", "c3"]  # the whole group, whatever the size
    statuses = [status("c1", S, 10), status("c2", S, 10), status("c3", P, 10)]
    result = run("Progressive", TWO_GROUPS, statuses, **mandatory)
    assert names(result.to_rollout) == ["c3"]
    statuses[2] = status("c3", S, 5)
    result = run("Progressive", TWO_GROUPS, statuses, **mandatory)
    assert names(result.to_rollout) == ["c4"]  # then the others, one at a time


def test_a_failing_mandatory_group_holds_the_rollout() -> None:
    statuses = [status("c1", F, 10), status("c2", S, 10), status("c3", S, 10)]
    result = run(
        "Progressive",
        TWO_GROUPS,
        statuses,
        mandatoryDecisionGroups=[{"groupIndex": 0}],
        maxFailures="100%",
    )
    assert result.max_failure_breach  # mandatory groups tolerate no failure
    assert names(result.to_rollout) == ["c1"]


# --- ProgressivePerGroup --------------------------------------------------------------------


def test_per_group_rolls_out_one_decision_group_at_a_time() -> None:
    result = run("ProgressivePerGroup", THREE_GROUPS, [])
    assert names(result.to_rollout) == ["c1", "c2", "c3"]
    done = [status(c, S, 10) for c in ("c1", "c2", "c3")]
    result = run("ProgressivePerGroup", THREE_GROUPS, done)
    assert names(result.to_rollout) == ["c4", "c5", "c6"]
    assert all(s.group == G1 for s in result.to_rollout)


def test_per_group_moves_on_past_failures_within_max_failures() -> None:
    statuses = [status("c1", S, 60), status("c2", F, 120), status("c3", S, 60)]
    result = run(
        "ProgressivePerGroup", THREE_GROUPS, statuses, progressDeadline="90s", maxFailures=2
    )
    # sdk-go's "first group timeOut, maxFailures 2".
    assert names(result.to_rollout) == ["c4", "c5", "c6"]
    assert names(result.timed_out) == ["c2"]
    assert not result.max_failure_breach


def test_per_group_max_failures_percent_is_per_group() -> None:
    statuses = [status("c1", F, 10), status("c2", F, 10), status("c3", S, 10)]
    result = run("ProgressivePerGroup", THREE_GROUPS, statuses, maxFailures="30%")
    assert result.max_failure_breach  # 30% of 3 rounds up to 1; two failed
    assert names(result.to_rollout) == ["c1", "c2"]
    result = run("ProgressivePerGroup", THREE_GROUPS, statuses, maxFailures="70%")
    assert not result.max_failure_breach  # 70% of 3 rounds up to 3; two failed
    assert names(result.to_rollout) == ["c1", "c2", "c4", "c5", "c6"]


def test_per_group_mandatory_group_by_index_first() -> None:
    result = run(
        "ProgressivePerGroup", THREE_GROUPS, [], mandatoryDecisionGroups=[{"groupIndex": 2}]
    )
    assert names(result.to_rollout) == ["c7", "c8", "c9"]
    done = [status(c, S, 10) for c in ("c7", "c8", "c9")]
    result = run(
        "ProgressivePerGroup", THREE_GROUPS, done, mandatoryDecisionGroups=[{"groupIndex": 2}]
    )
    assert names(result.to_rollout) == ["c1", "c2", "c3"]


# --- thresholds and durations ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("threshold", "total", "default", "expected"),
    [
        pytest.param(3, 10, 0, 3, id="number"),
        pytest.param("25%", 10, 0, 3, id="percent-rounds-up"),
        pytest.param("0%", 10, 7, 7, id="zero-percent-default"),
        pytest.param(11, 10, 7, 7, id="above-total-default"),
        pytest.param(None, 10, 10, 10, id="unset-default"),
        pytest.param("100%", 10, 0, 10, id="all"),
    ],
)
def test_rollout_size(threshold: Any, total: int, default: int, expected: int) -> None:
    assert rollout_size(threshold, total, default) == expected


def test_a_threshold_that_is_no_percentage_is_an_error_naming_it() -> None:
    with pytest.raises(RolloutError, match="'ten' is an invalid maximum threshold value"):
        rollout_size("ten", 10, 0)
    bad = RolloutStrategy.model_construct(type="Progressive", progressive=None)
    bad_progressive = strategy("Progressive").progressive
    assert bad_progressive is not None
    bad = bad.model_copy(
        update={"progressive": bad_progressive.model_copy(update={"max_concurrency": "x"})}
    )
    with pytest.raises(RolloutError, match="failed to parse the provided maxConcurrency"):
        rollout(bad, TWO_GROUPS, [], NOW)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("90s", 90, id="seconds"),
        pytest.param("10m30s", 630, id="compound"),
        pytest.param("1.5h", 5400, id="fraction"),
        pytest.param("0", 0, id="zero"),
        pytest.param("500ms", 0.5, id="millis"),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "5", "1d", "5m foo", "m"])
def test_bad_go_durations_are_errors(text: str) -> None:
    with pytest.raises(RolloutError, match="invalid duration"):
        parse_go_duration(text)


def test_a_progress_deadline_the_pattern_refuses_is_an_error() -> None:
    bad = strategy("All").model_copy(update={"all": strategy("All", progressDeadline="90s").all})
    assert bad.all is not None
    bad = bad.model_copy(update={"all": bad.all.model_copy(update={"progress_deadline": "soon"})})
    with pytest.raises(RolloutError, match="invalid timeout format"):
        rollout(bad, TWO_GROUPS, [], NOW)
