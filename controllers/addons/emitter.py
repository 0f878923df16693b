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
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii as _quoted
from typing import Any, NamedTuple

from apis.core import Event
from controllers.addons.gateway import PodGateway
from controllers.kube.errors import AlreadyExistsError, NotFoundError
from controllers.runtime.events import micro_time, truncated_note
from controllers.runtime.leader import NotLeaderError
from controllers.runtime.series import Entry, SeriesBook, Write, reference_key, reference_of

__all__ = ["EventEmitter"]

log = logging.getLogger(__name__)

_MAX_NAME = 253
_NAME_SUFFIX = 17  # "." and 16 hex digits
_MAX_FIELD = 128  # reportingInstance, action and reason
_EVENT_API = Event.api_version_string()
_YIELD_SECONDS = 0.05  # how often a waiting worker looks whether the bindings left room


_HEAD = f'{{"apiVersion": {_quoted(_EVENT_API)}, "kind": "Event", "metadata": {{"name": '


def _micro(at: datetime) -> str:
    """`micro_time(at)`; a UTC time (the wall clock's) written by isoformat, not strftime."""
    if at.tzinfo is UTC and at.year >= 1000:
        return at.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    return micro_time(at)


def _reference_json(key: tuple[str, ...]) -> str:
    """json.dumps of `reference_of(key)`."""
    fields = ", ".join(f"{_quoted(k)}: {_quoted(v)}" for k, v in reference_of(key).items())
    return f"{{{fields}}}"


class _Kept(NamedTuple):
    """What the book keeps of an event besides its name, for minutes per key: the references
    as their key tuples (the callers' strings), not a request body. An immutable tuple, made
    once per event in a third of a frozen dataclass's time."""

    regarding: tuple[str, ...]
    related: tuple[str, ...] | None
    type: str
    reason: str
    action: str
    note: str
    at: datetime


class EventEmitter:
    """The scheduler's Events (Scheduled, FailedScheduling, Preempted), written as
    events.k8s.io/v1 Events in the background, in the manner of client-go's event broadcaster:

    * `emit` never waits: the event joins a queue that `workers` tasks write from, one create
      at a time each, so events take a few of the API server's hands and binds the rest (events
      trail the bindings during a burst, and catch up after); while `yield_to()` says the
      bindings take every hand they have (the executor's slots are full), one worker writes
      and the others wait, as client-go's broadcaster writes from one goroutine;
    * isomorphic events (same type, action, reason, reporter, regarding and related object at
      the same resourceVersion: client-go's key, the note left out) make one Event with a
      series, per `controllers.runtime.series`: the first is created, the second PATCHes it
      with `series.count` 2, later ones only count (`folded`), and series are re-sent every 30
      minutes and finished 6 minutes after their last one (a pod retried while nothing changes
      reports FailedScheduling once, with a count);
    * beyond `max_queued` events waiting, new ones are dropped, counted and logged once per
      burst (client-go drops past 1,000 queued); writes that fail are logged, never retried;
    * the request is built as JSON directly and the server's answer is not parsed.

    `on_recorded(reason, outcome)` hears `created`, `patched`, `counted` (folded into a
    series, no write), `exists` (its create lost the race to its own series patch), `failed`
    or `dropped` once per event emitted; the periodic series
    patches report `patched` too."""

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
        yield_to: Callable[[], bool] | None = None,
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
        # The part of every body between its eventTime and its action (`_body`).
        self._reporter = (
            f'", "reportingController": {_quoted(self.controller)}, '
            f'"reportingInstance": {_quoted(self.instance)}, "action": '
        )
        self.yield_to = yield_to
        self._writing = 0  # workers with a write in flight
        self._queue: deque[Write[_Kept]] = deque()
        self.book: SeriesBook[_Kept] = SeriesBook(self._wall())
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_stamp = 0
        self._dropping = False
        self.created = 0
        self.failed = 0
        self.dropped = 0
        self.folded = 0
        self.patched = 0

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
        action, reason = action[:_MAX_FIELD], reason[:_MAX_FIELD]
        ref, rel = reference_key(regarding), reference_key(related)
        key = (type, action, reason, self.controller, self.instance, ref, rel)
        now = self._wall()
        entry = self.book.entry(key)
        if entry is not None:
            write = self.book.observe(key, now, entry.event, entry.namespace, entry.name)
            if write is None:
                self.folded += 1
                self._report(reason, "counted", 1)
                return
        else:
            namespace = str(regarding.get("namespace") or "default")
            name = self._name(str(regarding.get("name", "")), now)
            kept = _Kept(ref, rel if related is not None else None, type, reason, action, note, now)
            write = self.book.observe(key, now, kept, namespace, name)
        assert write is not None
        self._enqueue(loop, write)

    def _body(self, entry: Entry[_Kept], series: dict[str, Any] | None = None) -> bytes:
        """The JSON of the Event an entry is created as (with `series` when its series patch
        found it gone): the bytes json.dumps writes for `_doc`, put together from the
        emitter's constant parts and each string escaped as json.dumps escapes it (a third of
        its time, once per pod scheduled)."""
        kept = entry.event
        if series is not None:
            return json.dumps(self._doc(entry, series)).encode()
        parts = [
            _HEAD,
            _quoted(entry.name),
            ', "namespace": ',
            _quoted(entry.namespace),
            '}, "eventTime": "',
            _micro(kept.at),
            self._reporter,
            _quoted(kept.action),
            ', "reason": ',
            _quoted(kept.reason),
            ', "regarding": ',
            _reference_json(kept.regarding),
            ', "note": ',
            _quoted(kept.note),
            ', "type": ',
            _quoted(kept.type),
        ]
        if kept.related is not None:
            parts += ', "related": ', _reference_json(kept.related)
        parts.append("}")
        return "".join(parts).encode()

    def _doc(self, entry: Entry[_Kept], series: dict[str, Any] | None = None) -> dict[str, Any]:
        """The Event an entry is created as, as a document (`_body` writes its JSON)."""
        kept = entry.event
        body: dict[str, Any] = {
            "apiVersion": _EVENT_API,
            "kind": "Event",
            "metadata": {"name": entry.name, "namespace": entry.namespace},
            "eventTime": micro_time(kept.at),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": kept.action,
            "reason": kept.reason,
            "regarding": reference_of(kept.regarding),
            "note": kept.note,
            "type": kept.type,
        }
        if kept.related is not None:
            body["related"] = reference_of(kept.related)
        if series is not None:
            body["series"] = series
        return body

    def _enqueue(self, loop: asyncio.AbstractEventLoop, write: Write[_Kept]) -> None:
        self._queue.append(write)
        if len(self._tasks) < self.workers:
            task = loop.create_task(self._work(), name="scheduler events")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if self._timer is None and len(self.book):
            delay = max(0.0, (self.book.next_due - self._wall()).total_seconds())
            self._timer = loop.call_later(delay, self._fire, loop)

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        self._due(loop)
        if self._timer is None and len(self.book):
            delay = max(0.0, (self.book.next_due - self._wall()).total_seconds())
            self._timer = loop.call_later(delay, self._fire, loop)

    def tick(self) -> None:
        """Run the book's periodic passes due now (series refreshed and finished); a timer on
        the running loop calls it when they are due."""
        try:
            self._due(asyncio.get_running_loop())
        except RuntimeError:
            return

    def _due(self, loop: asyncio.AbstractEventLoop) -> None:
        for write in self.book.due(self._wall()):
            self._queue.append(write)
        if self._queue and len(self._tasks) < self.workers:
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
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._queue:
            write = self._queue.popleft()
            self.dropped += 1
            self._report(write.entry.event.reason, "dropped", 1)

    def _name(self, regarding: str, now: datetime) -> str:
        # client-go's `<name>.<UnixNano in hex>`, the stamp strictly increasing (no two alike
        # under a frozen clock).
        stamp = max(int(now.timestamp() * 1_000_000) * 1000, self._last_stamp + 1)
        self._last_stamp = stamp
        return f"{regarding[: _MAX_NAME - _NAME_SUFFIX]}.{stamp & (2**64 - 1):016x}"

    async def _work(self) -> None:
        while self._queue:
            if self._writing and self.yield_to is not None and self.yield_to():
                await asyncio.sleep(_YIELD_SECONDS)  # one worker writes meanwhile
                continue
            write = self._queue.popleft()
            reason = write.entry.event.reason
            outcome = "patched" if write.patch else "created"
            self._writing += 1
            try:
                await self._send(write)
            except AlreadyExistsError:
                # The series patch of this event reached the server first and created it (the
                # writes of one key race, as client-go's goroutines do): nothing lost.
                self._report(reason, "exists", 1)
            except NotLeaderError:
                # Past the lease deadline: this event and the ones queued are not ours to write.
                self.dropped += 1
                self._report(reason, "dropped", 1)
            except Exception as exc:  # best effort: whatever went wrong, scheduling goes on
                self.failed += 1
                name = reference_of(write.entry.event.regarding).get("name", "")
                log.warning("event %s about %s not recorded: %s", reason, name, exc)
                self._report(reason, "failed", 1)
            else:
                self.created += outcome == "created"
                self.patched += outcome == "patched"
                self._dropping = False
                self._report(reason, outcome, 1)
            finally:
                self._writing -= 1

    async def _send(self, write: Write[_Kept]) -> None:
        entry = write.entry
        if not write.patch:
            await self._gateway.create_raw(Event, entry.namespace, self._body(entry))
            return
        assert write.last_observed is not None
        series = {"count": write.count, "lastObservedTime": micro_time(write.last_observed)}
        try:
            await self._gateway.patch_event(Event, entry.name, entry.namespace, {"series": series})
        except NotFoundError:  # deleted meanwhile: created again, with its series
            await self._gateway.create_raw(Event, entry.namespace, self._body(entry, series))

    def _report(self, reason: str, outcome: str, count: int) -> None:
        if self._on_recorded is None:
            return
        for _ in range(count):
            try:
                self._on_recorded(reason, outcome)
            except Exception:
                log.exception("on_recorded callback failed")
