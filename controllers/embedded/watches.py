"""Watch streams of the embedded API server: the replay from a resourceVersion (or the current
objects as ADDED), 410 Gone for a compacted one, bookmarks, `timeoutSeconds`, and the end of a
stream (clean, or a broken connection for fault injection). A Table watch (`kubectl get -w`)
gets each event's object as a one-row Table. A client that goes away mid-stream is normal: a
DEBUG line, not the ERROR and traceback aiohttp would log."""

from __future__ import annotations

import asyncio
import json
import logging

from aiohttp import web

from controllers.embedded.faults import Faults
from controllers.embedded.history import DROP, StoredEvent
from controllers.embedded.resources import Resource
from controllers.embedded.selectors import query_predicate
from controllers.embedded.status import StatusError
from controllers.embedded.store import Store
from controllers.embedded.tables import TableView

__all__ = ["Watches"]

log = logging.getLogger(__name__)

_TRUE = ("true", "1")
_BATCH = 512  # events written to the socket at once, at most


class Watches:
    """Serves watch requests over one store."""

    def __init__(self, store: Store, faults: Faults, bookmark_interval: float) -> None:
        self.store = store
        self.faults = faults
        self.bookmark_interval = bookmark_interval

    async def serve(
        self, request: web.Request, res: Resource, namespace: str, view: TableView | None
    ) -> web.StreamResponse:
        rv_text = request.query.get("resourceVersion", "")
        if rv_text not in ("", "0") and not rv_text.isdigit():
            raise StatusError(400, f"invalid resourceVersion {rv_text!r}")
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        try:
            await response.prepare(request)
            await self._serve(request, response, res, namespace, view)
        except ConnectionResetError as exc:
            # The client went away (kubectl get -w ended, a controller restarting): normal.
            log.debug("watch of %s: the client went away (%s)", res.plural, exc)
        return response

    async def _serve(
        self,
        request: web.Request,
        response: web.StreamResponse,
        res: Resource,
        namespace: str,
        view: TableView | None,
    ) -> None:
        query = request.query
        predicate = query_predicate(query, (res.group, res.kind))
        rv_text = query.get("resourceVersion", "")
        bookmarks = query.get("allowWatchBookmarks", "").lower() in _TRUE
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        # No await between registering and replaying: nothing can slip in between.
        watcher = self.store.watch(res, namespace, predicate)
        try:
            if rv_text in ("", "0"):
                for obj in self.store.list(res, namespace, predicate):
                    watcher.queue.put_nowait(StoredEvent(0, res, "ADDED", obj).line())
            else:
                try:
                    if self.faults.take_gone():
                        raise StatusError(410, f"too old resource version: {rv_text}", "Expired")
                    for event in self.store.history_since(int(rv_text)):
                        watcher.offer(event)
                except StatusError as exc:
                    await response.write(json.dumps({"type": "ERROR", "object": exc.doc}).encode())
                    return
            await self._stream(request, response, watcher.queue, res, bookmarks, timeout, view)
        finally:
            self.store.watchers.discard(watcher)

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        queue: asyncio.Queue[bytes | str],
        res: Resource,
        bookmarks: bool,
        timeout: float | None,
        view: TableView | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout else None
        first = True
        while True:
            wait = self.bookmark_interval if bookmarks else None
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    return
                wait = left if wait is None else min(wait, left)
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                if bookmarks and (deadline is None or loop.time() < deadline):
                    await response.write(self._bookmark(res))
                continue
            batch: list[bytes] = []
            while True:
                if isinstance(item, str):
                    if batch:
                        await response.write(b"".join(batch))
                    if item == DROP and request.transport is not None:
                        request.transport.abort()  # a broken connection, not a clean end
                    return
                if view is not None:
                    item, first = view.watch_line(item, first), False
                batch.append(item)
                if queue.empty() or len(batch) >= _BATCH:
                    break
                item = queue.get_nowait()
            await response.write(b"".join(batch))

    def _bookmark(self, res: Resource) -> bytes:
        meta = {"resourceVersion": str(self.store.rv)}
        obj = {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta}
        return json.dumps({"type": "BOOKMARK", "object": obj}).encode() + b"\n"
