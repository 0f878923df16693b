"""The creating client of the end to end scheduler_perf runs (`perf.child_kube`), as cheap as
scheduler_perf's own: kube's `createPodsOp` hands the pods to test/utils' pod creator, which
POSTs them from a fixed number of workers (30, fewer when there are fewer pods) through a
client whose rate limit (5,000 QPS, burst 5,000) never throttles, and reads nothing back but
the error.

Here: `encode` turns the objects into their POST requests (the collection's path, the JSON
bytes the gateway would send) before the clock starts; `post_all` sends them from `WORKERS`
coroutines, each on its own kept-alive HTTP/1.1 connection (a bare asyncio protocol: an HTTP
client library costs three times the CPU per request), each answer checked for 201 Created and
read off the connection but never parsed into a model. What is created is the same as
through `PodGateway.create` (`tests.controllers.addons.cluster.create_all`); only the client's
cost differs.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple
from urllib.parse import urlsplit

__all__ = ["WORKERS", "CreateError", "Request", "encode", "post_all"]

WORKERS = 30
"""Requests in flight at once: test/utils' pod creator runs 30 workers."""

_HEADERS = "Content-Type: application/json\r\nAccept: application/json\r\n"


class CreateError(RuntimeError):
    """The server refused a create (any answer but 201), or the connection failed."""


class Request(NamedTuple):
    """One create: the collection's path (`/api/v1/namespaces/ns/pods`) and the JSON body."""

    path: str
    body: bytes


def encode(objects: Iterable[Any]) -> list[Request]:
    """The POST of each object, in order, as the gateway's `create` would send it."""
    from controllers.kube.gateway import collection_path

    return [
        Request(
            collection_path(type(obj), obj.namespace or None),
            json.dumps(obj.to_wire()).encode(),
        )
        for obj in objects
    ]


class _Connection(asyncio.Protocol):
    """One kept-alive HTTP/1.1 connection with one request in flight: `send` writes it and
    waits for the answer's status and body (the server gives every answer a Content-Length)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.waiter is None or self.waiter.done():
            return
        try:
            answer = _answer(self.buffer)
        except CreateError as exc:
            self.waiter.set_exception(exc)
            return
        if answer is not None:
            status, body, size = answer
            del self.buffer[:size]
            self.waiter.set_result((status, body))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(CreateError(f"connection lost: {exc or 'closed'}"))

    async def send(self, request: bytes) -> tuple[int, bytes]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self.waiter


_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)")
_CHUNKED = re.compile(rb"\r\ntransfer-encoding:\s*chunked")


def _answer(buffer: bytearray) -> tuple[int, bytes, int] | None:
    """The first whole answer in `buffer`: status, body and its size in the buffer; None while
    it is incomplete. A body comes with a Content-Length (the embedded server) or in chunks
    (kube-apiserver, for answers past Go's 2 KiB buffer)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buffer[:end]).lower()
    status = int(head[9:12])
    found = _LENGTH.search(head)
    if found is not None:
        size = end + 4 + int(found.group(1))
        return None if len(buffer) < size else (status, bytes(buffer[end + 4 : size]), size)
    if not _CHUNKED.search(head):
        raise CreateError(f"an answer without a length: {head[:200]!r}")
    body, at = bytearray(), end + 4
    while True:
        line = buffer.find(b"\r\n", at)
        if line < 0:
            return None
        chunk = int(bytes(buffer[at:line]).split(b";", 1)[0], 16)
        if chunk == 0:
            tail = buffer.find(b"\r\n\r\n", line)  # no trailers are sent: the blank line
            return None if tail < 0 else (status, bytes(body), tail + 4)
        start = line + 2
        if len(buffer) < start + chunk + 2:
            return None
        body += buffer[start : start + chunk]
        at = start + chunk + 2


async def post_all(
    url: str,
    requests: Sequence[Request],
    workers: int = WORKERS,
    *,
    tls: ssl.SSLContext | None = None,
    token: str | None = None,
) -> int:
    """POST every request to the server at `url` (http://host:port, or https:// with `tls`),
    `workers` at a time, each worker on its own kept-alive connection taking the next request
    as soon as its last one is answered; the number created. `token`: a bearer token. Raises
    `CreateError` on the first answer that is not 201 Created (the others stop) or a connection
    that fails."""
    if not requests:
        return 0
    where = urlsplit(url)
    host = where.hostname or "127.0.0.1"
    port = where.port or (443 if where.scheme == "https" else 80)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = f"Host: {where.netloc}\r\n{auth}{_HEADERS}".encode()
    pending = iter(requests)
    created = 0
    loop = asyncio.get_running_loop()

    async def worker() -> None:
        nonlocal created
        try:
            transport, connection = await loop.create_connection(
                _Connection, host, port, ssl=tls, server_hostname=host if tls else None
            )
        except OSError as exc:
            raise CreateError(f"connect {url}: {exc}") from exc
        try:
            for request in pending:  # one iterator shared: no request is sent twice
                line = b"POST " + request.path.encode() + b" HTTP/1.1\r\n"
                length = b"Content-Length: %d\r\n\r\n" % len(request.body)
                status, answer = await connection.send(line + head + length + request.body)
                if status != 201:
                    text = answer[:300].decode(errors="replace")
                    raise CreateError(f"POST {request.path}: {status} {text}")
                created += 1
        finally:
            transport.close()

    tasks = [asyncio.create_task(worker()) for _ in range(max(1, min(workers, len(requests))))]
    try:
        await asyncio.gather(*tasks)
    finally:  # the first failure stops the other workers
        for task in tasks:
            task.cancel()
    return created
