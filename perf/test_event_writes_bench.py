"""Writes per placement and events as client-go's broadcaster sends them (issue 31), measured on
the embedded hub by `perf.event_writes`: the counts are the figures (in `extra_info`, and checked
here since they are exact); the time of a run is incidental.
Run: `pytest perf/test_event_writes_bench.py --benchmark-enable`.
"""

from __future__ import annotations

from typing import Any

from pytest_benchmark.fixture import BenchmarkFixture

from perf.event_writes import measure

NON_EVENT = {"Placement MODIFIED": 1, "PlacementDecision ADDED": 1, "PlacementDecision MODIFIED": 1}


def once(benchmark: BenchmarkFixture, name: str) -> dict[str, Any]:
    result: dict[str, Any] = benchmark.pedantic(measure, args=(name,), rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    return result


def test_a_new_placement_is_three_writes_and_ocms_three_events(
    benchmark: BenchmarkFixture,
) -> None:
    new = once(benchmark, "new")["new_placement"]
    # PD create, PD status (a CRD with a status subresource drops status on create), status.
    assert new["writes"] == NON_EVENT
    # DecisionCreate, DecisionUpdate, ScoreUpdate: three keys, so three Events.
    assert new["events"] == {"Event ADDED": 3}


def test_a_wide_placement_is_a_create_and_a_status_per_pd_and_three_events_per_pd(
    benchmark: BenchmarkFixture,
) -> None:
    new = once(benchmark, "wide")["new_placement"]
    assert new["writes"] == {
        "Placement MODIFIED": 1,
        "PlacementDecision ADDED": 50,
        "PlacementDecision MODIFIED": 50,
    }
    # Each PD is the `related` object of its events: 50 keys per reason, no series.
    assert new["events"] == {"Event ADDED": 150}


def test_a_placement_re_decided_twenty_times_records_two_events_each_time(
    benchmark: BenchmarkFixture,
) -> None:
    again = once(benchmark, "re_decided")["re_decided"]
    assert again["writes"] == {"PlacementDecision MODIFIED": 20}
    # The PD's resourceVersion is new each time (its status was patched), so each
    # DecisionUpdate and ScoreUpdate is a new key for client-go: no series.
    assert again["events"] == {"Event ADDED": 40}


def test_a_pod_failing_twenty_times_unchanged_is_one_event_and_one_series_patch(
    benchmark: BenchmarkFixture,
) -> None:
    result = once(benchmark, "pod_retries")["pod_retries"]
    assert result["events"] == {"Event ADDED": 1, "Event MODIFIED": 1}
