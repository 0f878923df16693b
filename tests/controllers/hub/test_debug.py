"""OCM's debug API on the HTTP endpoint through aiohttp's client: a stored placement
explained, a posted one dry-run, the error codes and JSON errors, and a failing callback."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from controllers.hub.debug import DebugRoutes, DryRun, Explain
from controllers.runtime.http import MAX_BODY_BYTES
from tests.controllers.runtime.test_http import Served
from tests.controllers.runtime.test_http import serving as serving_routes

EXPLAINED = {"placement": {"metadata": {"name": "web", "namespace": "apps"}}, "error": ""}


def explain_web(namespace: str, name: str) -> dict[str, Any] | None:
    return EXPLAINED if (namespace, name) == ("apps", "web") else None


def dry_run_echo(doc: dict[str, Any]) -> dict[str, Any]:
    spec = doc.get("spec", {})
    if not isinstance(spec, dict) or not isinstance(spec.get("numberOfClusters", 0), int):
        raise ValueError("spec.numberOfClusters: must be an integer")
    return {"placement": doc, "aggregatedScores": []}


@asynccontextmanager
async def serving(
    *, explain: Explain = explain_web, dry_run: DryRun | None = dry_run_echo
) -> AsyncIterator[Served]:
    """A server on a free port serving the debug routes answered by `explain` and `dry_run`."""
    async with serving_routes(routes=[DebugRoutes(explain, dry_run)]) as served:
        yield served


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
