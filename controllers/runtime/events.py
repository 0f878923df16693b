"""Best-effort events.k8s.io/v1 Events, recorded the way client-go's `tools/events` broadcaster
does (OCM's placement controller builds its recorder on it, through sdk-go's
`events.NewEventRecorder`): `record` returns at once and the write runs in the background, and
isomorphic events (same type, action, reason, reporter, regarding and related object at the
same resourceVersion) become one Event with a series, per `controllers.runtime.series`: the
first created, the second a PATCH with `series.count` 2, later ones counted, series re-sent
every 30 minutes and finished 6 minutes after their last one.

An event is never worth slowing scheduling down for: a failed create is logged and forgotten
(no retry), and once `max_pending` creates are in flight new events are dropped with a warning.
`flush` waits for the creates in flight, for shutdown and for tests.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from apis.core import Event, EventSeries, ObjectReference
from apis.meta import KubeObject, ObjectMeta
from controllers.kube.errors import AlreadyExistsError, NotFoundError
from controllers.kube.gateway import Gateway
from controllers.runtime.series import SeriesBook, Write

__all__ = [
    "MAX_NOTE_BYTES",
    "EventRecorder",
    "EventType",
    "Reference",
    "object_reference",
    "truncated_note",
]

log = logging.getLogger(__name__)

MAX_NOTE_BYTES = 1024  # the API server rejects longer notes (events.k8s.io validation)
_MAX_NAME = 253
_NAME_SUFFIX = 17  # "." and 16 hex digits
_MAX_FIELD = 128  # reportingInstance, action and reason

EventType = Literal["Normal", "Warning"]


_Ref = tuple[str | None, ...]


class Reference(NamedTuple):
    """An object as an Event's reference names it (`object_reference`'s fields), for a caller
    that has no model of it at hand."""

    api_version: str | None
    kind: str | None
    name: str | None
    namespace: str | None
    uid: str | None
    resource_version: str | None


def _ref_key(obj: KubeObject | Reference | None) -> _Ref:
    """`object_reference(obj)`'s fields as a tuple (part of an isomorphic key); () for None."""
    if obj is None:
        return ()
    if isinstance(obj, Reference):
        return tuple(obj)
    meta = obj.metadata
    return (
        obj.api_version or obj.api_version_string(),
        obj.kind or obj.KIND,
        meta.name,
        meta.namespace or None,
        meta.uid,
        meta.resource_version,
    )


def _reference(ref: _Ref) -> ObjectReference:
    api_version, kind, name, namespace, uid, resource_version = ref
    return ObjectReference(
        api_version=api_version,
        kind=kind,
        name=name,
        namespace=namespace,
        uid=uid,
        resource_version=resource_version,
    )


_REF_WIRE = ("apiVersion", "kind", "name", "namespace", "uid", "resourceVersion")
_EVENT_API_VERSION = Event.api_version_string()


def _reference_wire(ref: _Ref) -> dict[str, str | None]:
    """`_reference(ref).to_wire()`: every field, nulls included."""
    return dict(zip(_REF_WIRE, ref, strict=True))


@dataclass(frozen=True, slots=True)
class _Sent:
    """What the book remembers of an event besides its name: kept for minutes per key (tens of
    thousands at a cold start), so tuples sharing the objects' strings, not an Event model."""

    regarding: _Ref
    related: _Ref
    type: EventType
    reason: str
    action: str
    note: str
    at: datetime


def micro_time(when: datetime) -> str:
    """A MicroTime on the wire (`strftime("%Y-%m-%dT%H:%M:%S.%fZ")` of the UTC time, at half
    its cost: every event carries one)."""
    utc = when if when.tzinfo is UTC else when.astimezone(UTC)
    return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def truncated_note(note: str) -> str:
    """`note` cut to at most 1024 bytes of UTF-8, never splitting a character."""
    raw = note.encode()
    if len(raw) <= MAX_NOTE_BYTES:
        return note
    return raw[:MAX_NOTE_BYTES].decode("utf-8", "ignore")


def object_reference(obj: KubeObject) -> ObjectReference:
    """The reference an Event carries to `obj`, as it is now (uid and resourceVersion)."""
    meta = obj.metadata
    return ObjectReference(
        api_version=obj.api_version or obj.api_version_string(),
        kind=obj.kind or obj.KIND,
        name=meta.name,
        namespace=meta.namespace or None,
        uid=meta.uid,
        resource_version=meta.resource_version,
    )


class EventRecorder:
    """Records Events about objects in the background as `controller` (the events'
    reportingController); see the module docstring.

    `on_recorded(reason, outcome)` is called once per `record` call with the event's reason and
    `created`, `patched` (the second of a series), `counted` (a later one of a series: no
    write), `failed`, `dropped` or (for a named event) `exists` (for metrics and tests); the
    periodic series patches (`tick`) report `patched` too.
    """

    def __init__(
        self,
        gateway: Gateway,
        *,
        controller: str,
        instance: str | None = None,
        wall: Callable[[], datetime] | None = None,
        max_pending: int = 1000,
        on_recorded: Callable[[str, str], None] | None = None,
    ) -> None:
        self._gateway = gateway
        self.controller = controller
        self.instance = (instance if instance is not None else socket.gethostname())[:_MAX_FIELD]
        self._wall = wall or (lambda: datetime.now(UTC))
        self.max_pending = max_pending
        self._on_recorded = on_recorded
        self._pending: set[asyncio.Task[None]] = set()
        self._last_stamp = 0
        self.dropped = 0
        self._dropping = False  # inside a burst of drops: warn once per burst
        self.book: SeriesBook[_Sent] = SeriesBook(self._wall())
        self._timer: asyncio.TimerHandle | None = None

    @property
    def pending(self) -> int:
        """Creates still in flight."""
        return len(self._pending)

    def _name(self, regarding: str, now: datetime) -> str:
        # client-go names events `<name>.<UnixNano in hex>`; the stamp is kept strictly
        # increasing so two events in the same nanosecond (or under a frozen test clock) do not
        # collide and get rejected as AlreadyExists.
        stamp = max(int(now.timestamp() * 1_000_000) * 1000, self._last_stamp + 1)
        self._last_stamp = stamp
        return f"{regarding[: _MAX_NAME - _NAME_SUFFIX]}.{stamp & (2**64 - 1):016x}"

    def _event(self, sent: _Sent, namespace: str, name: str, series: Any = None) -> Event:
        """The Event a remembered one is written as (created, or created again with its
        series when the series patch found it gone)."""
        return Event(
            metadata=ObjectMeta(name=name, namespace=namespace),
            event_time=sent.at,
            series=series,
            reporting_controller=self.controller,
            reporting_instance=self.instance,
            action=sent.action,
            reason=sent.reason,
            regarding=_reference(sent.regarding),
            related=_reference(sent.related) if sent.related else None,
            note=sent.note,
            type=sent.type,
        )

    def _wire(self, sent: _Sent, namespace: str, name: str) -> dict[str, Any]:
        """`_event(sent, namespace, name).to_wire()` without the model: the same keys in the
        same order, nulls included (a cold start records tens of thousands, and the model's
        validation and dump cost more than the rest of the recording)."""
        return {
            "apiVersion": _EVENT_API_VERSION,
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(sent.at),
            "series": None,
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": sent.action,
            "reason": sent.reason,
            "regarding": _reference_wire(sent.regarding),
            "related": _reference_wire(sent.related) if sent.related else None,
            "note": sent.note,
            "type": sent.type,
        }

    def record(
        self,
        regarding: KubeObject,
        related: KubeObject | Reference | None,
        type: EventType,
        reason: str,
        action: str,
        note: str,
        name: str | None = None,
    ) -> None:
        """Schedule the create of one Event in the namespace of `regarding`; never blocks, never
        raises (outside a running event loop the event is dropped). A given `name` makes the
        event one of a kind: when the server holds an Event of that name already (recorded
        before a restart, or by another replica), the create is refused and reported as
        `exists`, quietly."""
        if len(self._pending) >= self.max_pending:
            self._drop(reason, "too many events in flight")
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._drop(reason, "no running event loop")
            return
        action, reason = action[:_MAX_FIELD], reason[:_MAX_FIELD]
        ref, rel = _ref_key(regarding), _ref_key(related)
        key = (type, action, reason, self.controller, self.instance, ref, rel)
        now = self._wall()
        entry = self.book.entry(key)
        if entry is None:
            namespace = regarding.namespace or "default"
            name = name or self._name(regarding.name, now)
            sent = _Sent(ref, rel, type, reason, action, truncated_note(note), now)
            write = self.book.observe(key, now, sent, namespace, name)
        else:
            write = self.book.observe(key, now, entry.event, entry.namespace, entry.name)
        if write is None:
            self._report(reason, "counted")
            return
        self._start(loop, write)
        self._arm(loop)

    def tick(self) -> None:
        """Run the book's periodic passes due now (series refreshed and finished); a timer on
        the running loop calls it when they are due."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        for write in self.book.due(self._wall()):
            self._start(loop, write)

    def _start(self, loop: asyncio.AbstractEventLoop, write: Write[_Sent]) -> None:
        task = loop.create_task(self._write(write))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None or not len(self.book):
            return
        delay = max(0.0, (self.book.next_due - self._wall()).total_seconds())
        self._timer = loop.call_later(delay, self._fire, loop)

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        for write in self.book.due(self._wall()):
            self._start(loop, write)
        self._arm(loop)

    def _drop(self, reason: str, why: str) -> None:
        self.dropped += 1
        if not self._dropping:
            log.warning("dropping event %s: %s (max_pending=%d)", reason, why, self.max_pending)
        self._dropping = True
        self._report(reason, "dropped")

    def _report(self, reason: str, outcome: str) -> None:
        if self._on_recorded is not None:
            try:
                self._on_recorded(reason, outcome)
            except Exception:
                log.exception("on_recorded callback failed")

    async def _write(self, write: Write[_Sent]) -> None:
        entry = write.entry
        if not write.patch:
            body = self._wire(entry.event, entry.namespace, entry.name)
            await self._create(body, entry.event.reason, entry.namespace, entry.name)
            return
        assert write.last_observed is not None
        series = {"count": write.count, "lastObservedTime": micro_time(write.last_observed)}
        try:
            try:
                await self._gateway.patch_event(
                    Event, entry.name, entry.namespace, {"series": series}
                )
            except NotFoundError:  # deleted meanwhile: created again, with its series
                again = EventSeries.model_validate(series)
                await self._gateway.post_event(
                    self._event(entry.event, entry.namespace, entry.name, again)
                )
        except Exception as exc:  # best effort, as a create
            log.warning("event %s/%s series not recorded: %s", entry.namespace, entry.name, exc)
            self._report(entry.event.reason, "failed")
        else:
            self._report(entry.event.reason, "patched")

    async def _create(self, body: dict[str, Any], reason: str, namespace: str, name: str) -> None:
        try:
            await self._gateway.post_wire(Event, namespace, body)
        except AlreadyExistsError:
            self._report(reason, "exists")  # only named events can collide
        except Exception as exc:  # best effort: whatever went wrong, the caller never sees it
            log.warning("event %s/%s not recorded: %s", namespace, name, exc)
            self._report(reason, "failed")
        else:
            self._report(reason, "created")
        finally:
            self._dropping = False

    async def flush(self) -> None:
        """Wait until every create scheduled so far (and any scheduled meanwhile) is done."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
