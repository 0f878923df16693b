"""OCM's debug API through aiohttp's client: a stored placement explained, a posted one
dry-run, the error codes and JSON errors, a failing callback; and where the controller serves
it: only on a listener of its own (`debug_addr`), never beside the metrics."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from controllers.cli.main import EXIT_USAGE, build_parser
from controllers.hub.debug import DebugRoutes, DryRun, Explain
from controllers.runtime.controller import StartError
from controllers.runtime.http import MAX_BODY_BYTES
from tests.controllers.hub.controller_hub import hub
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


# --- where the controller serves it --------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_controller_serves_no_debug_api_unless_given_a_debug_address() -> None:
    async with hub() as h:
        manager = await h.manager(http_addr="127.0.0.1:0")
        assert manager.debug_http is None and manager.debug_address == ""
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://{manager.http_address}/debug/placements/a/b") as response,
        ):
            assert response.status == 404


@pytest.mark.asyncio
async def test_the_debug_listener_closes_with_the_controller() -> None:
    async with hub() as h:
        manager = await h.manager(debug_addr="127.0.0.1:0")
        address = manager.debug_address
        assert address.startswith("127.0.0.1:")
        await h.stop(manager)
    with pytest.raises(aiohttp.ClientConnectionError):
        async with aiohttp.ClientSession() as session, session.get(f"http://{address}/"):
            pass


@pytest.mark.asyncio
async def test_a_debug_address_in_use_fails_start_up_in_one_line_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with hub() as h:
            with pytest.raises(
                StartError, match=f"^debug endpoint 127.0.0.1:{port}: cannot listen: "
            ):
                await h.manager(debug_addr=f"127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param([], "127.0.0.1:8081", id="default-loopback"),
        pytest.param(["--debug-addr", "127.0.0.1:9000"], "127.0.0.1:9000", id="another-port"),
        pytest.param(["--debug-addr", ""], "", id="off"),
    ],
)
def test_placement_run_keeps_the_debug_api_on_loopback_unless_told(
    argv: list[str], expected: str
) -> None:
    args = build_parser().parse_args(["run", *argv])
    assert args.debug_addr == expected
    assert args.http_addr == "127.0.0.1:8080"


def test_a_bad_debug_address_is_a_usage_error_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["run", "--debug-addr", "8081"])
    assert exit_info.value.code == EXIT_USAGE
    assert "argument --debug-addr: invalid listen address '8081'" in capsys.readouterr().err
