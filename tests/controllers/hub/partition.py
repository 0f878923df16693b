"""A TCP proxy between one controller and the embedded API server that can hold that
controller's requests, as a network partition does to one replica while the other still
reaches the server.

While held, the bytes the controller sends wait in the proxy and reach the server only when
the partition heals, even if the controller closed the connection meanwhile (TCP delivers what
was sent before a FIN); the server's answers and watch events still flow to the controller.
The proxy notes every request line it receives, with the loop time, so a test can tell which
writes the controller *sent* after a given moment and which *reached* the server after it.

With `drop_abandoned`, the partition is one that outlasts TCP's retransmissions: what the
controller sent into it on a connection it then closed (a request it gave up on) is lost, never
delivered; what it sent on a connection still open is delivered when the partition heals.

The embedded server's `Faults` hold every client's requests alike (a global latency), so a
partition of one replica is made here.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass, field

_REQUEST = re.compile(rb"(GET|POST|PUT|PATCH|DELETE) (/\S*) HTTP/1\.1\r\n")


@dataclass
class Request:
    method: str
    path: str
    sent: float  # loop time the proxy received it from the controller
    delivered: float | None = None  # loop time it was passed on to the server
    dropped: bool = False  # abandoned by the controller inside the partition (drop_abandoned)


@dataclass
class PartitionProxy:
    upstream_host: str
    upstream_port: int
    drop_abandoned: bool = False
    requests: list[Request] = field(default_factory=list)
    _open: asyncio.Event = field(default_factory=asyncio.Event)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> str:
        self._open.set()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self._open.set()
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def hold(self) -> None:
        """Partition: requests from now on wait here."""
        self._open.clear()

    def heal(self) -> None:
        self._open.set()

    def writes(self, resources: tuple[str, ...]) -> list[Request]:
        """The create/update/patch/delete requests on these resources (plural names)."""
        return [
            r
            for r in self.requests
            if r.method != "GET" and any(f"/{res}" in r.path for res in resources)
        ]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(
                self.upstream_host, self.upstream_port
            )
        except OSError:
            writer.close()
            return
        loop = asyncio.get_running_loop()
        down = loop.create_task(self._pipe(up_reader, writer))
        self._tasks.add(down)
        down.add_done_callback(self._tasks.discard)
        if self.drop_abandoned:
            await self._forward_unless_abandoned(reader, up_writer)
            return
        try:
            while data := await reader.read(65536):
                now = loop.time()
                found = [
                    Request(m.group(1).decode(), m.group(2).decode(), now)
                    for m in _REQUEST.finditer(data)
                ]
                self.requests.extend(found)
                await self._open.wait()
                up_writer.write(data)
                await up_writer.drain()
                for request in found:
                    request.delivered = loop.time()
            await self._open.wait()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                up_writer.write_eof()

    async def _forward_unless_abandoned(
        self, reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter
    ) -> None:
        """Read the controller's bytes at once (to see it close the connection even while
        held) and pass them on when the partition is open; a connection closed while held
        loses what is still held."""
        loop = asyncio.get_running_loop()
        held: asyncio.Queue[tuple[bytes, list[Request]] | None] = asyncio.Queue()
        abandoned = False

        async def deliver() -> None:
            while (item := await held.get()) is not None:
                await self._open.wait()
                data, found = item
                if abandoned:
                    for request in found:
                        request.dropped = True
                    continue
                up_writer.write(data)
                await up_writer.drain()
                for request in found:
                    request.delivered = loop.time()

        sender = loop.create_task(deliver())
        try:
            while data := await reader.read(65536):
                now = loop.time()
                found = [
                    Request(m.group(1).decode(), m.group(2).decode(), now)
                    for m in _REQUEST.finditer(data)
                ]
                self.requests.extend(found)
                held.put_nowait((data, found))
            abandoned = not self._open.is_set()
        except (ConnectionError, asyncio.CancelledError):
            abandoned = not self._open.is_set()
        finally:
            held.put_nowait(None)
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await sender
            with contextlib.suppress(Exception):
                if abandoned:
                    up_writer.close()
                else:
                    up_writer.write_eof()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
