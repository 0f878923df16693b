"""The pod scheduler's Events (`EventEmitter`): events.k8s.io/v1 Events written in the
background by a few workers, as client-go's event broadcaster does, never holding scheduling or
binding up. Written through the scheduler's fenced gateway (`controllers.addons.gateway`): once
the lease deadline has passed, what is still queued is dropped, not sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from apis.core import Event
from controllers.addons.gateway import PodGateway
from controllers.runtime.events import truncated_note
from controllers.runtime.leader import NotLeaderError

__all__ = ["EventEmitter"]

log = logging.getLogger(__name__)

_MAX_NAME = 253
_NAME_SUFFIX = 17  # "." and 16 hex digits
_MAX_FIELD = 128  # reportingInstance, action and reason
_EVENT_API = Event.api_version_string()


@dataclass
class _Queued:
    """One Event waiting for a worker; `count` > 1 once later identical ones were folded in."""

    namespace: str
    body: dict[str, Any]
    count: int = 1
    first: datetime = field(default_factory=lambda: datetime.now(UTC))


def _micro_time(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventEmitter:
    """The scheduler's Events (Scheduled, FailedScheduling, Preempted), written as
    events.k8s.io/v1 Events in the background, in the manner of client-go's event broadcaster:

    * `emit` never waits: the event joins a queue that `workers` tasks write from, one create
      at a time each, so events take a few of the API server's hands and binds the rest (events
      trail the bindings during a burst, and catch up after);
    * an event identical to one still queued (same object, type, reason, action, note, as
      client-go's series key) is folded into it: it is written once, with a `series` counting
      the repetitions (a pod retried while the queue is long reports FailedScheduling once);
    * beyond `max_queued` events waiting, new ones are dropped, counted and logged once per
      burst (client-go drops past 1,000 queued); writes that fail are logged, never retried;
    * the request is built as JSON directly and the server's answer is not parsed.

    `on_recorded(reason, outcome)` hears `created`, `failed` or `dropped` once per event
    emitted (a folded event is reported when its write ends)."""

    def __init__(
        self,
        gateway: PodGateway,
        *,
        controller: str,
        instance: str | None = None,
        wall: Callable[[], datetime] | None = None,
        workers: int = 4,
        max_queued: int = 10_000,
        on_recorded: Callable[[str, str], None] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"event workers must be at least 1 (got {workers})")
        self._gateway = gateway
        self.controller = controller[:_MAX_FIELD]
        self.instance = (instance if instance is not None else socket.gethostname())[:_MAX_FIELD]
        self._wall = wall or (lambda: datetime.now(UTC))
        self.workers = workers
        self.max_queued = max_queued
        self._on_recorded = on_recorded
        self._queue: deque[tuple[tuple[str, ...], _Queued]] = deque()
        self._waiting: dict[tuple[str, ...], _Queued] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_stamp = 0
        self._dropping = False
        self.created = 0
        self.failed = 0
        self.dropped = 0
        self.folded = 0

    @property
    def pending(self) -> int:
        """Events queued or being written."""
        return len(self._queue) + len(self._tasks)

    def emit(
        self,
        regarding: Mapping[str, Any],
        related: Mapping[str, Any] | None,
        type: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        """Queue one Event about `regarding` (an ObjectReference as JSON: apiVersion, kind,
        name, namespace, uid...); see the class docstring."""
        note = truncated_note(note)
        key = (
            str(regarding.get("kind", "")),
            str(regarding.get("namespace", "")),
            str(regarding.get("name", "")),
            str(regarding.get("uid", "")),
            type,
            reason,
            action,
            note,
        )
        queued = self._waiting.get(key)
        if queued is not None:
            queued.count += 1
            self.folded += 1
            return
        if len(self._queue) >= self.max_queued:
            self.dropped += 1
            if not self._dropping:
                log.warning(
                    "dropping event %s: %d events queued (max_queued)", reason, len(self._queue)
                )
            self._dropping = True
            self._report(reason, "dropped", 1)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.dropped += 1
            self._report(reason, "dropped", 1)
            return
        now = self._wall()
        namespace = str(regarding.get("namespace") or "default")
        body: dict[str, Any] = {
            "apiVersion": _EVENT_API,
            "kind": "Event",
            "metadata": {"name": self._name(str(regarding.get("name", "")), now)},
            "eventTime": _micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action[:_MAX_FIELD],
            "reason": reason[:_MAX_FIELD],
            "regarding": dict(regarding),
            "note": note,
            "type": type,
        }
        if related is not None:
            body["related"] = dict(related)
        queued = _Queued(namespace, body, first=now)
        self._waiting[key] = queued
        self._queue.append((key, queued))
        if len(self._tasks) < self.workers:
            task = loop.create_task(self._work(), name="scheduler events")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        """Wait until every event emitted so far (and meanwhile) is written or has failed."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def cancel(self) -> None:
        """Stop writing; the events still queued are dropped."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        while self._queue:
            key, queued = self._queue.popleft()
            self._waiting.pop(key, None)
            self.dropped += queued.count
            self._report(str(queued.body["reason"]), "dropped", queued.count)

    def _name(self, regarding: str, now: datetime) -> str:
        # client-go's `<name>.<UnixNano in hex>`, the stamp strictly increasing (no two alike
        # under a frozen clock).
        stamp = max(int(now.timestamp() * 1_000_000) * 1000, self._last_stamp + 1)
        self._last_stamp = stamp
        return f"{regarding[: _MAX_NAME - _NAME_SUFFIX]}.{stamp & (2**64 - 1):016x}"

    async def _work(self) -> None:
        while self._queue:
            key, queued = self._queue.popleft()
            self._waiting.pop(key, None)
            body = queued.body
            body["metadata"]["namespace"] = queued.namespace
            if queued.count > 1:
                body["series"] = {
                    "count": queued.count,
                    "lastObservedTime": _micro_time(self._wall()),
                }
            reason = str(body["reason"])
            try:
                await self._gateway.create_raw(Event, queued.namespace, json.dumps(body).encode())
            except NotLeaderError:
                # Past the lease deadline: this event and the ones queued are not ours to write.
                self.dropped += queued.count
                self._report(reason, "dropped", queued.count)
            except Exception as exc:  # best effort: whatever went wrong, scheduling goes on
                self.failed += queued.count
                log.warning("event %s about %s not recorded: %s", reason, key[2], exc)
                self._report(reason, "failed", queued.count)
            else:
                self.created += 1
                self._dropping = False
                self._report(reason, "created", queued.count)

    def _report(self, reason: str, outcome: str, count: int) -> None:
        if self._on_recorded is None:
            return
        for _ in range(count):
            try:
                self._on_recorded(reason, outcome)
            except Exception:
                log.exception("on_recorded callback failed")
