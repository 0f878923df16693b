"""Writes over plain keep-alive HTTP/1.1 connections, beside the client's aiohttp session.

A write's answer is small and read at once, and a scheduler sends thousands a second (a binding
and an Event per pod): aiohttp's request machinery (its URL, header, cookie, timer and tracing
objects per request) cost about three times the exchange itself, 0.3 ms of CPU per request
against 0.1 ms over a bare connection. `LeanPool` sends a write as the request line, the
headers the gateway built (the client's default headers, its credentials) and a
`Content-Length` body, and reads the status line, the headers and the body
(`Content-Length`, chunked, or up to the end of the connection) before it returns.

Connections are kept open between requests (at most `limit` at a time, as the client's own pool
holds) and a connection is used again only when the last answer left it clean: a request that
failed, timed out or was cancelled (a fenced write past the lease deadline) closes its
connection, and an idle one older than `idle_seconds` or closed by the server is not reused.
Nothing is retried: a write that failed may have been applied. TLS uses the client's own
`SSLContext` (its CA, client certificate and verification settings) and server name; a client
that goes through a proxy, or whose session is not the one kubernetes-asyncio opens, keeps
aiohttp (`LeanPool.for_client` returns None).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from multidict import CIMultiDict, CIMultiDictProxy

__all__ = ["LeanError", "LeanPool", "LeanResponse"]

_MAX_HEAD = 65_536  # bytes of status line and headers together
_MAX_BODY = 64 * 1024 * 1024


class LeanError(ConnectionError):
    """The exchange failed: no complete answer came (the caller reports a transport error)."""


class LeanResponse:
    """A complete answer, read already: what the gateway reads of aiohttp's response."""

    def __init__(self, status: int, headers: CIMultiDict[str], body: bytes) -> None:
        self.status = status
        self.headers = CIMultiDictProxy(headers)
        self.body = body

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()

    async def read(self) -> bytes:
        return self.body

    def release(self) -> None:
        """Nothing to give back: the connection went back to the pool when the body was read."""


class _Conn:
    __slots__ = ("reader", "used", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.used = reader, writer, time.monotonic()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class LeanPool:
    """Keep-alive HTTP/1.1 connections to one API server (module docstring)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        limit: int = 100,
        idle_seconds: float = 10.0,
    ) -> None:
        self.host, self.port, self.tls = host, port, tls
        self.server_hostname = server_hostname
        default_port = 443 if tls is not None else 80
        self.authority = host if port == default_port else f"{host}:{port}"
        if ":" in host and not host.startswith("["):
            self.authority = f"[{host}]" if port == default_port else f"[{host}]:{port}"
        self.idle_seconds = idle_seconds
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Conn] = []
        self._closed = False

    @classmethod
    def for_client(cls, api_client: Any) -> LeanPool | None:
        """A pool for kubernetes-asyncio's `api_client` when its writes can take it (module
        docstring), else None."""
        rest = getattr(api_client, "rest_client", None)
        session = getattr(rest, "pool_manager", None)
        connector = getattr(session, "connector", None)
        if rest is None or connector is None or getattr(rest, "proxy", None):
            return None
        url = urlsplit(getattr(api_client.configuration, "host", "") or "")
        if url.scheme not in ("http", "https") or not url.hostname:
            return None
        try:
            port = url.port or (443 if url.scheme == "https" else 80)
        except ValueError:
            return None
        tls: ssl.SSLContext | None = None
        if url.scheme == "https":
            found = getattr(connector, "_ssl", None)
            if not isinstance(found, ssl.SSLContext):
                return None
            tls = found
        limit = getattr(connector, "limit", 100) or 100
        return cls(
            url.hostname,
            port,
            tls=tls,
            server_hostname=getattr(rest, "server_hostname", None) or None,
            limit=limit,
        )

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    async def request(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: float | None,
    ) -> LeanResponse:
        """Send one request (`target`: path and query) and read its whole answer; LeanError
        (or TimeoutError past `timeout` seconds) when no complete answer came."""
        if self._closed:
            raise LeanError("the client is closed")
        head = [f"{method} {target} HTTP/1.1", f"Host: {self.authority}"]
        for name, value in headers.items():
            value = str(value)
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise LeanError(f"header {name} holds a line break")
            head.append(f"{name}: {value}")
        payload = body or b""
        if payload or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(payload)}")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload
        async with self._slots:
            conn: _Conn | None = None
            try:
                async with asyncio.timeout(timeout):
                    conn = await self._connection()
                    conn.writer.write(data)
                    if len(data) > 65_536:
                        await conn.writer.drain()
                    response, keep = await _read_response(conn.reader, method)
            except BaseException:
                if conn is not None:
                    conn.close()
                raise
            if keep and not self._closed:
                conn.used = time.monotonic()
                self._idle.append(conn)
            else:
                conn.close()
            return response

    async def _connection(self) -> _Conn:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if (
                now - conn.used < self.idle_seconds
                and not conn.reader.at_eof()
                and not conn.writer.is_closing()
            ):
                return conn
            conn.close()
        try:
            if self.tls is not None:
                reader, writer = await asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=self.tls,
                    server_hostname=self.server_hostname or self.host,
                    limit=_MAX_HEAD,
                )
            else:
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, limit=_MAX_HEAD
                )
        except (OSError, ssl.SSLError) as exc:
            raise LeanError(f"cannot connect to {self.authority}: {exc}") from exc
        return _Conn(reader, writer)


async def _read_response(reader: asyncio.StreamReader, method: str) -> tuple[LeanResponse, bool]:
    """The answer and whether the connection may carry another request."""
    try:
        status_line = await reader.readline()
        parts = status_line.decode("latin-1").split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise LeanError(f"not an HTTP answer: {status_line[:80]!r}")
        version, status = parts[0], int(parts[1])
        headers: CIMultiDict[str] = CIMultiDict()
        size = len(status_line)
        while True:
            line = await reader.readline()
            size += len(line)
            if size > _MAX_HEAD:
                raise LeanError("the answer's headers are too long")
            if line in (b"\r\n", b"\n"):
                break
            if not line.endswith(b"\n"):
                raise LeanError("the connection closed in the answer's headers")
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep:
                raise LeanError(f"malformed header line {line[:80]!r}")
            headers.add(name.strip(), value.strip())
        keep = version != "HTTP/1.0" and "close" not in headers.get("Connection", "").lower()
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return LeanResponse(status, headers, b""), keep
        if "chunked" in headers.get("Transfer-Encoding", "").lower():
            body = await _chunked(reader)
        elif "Content-Length" in headers:
            length = int(headers["Content-Length"])
            if length < 0 or length > _MAX_BODY:
                raise LeanError(f"bad Content-Length {length}")
            body = await reader.readexactly(length)
        else:
            body = await reader.read(_MAX_BODY)
            keep = False
        return LeanResponse(status, headers, body), keep
    except asyncio.IncompleteReadError as exc:
        raise LeanError("the connection closed before the answer was complete") from exc
    except (ValueError, asyncio.LimitOverrunError) as exc:
        raise LeanError(f"malformed answer: {exc}") from exc


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = await reader.readline()
        if not line.endswith(b"\n"):
            raise LeanError("the connection closed in a chunked body")
        size = int(line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        total += size
        if total > _MAX_BODY:
            raise LeanError("the answer's body is too large")
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
