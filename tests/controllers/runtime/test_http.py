"""The HTTP endpoint through aiohttp's client: probes, metrics with OCM's names, the debug API
with its error codes, a failing callback, and listen addresses."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from controllers.runtime.http import MAX_BODY_BYTES, DryRun, Explain, HttpServer, parse_address
from controllers.runtime.metrics import BUCKETS, SCHEDULING_NAME, Metrics

EXPLAINED = {"placement": {"metadata": {"name": "web", "namespace": "apps"}}, "error": ""}


def explain_web(namespace: str, name: str) -> dict[str, Any] | None:
    return EXPLAINED if (namespace, name) == ("apps", "web") else None


def dry_run_echo(doc: dict[str, Any]) -> dict[str, Any]:
    spec = doc.get("spec", {})
    if not isinstance(spec, dict) or not isinstance(spec.get("numberOfClusters", 0), int):
        raise ValueError("spec.numberOfClusters: must be an integer")
    return {"placement": doc, "aggregatedScores": []}


class Served:
    """A started server, a client session to it, and what its readiness callback answers."""

    def __init__(self, server: HttpServer, session: aiohttp.ClientSession, base: str) -> None:
        self.server = server
        self.session = session
        self.base = base
        self.readiness: tuple[bool, str] | Exception = (True, "leader")

    def ready(self) -> tuple[bool, str]:
        if isinstance(self.readiness, Exception):
            raise self.readiness
        return self.readiness

    async def get(self, path: str) -> tuple[int, str, str]:
        async with self.session.get(self.base + path) as response:
            return response.status, response.headers["Content-Type"], await response.text()

    async def call(self, method: str, path: str, body: bytes = b"") -> tuple[int, Any]:
        async with self.session.request(method, self.base + path, data=body) as response:
            text = await response.text()
            return response.status, json.loads(text) if text else None


@asynccontextmanager
async def serving(
    *,
    metrics: Metrics | None = None,
    explain: Explain = explain_web,
    dry_run: DryRun | None = dry_run_echo,
) -> AsyncIterator[Served]:
    holder: list[Served] = []
    server = HttpServer(
        address="127.0.0.1:0",
        metrics=metrics or Metrics(),
        ready=lambda: holder[0].ready(),
        explain=explain,
        dry_run=dry_run,
    )
    bound = await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            holder.append(Served(server, session, f"http://{bound}"))
            yield holder[0]
    finally:
        await server.stop()


# --- probes and metrics --------------------------------------------------------------------


@pytest.mark.asyncio
async def test_healthz_answers_ok_on_a_picked_free_port() -> None:
    async with serving() as served:
        status, _, text = await served.get("/healthz")
        port = served.server.port
    assert (status, text) == (200, "ok")
    assert port != 0


@pytest.mark.asyncio
async def test_readyz_reports_the_detail_and_503_while_not_ready() -> None:
    async with serving() as served:
        leader = await served.get("/readyz")
        served.readiness = (True, "standby")
        standby = await served.get("/readyz")
        served.readiness = (False, "caches not synced")
        syncing = await served.get("/readyz")
    assert (leader[0], leader[2]) == (200, "ok (leader)")
    assert (standby[0], standby[2]) == (200, "ok (standby)")
    assert (syncing[0], syncing[2]) == (503, "not ready (caches not synced)")


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


# --- the debug API -------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_debug_get_explains_a_stored_placement() -> None:
    async with serving() as served:
        status, doc = await served.call("GET", "/debug/placements/apps/web")
    assert (status, doc) == (200, EXPLAINED)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        pytest.param("/debug/placements/apps/gone", 404, "'apps/gone' not found", id="missing"),
        pytest.param("/debug/placements/apps", 400, "namespace and name", id="no-name"),
        pytest.param("/debug/placements/", 400, "namespace and name", id="no-key"),
        pytest.param("/debug/placements/a/b/c", 400, "namespace and name", id="too-deep"),
    ],
)
async def test_debug_get_errors_are_json(path: str, status: int, message: str) -> None:
    async with serving() as served:
        answer = await served.call("GET", path)
    assert answer[0] == status
    assert message in answer[1]["error"]


@pytest.mark.asyncio
async def test_debug_post_dry_runs_a_posted_placement() -> None:
    placement = {"metadata": {"name": "p", "namespace": "apps"}, "spec": {"numberOfClusters": 2}}
    async with serving() as served:
        status, doc = await served.call(
            "POST", "/debug/placements/", json.dumps(placement).encode()
        )
    assert status == 200
    assert doc == {"placement": placement, "aggregatedScores": []}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"{not json", "failed to parse", id="not-json"),
        pytest.param(b"[1, 2]", "must be a JSON object", id="not-an-object"),
        pytest.param(b'{"spec": {"numberOfClusters": "two"}}', "spec.numberOfClusters", id="bad"),
        pytest.param(b"", "failed to parse", id="empty"),
    ],
)
async def test_debug_post_rejects_a_bad_body_with_its_reason(body: bytes, message: str) -> None:
    async with serving() as served:
        status, doc = await served.call("POST", "/debug/placements/", body)
    assert status == 400
    assert message in doc["error"]


@pytest.mark.asyncio
async def test_debug_post_takes_a_body_of_one_mebibyte_and_refuses_a_byte_more() -> None:
    placement = json.dumps({"spec": {}}).encode()
    exact = placement + b" " * (MAX_BODY_BYTES - len(placement))
    async with serving() as served:
        fits = await served.call("POST", "/debug/placements/", exact)
        too_large = await served.call("POST", "/debug/placements/", exact + b" ")
    assert fits[0] == 200
    assert too_large[0] == 413
    assert "too large" in too_large[1]["error"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        pytest.param("DELETE", "/debug/placements/apps/web", "GET", id="delete-a-placement"),
        pytest.param("POST", "/debug/placements/apps/web", "GET", id="post-to-a-placement"),
        pytest.param("PUT", "/debug/placements/", "POST", id="put-to-the-collection"),
    ],
)
async def test_other_methods_on_debug_are_405(method: str, path: str, allowed: str) -> None:
    async with (
        serving() as served,
        served.session.request(method, served.base + path) as response,
    ):
        status, allow, doc = response.status, response.headers.get("Allow"), await response.json()
    assert (status, allow) == (405, allowed)
    assert f"only {allowed}" in doc["error"]


@pytest.mark.asyncio
async def test_posting_without_a_dry_run_callback_is_405() -> None:
    async with serving(dry_run=None) as served:
        status, doc = await served.call("POST", "/debug/placements/", b"{}")
    assert status == 405
    assert "not enabled" in doc["error"]


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/", "/nope", "/debug/other", "/healthz/extra"])
async def test_unknown_paths_are_404(path: str) -> None:
    async with serving() as served:
        status, _, _ = await served.get(path)
    assert status == 404


@pytest.mark.asyncio
async def test_a_failing_callback_is_a_logged_500_and_the_server_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(namespace: str, name: str) -> dict[str, Any] | None:
        raise RuntimeError(f"cache of {namespace} exploded")

    async with serving(explain=broken) as served:
        with caplog.at_level(logging.ERROR, logger="controllers.runtime.http"):
            failed = await served.call("GET", "/debug/placements/apps/web")
        served.readiness = RuntimeError("informers gone")
        probe = await served.get("/readyz")
        health = await served.get("/healthz")
    assert failed == (500, {"error": "internal error: cache of apps exploded"})
    assert any("GET /debug/placements/apps/web failed" in r.message for r in caplog.records)
    assert (probe[0], probe[2]) == (500, "internal error: informers gone")
    assert (health[0], health[2]) == (200, "ok")


# --- listen addresses ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        pytest.param("127.0.0.1:8080", ("127.0.0.1", 8080), id="ipv4"),
        pytest.param(":8080", (None, 8080), id="all-interfaces"),
        pytest.param("[::1]:9443", ("::1", 9443), id="ipv6"),
        pytest.param("localhost:0", ("localhost", 0), id="hostname-any-port"),
    ],
)
def test_listen_addresses_parse(address: str, expected: tuple[str | None, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize(
    "address",
    [
        pytest.param("8080", id="no-colon"),
        pytest.param("::1:8080", id="ipv6-without-brackets"),
        pytest.param("[nonsense]:80", id="bad-ipv6"),
        pytest.param("host:http", id="named-port"),
        pytest.param("host:65536", id="port-too-large"),
        pytest.param("bad host:80", id="space-in-host"),
    ],
)
def test_bad_listen_addresses_are_rejected_naming_them(address: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid listen address {address!r}")):
        HttpServer(
            address=address, metrics=Metrics(), ready=lambda: (True, ""), explain=explain_web
        )


@pytest.mark.asyncio
async def test_an_ipv6_listener_reports_its_bracketed_address() -> None:
    server = HttpServer(
        address="[::1]:0", metrics=Metrics(), ready=lambda: (True, ""), explain=explain_web
    )
    try:
        bound = await server.start()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        async with aiohttp.ClientSession() as session, session.get(f"http://{bound}/healthz") as r:
            status = r.status
    finally:
        await server.stop()
    assert bound.startswith("[::1]:")
    assert status == 200
