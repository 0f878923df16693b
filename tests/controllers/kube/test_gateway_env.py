"""The gateway reads the proxy variables once, when it is created, and never per request."""

from __future__ import annotations

import base64
from typing import Any

import aiohttp
import pytest

from apis.cluster import ManagedCluster
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.kube.gateway import Gateway
from tests.controllers.embedded.hub import cluster

pytestmark = pytest.mark.asyncio

HUB = "https://hub.example:6443"
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


async def connected(url: str) -> tuple[Gateway, Any, aiohttp.ClientSession]:
    api_client = await new_api_client(ClusterAccess(url=url))
    gateway = Gateway(api_client)
    rest = api_client.rest_client
    return gateway, rest, rest.pool_manager


async def test_the_proxy_of_the_hub_is_taken_from_the_environment_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://someone:secret@proxy.example:3128")
    gateway, rest, session = await connected(HUB)
    async with gateway:
        assert rest.proxy == "http://proxy.example:3128"
        credentials = base64.b64encode(b"someone:secret").decode()
        assert rest.proxy_headers == {"Proxy-Authorization": f"Basic {credentials}"}
        assert not session.trust_env


async def test_a_hub_listed_in_no_proxy_is_reached_directly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "hub.example")
    gateway, rest, session = await connected(HUB)
    async with gateway:
        assert not rest.proxy
        assert not session.trust_env


async def test_requests_work_without_reading_the_environment_per_request() -> None:
    async with EmbeddedApiServer() as server:
        gateway, _, session = await connected(server.url)
        async with gateway:
            await gateway.create(cluster("c1"))
            assert (await gateway.get(ManagedCluster, "c1")).name == "c1"
            assert not session.trust_env
