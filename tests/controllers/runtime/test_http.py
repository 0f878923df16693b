"""The HTTP endpoint through aiohttp's client: probes, unknown paths and listen addresses.
The hub's metrics and debug routes on it are tested in `tests/controllers/hub/`."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import aiohttp.web
import pytest

from controllers.runtime.http import HttpServer, Routes, parse_address
from controllers.runtime.metrics import Exposition, MetricsRegistry


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
    metrics: Exposition | None = None,
    routes: Sequence[Routes] = (),
) -> AsyncIterator[Served]:
    """A server on a free port of 127.0.0.1 serving `metrics` and `routes`."""
    holder: list[Served] = []
    server = HttpServer(
        address="127.0.0.1:0",
        metrics=metrics or MetricsRegistry(),
        ready=lambda: holder[0].ready(),
        routes=routes,
    )
    bound = await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            holder.append(Served(server, session, f"http://{bound}"))
            yield holder[0]
    finally:
        await server.stop()


# --- probes -----------------------------------------------------------------------------


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


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/", "/nope", "/debug/other", "/healthz/extra"])
async def test_unknown_paths_are_404(path: str) -> None:
    async with serving() as served:
        status, _, _ = await served.get(path)
    assert status == 404


class Private:
    """Routes for a listener of their own: `/private/`."""

    prefix = "/private"

    def add_to(self, router: aiohttp.web.UrlDispatcher) -> None:
        async def answer(_: aiohttp.web.Request) -> aiohttp.web.Response:
            return aiohttp.web.json_response({"private": True})

        router.add_get("/private/", answer)


@pytest.mark.asyncio
async def test_a_server_given_only_routes_serves_no_probes_and_no_metrics() -> None:
    server = HttpServer(address="127.0.0.1:0", routes=[Private()], name="private endpoint")
    bound = await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            statuses = {}
            for path in ("/private/", "/metrics", "/healthz", "/readyz"):
                async with session.get(f"http://{bound}{path}") as response:
                    statuses[path] = response.status
    finally:
        await server.stop()
    assert statuses == {"/private/": 200, "/metrics": 404, "/healthz": 404, "/readyz": 404}


@pytest.mark.asyncio
async def test_routes_given_to_another_server_are_not_served_beside_the_metrics() -> None:
    async with serving(metrics=MetricsRegistry()) as served:
        assert (await served.get("/metrics"))[0] == 200
        assert (await served.get("/private/"))[0] == 404


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
        HttpServer(address=address, metrics=MetricsRegistry(), ready=lambda: (True, ""))


@pytest.mark.asyncio
async def test_an_ipv6_listener_reports_its_bracketed_address() -> None:
    server = HttpServer(address="[::1]:0", metrics=MetricsRegistry(), ready=lambda: (True, ""))
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
