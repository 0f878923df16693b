"""A running embedded API server plus a gateway connected to it over HTTP, for tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar, overload

from apis.cluster import ManagedCluster
from apis.core import Pod
from apis.meta import KubeObject
from apis.placements import Placement
from apis.registry import parse_as, parse_object
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway

T = TypeVar("T")
WAIT = 5.0  # every wait in these tests is bounded by this many seconds


@asynccontextmanager
async def hub(**options: Any) -> AsyncIterator[tuple[EmbeddedApiServer, Gateway]]:
    """Start a server on a free port and a gateway to it; stop both afterwards."""
    server = EmbeddedApiServer(**options)
    await server.start()
    gateway = await Gateway.connect(ClusterAccess(url=server.url), backoff=0.01)
    try:
        yield server, gateway
    finally:
        await gateway.close()
        await server.stop()


def obj(doc: dict[str, Any]) -> KubeObject:
    return parse_object(doc)


def placement(
    name: str, namespace: str = "default", spec: dict[str, Any] | None = None
) -> Placement:
    return parse_as(
        Placement,
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec or {},
        },
    )


def cluster(name: str, labels: dict[str, str] | None = None, **extra: Any) -> ManagedCluster:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    meta.update(extra)
    return parse_as(
        ManagedCluster,
        {
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": meta,
            "spec": {"hubAcceptsClient": True},
        },
    )


def pod(name: str, namespace: str = "default", **spec: Any) -> Pod:
    return parse_as(
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main"}], **spec},
        },
    )


@overload
async def eventually(check: Callable[[], Awaitable[T]], timeout: float = WAIT) -> T: ...


@overload
async def eventually(check: Callable[[], T], timeout: float = WAIT) -> T: ...


async def eventually(check: Callable[[], Any], timeout: float = WAIT) -> Any:
    """Poll `check` until it returns a truthy value (bounded), and return that value."""
    async with asyncio.timeout(timeout):
        while True:
            result = check()
            if asyncio.iscoroutine(result) or isinstance(result, Awaitable):
                result = await result
            if result:
                return result
            await asyncio.sleep(0.01)
