"""The event series book of client-go's events.k8s.io broadcaster (`tools/events`), sans I/O:
events in with the time, writes out (what to create, what to patch), on an injected clock.

client-go keys each event by its isomorphic key: type, action, reason, reporting controller and
instance, and the full references of the object it regards and of the related one (uid and
resourceVersion included; the note is not part of it). Then:

* the first event of a key is created, and remembered;
* the second one turns it into a series: `series.count` 2 and `series.lastObservedTime`, sent
  as a PATCH of the Event created first;
* later ones only count in the book (no write);
* every 30 minutes (`REFRESH`) every series is patched again with its current count;
* a series not observed for 6 minutes (`FINISH`) is finished: one last patch, then forgotten;
  a singleton is forgotten 6 minutes after its eventTime. Both periodic passes run on their
  own period from the book's start, as client-go's `wait.Until` timers do.

The book never retries; the driver (the recorder) does the I/O and, when a series patch finds
no Event (deleted meanwhile), creates it with its series as client-go does.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

__all__ = [
    "FINISH",
    "REFRESH",
    "Entry",
    "SeriesBook",
    "Write",
    "reference_key",
    "reference_of",
]

FINISH = timedelta(minutes=6)
REFRESH = timedelta(minutes=30)

T = TypeVar("T")

_REF_FIELDS = ("apiVersion", "kind", "namespace", "name", "uid", "resourceVersion", "fieldPath")


def reference_key(ref: Mapping[str, Any] | None) -> tuple[str, ...]:
    """An ObjectReference (as JSON) as part of an isomorphic key; None as the empty reference."""
    if ref is None:
        return ()
    return tuple(str(ref.get(f) or "") for f in _REF_FIELDS)


def reference_of(key: tuple[str, ...]) -> dict[str, str]:
    """The ObjectReference (as JSON, its set fields) a `reference_key` was made from."""
    return {field: value for field, value in zip(_REF_FIELDS, key, strict=False) if value}


@dataclass(slots=True)
class Entry(Generic[T]):
    """One remembered event: `event` is the driver's own (what it created); `count` is 0 for a
    singleton, else the series count; `last_observed` the series' last observation."""

    event: T
    namespace: str
    name: str
    event_time: datetime
    count: int = 0
    last_observed: datetime | None = None


@dataclass(frozen=True)
class Write(Generic[T]):
    """One write to do: a create of `entry.event` (`count` 0) or a series patch of the Event
    `entry.name` with `count` and `last_observed` (as they were when the write was decided)."""

    entry: Entry[T]
    count: int = 0
    last_observed: datetime | None = None

    @property
    def patch(self) -> bool:
        return self.count > 0


class SeriesBook(Generic[T]):
    """The broadcaster's event cache; see the module docstring. `start` is when its periodic
    passes start counting (the recorder's start)."""

    def __init__(self, start: datetime) -> None:
        self._entries: dict[Hashable, Entry[T]] = {}
        self._next_refresh = start + REFRESH
        self._next_finish = start + FINISH

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def entry(self, key: Hashable) -> Entry[T] | None:
        return self._entries.get(key)

    @property
    def next_due(self) -> datetime:
        """When `due` has something to do next (the earlier of the two passes)."""
        return min(self._next_refresh, self._next_finish)

    def observe(
        self, key: Hashable, now: datetime, event: T, namespace: str, name: str
    ) -> Write[T] | None:
        """One event of `key` observed at `now` (`event`, `namespace` and `name` are used only
        when it is the first of its key): the write it calls for, or None when it only counts."""
        entry = self._entries.get(key)
        if entry is None:
            entry = Entry(event, namespace, name, now)
            self._entries[key] = entry
            return Write(entry)
        entry.last_observed = now
        if entry.count:
            entry.count += 1
            return None
        entry.count = 2
        return Write(entry, 2, now)

    def due(self, now: datetime) -> list[Write[T]]:
        """The periodic passes due by `now`: final patches of finished series (forgotten with
        the singletons past `FINISH`), then refresh patches of the series still open."""
        writes: list[Write[T]] = []
        if now >= self._next_finish:
            self._next_finish = _after(self._next_finish, FINISH, now)
            horizon = now - FINISH
            for key, entry in list(self._entries.items()):
                if entry.count:
                    if entry.last_observed is not None and entry.last_observed < horizon:
                        writes.append(Write(entry, entry.count, entry.last_observed))
                        del self._entries[key]
                elif entry.event_time < horizon:
                    del self._entries[key]
        if now >= self._next_refresh:
            self._next_refresh = _after(self._next_refresh, REFRESH, now)
            writes.extend(
                Write(e, e.count, e.last_observed) for e in self._entries.values() if e.count
            )
        return writes


def _after(tick: datetime, period: timedelta, now: datetime) -> datetime:
    """The first tick of the period after `now` (a pass missed while asleep is not repeated)."""
    while tick <= now:
        tick += period
    return tick
