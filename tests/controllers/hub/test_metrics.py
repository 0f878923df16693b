"""The hub's metrics on the HTTP endpoint: OCM's names, labels and buckets, our own counters,
and one registry per controller."""

from __future__ import annotations

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from controllers.hub.metrics import BUCKETS, SCHEDULING_NAME, Metrics
from tests.controllers.runtime.test_http import serving


def scrape(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a Prometheus text page by (name, labels)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def at(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


@pytest.mark.asyncio
async def test_metrics_expose_ocm_names_and_buckets_and_our_counters() -> None:
    metrics = Metrics()
    metrics.scheduling_duration.labels(name=SCHEDULING_NAME).observe(0.003)
    metrics.plugin_duration.labels(
        name=SCHEDULING_NAME, plugin_type="filter", plugin_name="Predicate"
    ).observe(2e-5)
    metrics.reconciles.labels(result="success").inc()
    metrics.writes.labels(kind="PlacementDecision", verb="create").inc(2)
    metrics.events.labels(reason="DecisionCreate", outcome="created").inc()
    metrics.leader.set(1)
    async with serving(metrics=metrics) as served:
        status, content_type, text = await served.get("/metrics")
    samples = scrape(text)
    names = {name for name, _ in samples}
    scheduling = "scheduling_scheduling_duration_seconds_bucket"
    les = sorted(float(dict(labels)["le"]) for name, labels in samples if name == scheduling)
    assert status == 200
    assert content_type == CONTENT_TYPE_LATEST
    assert names == {
        "scheduling_scheduling_duration_seconds_bucket",
        "scheduling_scheduling_duration_seconds_count",
        "scheduling_scheduling_duration_seconds_sum",
        "scheduling_bind_duration_seconds_bucket",
        "scheduling_bind_duration_seconds_count",
        "scheduling_bind_duration_seconds_sum",
        "scheduling_plugin_duration_seconds_bucket",
        "scheduling_plugin_duration_seconds_count",
        "scheduling_plugin_duration_seconds_sum",
        "placement_queue_depth",
        "placement_reconciles_total",
        "placement_reconcile_errors_total",
        "placement_writes_total",
        "placement_events_total",
        "placement_leader",
    }
    assert les == [*map(float, BUCKETS), float("inf")]
    assert samples[(scheduling, at(name=SCHEDULING_NAME, le="0.01"))] == 1
    assert samples[(scheduling, at(name=SCHEDULING_NAME, le="0.001"))] == 0
    # Present at zero before the first bind, as OCM's series are.
    assert samples[("scheduling_bind_duration_seconds_count", at(name=SCHEDULING_NAME))] == 0
    plugin = at(name=SCHEDULING_NAME, plugin_type="filter", plugin_name="Predicate")
    assert samples[("scheduling_plugin_duration_seconds_count", plugin)] == 1
    assert samples[("placement_reconciles_total", at(result="success"))] == 1
    assert samples[("placement_reconciles_total", at(result="requeue"))] == 0
    writes = at(kind="PlacementDecision", verb="create")
    assert samples[("placement_writes_total", writes)] == 2
    assert samples[("placement_events_total", at(reason="DecisionCreate", outcome="created"))] == 1
    assert samples[("placement_leader", at())] == 1


def test_two_metrics_sets_live_side_by_side_in_one_process() -> None:
    first, second = Metrics(), Metrics()
    first.reconcile_errors.inc()
    assert b"placement_reconcile_errors_total 1.0" in first.exposition()
    assert b"placement_reconcile_errors_total 0.0" in second.exposition()
