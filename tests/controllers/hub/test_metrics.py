"""The hub's metrics on the HTTP endpoint: OCM's names, labels and buckets, our own counters,
one registry per controller, and what a running controller reports: the leader gauge with and
without leader election, its work queue and its requests to the API server."""

from __future__ import annotations

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from apis.placements import Placement
from controllers.hub.manager import CONTROLLER_NAME, Manager, ManagerOptions
from controllers.hub.metrics import BUCKETS, SCHEDULING_NAME, Metrics
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway
from controllers.runtime.leader import LeaderConfig
from tests.controllers.hub.controller_hub import hub
from tests.controllers.hub.test_controller import TWO_TEAMS, create
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
    # The runtime's series (process, workqueue, REST client) are tested with the runtime.
    runtime = ("process_", "python_", "workqueue_", "rest_client_")
    names = {name for name, _ in samples if not name.startswith(runtime)}
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


@pytest.mark.asyncio
async def test_the_leader_gauge_is_one_without_leader_election_and_zero_until_elected() -> None:
    async with await Gateway.connect(ClusterAccess(url="http://127.0.0.1:1")) as gateway:
        alone = Manager(gateway, ManagerOptions(http_addr=None))
        candidate = Manager(
            gateway,
            ManagerOptions(http_addr=None, leader=LeaderConfig(name="p", namespace="ns")),
        )
        assert b"placement_leader 1.0" in alone.metrics.exposition()
        assert b"placement_leader 0.0" in candidate.metrics.exposition()


@pytest.mark.asyncio
async def test_a_running_controller_reports_its_queue_and_its_requests_by_verb_and_code() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await manager.wait_idle()
        await manager.recorder.flush()
        samples = scrape(manager.metrics.exposition().decode())
        host = manager.gateway.host
    queue = at(name=CONTROLLER_NAME)
    placements = sum(1 for obj in TWO_TEAMS if isinstance(obj, Placement))
    assert samples[("workqueue_adds_total", queue)] >= placements
    assert samples[("workqueue_depth", queue)] == 0
    assert samples[("workqueue_work_duration_seconds_count", queue)] >= placements
    assert samples[("workqueue_unfinished_work_seconds", queue)] == 0
    requests = {
        (labels["method"], labels["code"]): value
        for (name, frozen), value in samples.items()
        if name == "rest_client_requests_total"
        for labels in [dict(frozen)]
        if labels["host"] == host
    }
    # Six informers list and watch; each placement gets a PlacementDecision (created, its
    # decisions patched), a status patch and events.
    assert requests[("GET", "200")] >= 12
    assert requests[("POST", "201")] >= 2 * placements  # decisions and events
    assert requests[("PATCH", "200")] >= 2 * placements
    assert samples[("placement_leader", at())] == 1
