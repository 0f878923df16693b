"""The bearer token goes with every request, read through the client's refresh hook each time
(a rotated service-account token is used from the next request on); without a token no
Authorization header is sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from apis.cluster import ManagedCluster
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway

pytestmark = pytest.mark.asyncio


@asynccontextmanager
async def server(seen: list[str | None]) -> AsyncIterator[str]:
    """An HTTP server answering every GET with an empty list, recording Authorization."""

    async def answer(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"items": [], "metadata": {"resourceVersion": "1"}})

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_the_token_is_sent_and_refreshed_on_every_request() -> None:
    seen: list[str | None] = []
    async with server(seen) as url:
        gateway = await Gateway.connect(ClusterAccess(url=url, token="first"))
        try:
            tokens = iter(["second", "third"])

            def rotate(configuration: Any) -> None:
                configuration.api_key["BearerToken"] = next(tokens)

            await gateway.list(ManagedCluster)
            gateway._client.configuration.refresh_api_key_hook = rotate
            await gateway.list(ManagedCluster)
            await gateway.list(ManagedCluster)
        finally:
            await gateway.close()
    assert seen == ["Bearer first", "Bearer second", "Bearer third"]


async def test_without_a_token_no_authorization_is_sent() -> None:
    seen: list[str | None] = []
    async with server(seen) as url, await Gateway.connect(ClusterAccess(url=url)) as gateway:
        await gateway.list(ManagedCluster)
    assert seen == [None]
