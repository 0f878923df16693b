"""Writes over the gateway's keep-alive connections (`controllers.kube.lean`): the same answers
and errors as through aiohttp, connections reused only when clean, nothing left half-read."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from apis.cluster import ManagedCluster
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.kube.errors import AlreadyExistsError, NotFoundError, TransportError
from controllers.kube.gateway import Gateway
from controllers.kube.lean import LeanError, LeanPool
from tests.controllers.embedded.hub import cluster

pytestmark = pytest.mark.asyncio

Reply = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _gateway(url: str) -> Gateway:
    return Gateway(await new_api_client(ClusterAccess(url=url)))


@contextlib.asynccontextmanager
async def raw_server(reply: Reply) -> AsyncIterator[tuple[str, list[int]]]:
    """A bare HTTP server answering each request with `reply`; yields its URL and the number
    of requests each connection carried."""
    carried: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        carried.append(0)
        index = len(carried) - 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                carried[index] += 1
                await reply(reader, writer)
                if writer.is_closing():
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", carried
    finally:
        server.close()


async def test_writes_go_over_one_kept_connection_with_the_servers_answers() -> None:
    async with EmbeddedApiServer() as server:
        gateway = await _gateway(server.url)
        async with gateway:
            assert gateway._lean is not None
            for name in ("c1", "c2", "c3"):
                created = await gateway.create(cluster(name))
                assert created.name == name and created.metadata.uid
            assert len(gateway._lean._idle) == 1  # one connection carried the three
            with pytest.raises(AlreadyExistsError):
                await gateway.create(cluster("c1"))
            with pytest.raises(NotFoundError):
                await gateway.delete(ManagedCluster, "nope")
            assert len(gateway._lean._idle) == 1  # error answers leave it clean too
            assert {c.name for c in (await gateway.list(ManagedCluster)).items} == {
                "c1",
                "c2",
                "c3",
            }


async def test_a_chunked_answer_is_read_whole_and_the_connection_kept() -> None:
    async def chunked(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
            b'5\r\n{"a":\r\n3\r\n 1}\r\n0\r\n\r\n'
        )
        await writer.drain()

    async with raw_server(chunked) as (url, carried):
        pool = LeanPool.for_client(await new_api_client(ClusterAccess(url=url)))
        assert pool is not None
        for _ in range(2):
            answer = await pool.request("POST", "/x", {}, b"{}", 5.0)
            assert (answer.status, await answer.read()) == (201, b'{"a": 1}')
            assert answer.content_type == "application/json"
        assert carried == [2]
        await pool.close()


async def test_connection_close_and_a_cut_answer_are_not_reused() -> None:
    replies = iter(
        [
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",  # cut short
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}",
        ]
    )

    async def reply(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = next(replies)
        writer.write(data)
        await writer.drain()
        if b"close" in data or b"10" in data:
            writer.close()

    async with raw_server(reply) as (url, carried):
        pool = LeanPool.for_client(await new_api_client(ClusterAccess(url=url)))
        assert pool is not None
        assert (await pool.request("POST", "/x", {}, b"{}", 5.0)).status == 200
        assert not pool._idle
        with pytest.raises(LeanError):
            await pool.request("POST", "/x", {}, b"{}", 5.0)
        assert not pool._idle
        answer = await pool.request("PATCH", "/x", {}, b"{}", 5.0)
        assert (answer.status, answer.headers["retry-after"]) == (429, "3")
        assert carried == [1, 1, 1]
        await pool.close()


async def test_a_cancelled_or_timed_out_write_closes_its_connection() -> None:
    async def silent(_: asyncio.StreamReader, __: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)

    async with raw_server(silent) as (url, carried):
        gateway = await _gateway(url)
        async with gateway:
            assert gateway._lean is not None
            gateway.request_timeout = 0.2
            with pytest.raises(TransportError):
                await gateway._send("POST", "/api/v1/namespaces", b"{}")
            gateway.request_timeout = 30.0
            task = asyncio.create_task(gateway._send("POST", "/api/v1/namespaces", b"{}"))
            await asyncio.sleep(0.2)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            assert not gateway._lean._idle
            assert carried == [1, 1]


async def test_a_client_behind_a_proxy_keeps_aiohttp(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    gateway = await _gateway("http://hub.example:8080")
    async with gateway:
        assert gateway._lean is None
    monkeypatch.delenv("HTTP_PROXY")
    gateway = await _gateway("http://hub.example:8080")
    async with gateway:
        assert gateway._lean is not None
        assert gateway._lean.authority == "hub.example:8080"


async def test_a_header_with_a_line_break_is_refused_before_sending() -> None:
    pool = LeanPool("127.0.0.1", 9)
    with pytest.raises(LeanError, match="line break"):
        await pool.request("POST", "/x", {"X-Evil": "a\r\nInjected: 1"}, b"{}", 1.0)
