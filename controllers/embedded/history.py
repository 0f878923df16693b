"""The change events of the embedded API server's store and the open watches they are offered
to: a `StoredEvent` (one change at one resourceVersion, encoded once as a watch-stream line
shared by every watcher) and a `Watcher` (one open watch: its resource, namespace and
selector, and the queue its HTTP stream reads, where leaving the selector reads as DELETED)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from controllers.embedded.resources import Resource
from controllers.embedded.selectors import Predicate

__all__ = ["DROP", "END", "StoredEvent", "Watcher", "encoded_as_stored"]


@dataclass
class StoredEvent:
    """A change at `rv`; `old` is the object before it (None for ADDED)."""

    rv: int
    resource: Resource
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None = None
    _lines: dict[str, bytes] = field(default_factory=dict, repr=False)
    _object: bytes | None = field(default=None, repr=False)

    def line(self, type_: str | None = None) -> bytes:
        """The event as one JSON line of a watch stream, as `type_` (a watch the change moved
        the object out of reads DELETED, one it moved into ADDED): the object is encoded once,
        each line once, shared by watchers."""
        kind = type_ or self.type
        found = self._lines.get(kind)
        if found is None:
            # What json.dumps({"type": kind, "object": obj}) writes, the object's part reused.
            found = b'{"type": ' + json.dumps(kind).encode() + b', "object": '
            found = self._lines[kind] = found + self.encoded() + b"}\n"
        return found

    def left_line(self) -> bytes:
        """The DELETED line a watch gets when this change moved the object out of its
        selector: the object as it was (what the watch last matched), at this change's
        resourceVersion, as kube-apiserver's watch cache sends it."""
        before = self.old if self.old is not None else self.obj
        meta = {**before["metadata"], "resourceVersion": str(self.rv)}
        doc = {**before, "metadata": meta}
        return b'{"type": "DELETED", "object": ' + json.dumps(doc).encode() + b"}\n"

    def encoded(self) -> bytes:
        """The object as json.dumps writes it, encoded once for the watch lines and for the
        answer to the write that made this change."""
        if self._object is None:
            self._object = json.dumps(self.obj).encode()
        return self._object


def encoded_as_stored(last: StoredEvent | None, obj: dict[str, Any]) -> bytes | None:
    """`obj` as JSON when it is what the latest change (`last`) stored, encoded once for its
    watch lines and the write's answer; None otherwise."""
    return last.encoded() if last is not None and last.obj is obj else None


END, DROP = "end", "drop"
"""What closes a watch's queue: the stream ends cleanly, or its connection is dropped."""


class Watcher:
    """One open watch: the events it should see, queued for its HTTP stream."""

    def __init__(self, resource: Resource, namespace: str, predicate: Predicate | None) -> None:
        self.resource = resource
        self.namespace = namespace
        self.predicate = predicate
        self.queue: asyncio.Queue[bytes | str] = asyncio.Queue()

    def _sees(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        if self.namespace and obj["metadata"].get("namespace") != self.namespace:
            return False
        return self.predicate is None or self.predicate(obj)

    def offer(self, event: StoredEvent) -> None:
        """Queue the event as this watch sees it: leaving its selector reads as DELETED (of the
        object as it was), entering it as ADDED."""
        if event.resource is not self.resource:
            return
        now, before = self._sees(event.obj), self._sees(event.old)
        if event.type == "MODIFIED" and now != before:
            self.queue.put_nowait(event.line("ADDED") if now else event.left_line())
        elif now:
            self.queue.put_nowait(event.line())
