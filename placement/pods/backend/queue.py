"""The scheduling queue: which pending pod the engine tries next, and when a failed one returns.

kube-scheduler's queue, on an injected clock:

* **active**: pods ready to be tried, ordered by the profile's QueueSort key (then by arrival,
  so that equal keys keep a deterministic order).
* **backoff**: pods that failed recently and wait out their backoff (initial 1 s, doubled per
  attempt up to 10 s) before going back to active. A pod whose attempt ended in an error goes
  straight here.
* **unschedulable**: pods no node fits. They wait for a cluster event that may help (the engine
  calls `move_unschedulable` with the plugins deaf to that event, or `move_rejected_by`), or
  for the periodic flush (5 min without a move), and then go to backoff if their backoff has
  not expired yet, else to active, as kube moves them. A plugin whose refusal lapses at a known
  time (a PodGroup's backoff) has the pod wait in backoff until then instead (`hold_until`).
* **gated**: pods with `spec.schedulingGates`, held until an update removes the gates.

Nothing moves a pod to active before its backoff is over, not even `activate` (see there).

`pop_from_backoff` (on by default) is kube-scheduler's `SchedulerPopFromBackoffQ` (on by default
since kube 1.33; off, the queue is kube 1.32's): when the active queue is empty, `pop` takes a
backoff pod early, in kube's order (the backoffs that end in the earliest second first, by the
QueueSort key within that second, so a gang's members stay together; pods a plugin activated
before those, as kube's activation puts them in the active queue). Three are left to wait, so
that a gang whose members activate and reject each other never goes round at one instant: a
pod whose attempt ended in an error (kube keeps those apart too), one that failed at the very
instant of the `pop` (the engine's clock, one value per `schedule` call), and one held by
`hold_until`.

A pod is in at most one place; a pod being tried ("in flight") is in none until the engine puts
it back (`unschedulable`, `backoff`) or forgets it (bound, deleted). The heaps use lazy
deletion: an entry carries the pod's version and a stale entry is skipped when popped.

Nothing here scans every queued pod: the backoff expiries and the unschedulable flush times are
heaps, the unschedulable pods a dict (and an index by rejecting plugin), so a `schedule` call
costs O(log n) per pod it moves however long the queue is (an early pop from backoff also
steps over the pods that failed at its instant).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from placement.pods.framework.interface import PodInfo

__all__ = ["QueuedPod", "SchedulingQueue", "Where", "backoff_duration"]

Where = Literal["active", "backoff", "unschedulable", "gated", "inflight"]


def backoff_duration(attempts: int, initial: timedelta, maximum: timedelta) -> timedelta:
    """kube's calculateBackoffDuration: `initial` after the first failed attempt, doubled per
    further attempt, capped at `maximum`."""
    duration = initial
    for _ in range(1, max(attempts, 1)):
        duration *= 2
        if duration >= maximum:
            return maximum
    return min(duration, maximum)


@dataclass
class QueuedPod:
    """A pending pod and its queue bookkeeping."""

    info: PodInfo
    queued_at: datetime
    """When it last entered the queue (added, or failed): the QueueSort's tie-breaker."""
    attempts: int = 0
    where: Where = "inflight"
    failed_at: datetime | None = None
    """When its last attempt failed: backoff runs from here."""
    unschedulable_since: datetime | None = None
    rejected_by: frozenset[str] = frozenset()
    """The plugins that rejected it last time (an event handler of one of them may move it)."""
    version: int = 0
    errored: bool = False
    """Its last attempt ended in an error (or a failed binding): never popped early from
    backoff."""
    not_before: datetime | None = None
    """A plugin's refusal lapses then (`hold_until`): not tried before, even popped early."""
    extra: dict[str, Any] = field(default_factory=dict)


class SchedulingQueue:
    """activeQ, backoffQ, unschedulable and gated pods (see the module docstring)."""

    def __init__(
        self,
        sort_key: Callable[[PodInfo, datetime], Any],
        *,
        backoff_initial: timedelta = timedelta(seconds=1),
        backoff_max: timedelta = timedelta(seconds=10),
        unschedulable_flush: timedelta = timedelta(minutes=5),
        pop_from_backoff: bool = True,
    ) -> None:
        self._sort_key = sort_key
        self.pop_from_backoff = pop_from_backoff
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.unschedulable_flush = unschedulable_flush
        self._pods: dict[str, QueuedPod] = {}
        self._active: list[tuple[Any, int, str, int]] = []  # (sort key, seq, pod key, version)
        self._backoff: list[tuple[datetime, int, str, int]] = []  # (until, seq, key, version)
        # The backoff pods as `pop` takes them early: (second of until, sort key, seq, key,
        # version).
        self._early: list[tuple[int, Any, int, str, int]] = []
        # Early entries that may not go at `_parked_at` (failed then, or held): set aside until
        # the clock moves, so the pops of one instant do not step over them again and again.
        self._parked: list[tuple[int, Any, int, str, int]] = []
        self._parked_at: datetime | None = None
        self._flushes: list[tuple[datetime, int, str, int]] = []  # (since, seq, key, version)
        self._unschedulable: dict[str, QueuedPod] = {}
        self._rejected: dict[str, set[str]] = {}  # plugin -> keys of unschedulable pods
        self._seq = 0
        self._counts: dict[str, int] = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}

    # --- what is where -----------------------------------------------------------------------

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def get(self, key: str) -> QueuedPod | None:
        return self._pods.get(key)

    def sizes(self) -> dict[str, int]:
        return dict(self._counts)

    def pods(self, where: Where | None = None) -> list[QueuedPod]:
        """The queued pods (of one place), in key order."""
        found = (q for q in self._pods.values() if where is None or q.where == where)
        return sorted(found, key=lambda q: q.info.key)

    def backoff_until(self, queued: QueuedPod) -> datetime | None:
        if queued.failed_at is None or queued.attempts == 0:
            return queued.not_before
        until = queued.failed_at + backoff_duration(
            queued.attempts, self.backoff_initial, self.backoff_max
        )
        return until if queued.not_before is None else max(until, queued.not_before)

    # --- changes -----------------------------------------------------------------------------

    def add(self, info: PodInfo, now: datetime, queued_at: datetime | None = None) -> QueuedPod:
        """A new pending pod (gated ones are held); a known one is updated in place (see
        `update`). `queued_at`: when it entered the queue, if before `now`."""
        queued = self._pods.get(info.key)
        if queued is not None:
            self.update(info, now)
            return queued
        arrived = now if queued_at is None else min(queued_at, now)
        queued = QueuedPod(info=info, queued_at=arrived)
        self._pods[info.key] = queued
        self._place(queued, "gated" if info.gated else "active", now)
        return queued

    def update(self, info: PodInfo, now: datetime, *, changed: bool = True) -> None:
        """A queued pod was updated. A gated pod whose gates are gone becomes active; an
        unschedulable pod whose spec or labels `changed` is moved (the change may help)."""
        queued = self._pods.get(info.key)
        if queued is None:
            return
        old = queued.info
        queued.info = info
        if queued.where == "inflight":
            return
        if info.gated:
            if queued.where != "gated":
                self._place(queued, "gated", now)
            return
        if queued.where == "gated":
            self._place(queued, "active", now)
        elif queued.where == "unschedulable" and changed:
            self._move(queued, now)
        elif queued.where == "active" and info.priority != old.priority:
            self._place(queued, "active", now)  # a new sort key

    def remove(self, key: str) -> QueuedPod | None:
        """Forget a pod (deleted, bound, or decided elsewhere)."""
        queued = self._pods.pop(key, None)
        if queued is not None:
            self._leave(queued)
        return queued

    def pop(self, now: datetime | None = None) -> QueuedPod | None:
        """The next active pod, now in flight; when active is empty and `now` is given, a
        backoff pod (see the module docstring: which, and the two that are left to wait);
        None when there is none."""
        while self._active:
            _, _, key, version = heapq.heappop(self._active)
            queued = self._pods.get(key)
            if queued is None or queued.version != version or queued.where != "active":
                continue
            self._counts["active"] -= 1
            return self._in_flight(queued)
        if now is None or not self.pop_from_backoff:
            return None
        return self._pop_backoff(now)

    def _pop_backoff(self, now: datetime) -> QueuedPod | None:
        """kube's order for it: the backoffs ending in the earliest second first, by the
        QueueSort key within that second (a gang's members stay together)."""
        heap = self._early
        if self._parked_at != now:  # a new instant: what was parked may go now
            for entry in self._parked:
                heapq.heappush(heap, entry)
            self._parked, self._parked_at = [], now
        while heap:
            entry = heapq.heappop(heap)
            queued = self._pods.get(entry[3])
            if queued is None or queued.version != entry[4] or queued.where != "backoff":
                continue  # stale
            held = queued.not_before is not None and queued.not_before > now
            if held or queued.errored or (queued.failed_at is not None and queued.failed_at >= now):
                self._parked.append(entry)
                continue
            self._counts["backoff"] -= 1
            return self._in_flight(queued)
        return None

    def _prune_early(self) -> None:
        """Drop the stale entries (pods that left backoff by a flush or a move): `_early` is
        only popped when the active queue is empty, so they would pile up otherwise."""
        live = []
        for entry in self._early:
            queued = self._pods.get(entry[3])
            if queued is not None and queued.version == entry[4] and queued.where == "backoff":
                live.append(entry)
        heapq.heapify(live)
        self._early = live

    def _push_early(self, queued: QueuedPod, second: int) -> None:
        """Order a backoff pod for an early pop: by `second`, then its QueueSort key."""
        sort_key = self._sort_key(queued.info, queued.queued_at)
        early = (second, sort_key, self._seq, queued.info.key, queued.version)
        heapq.heappush(self._early, early)
        if len(self._early) > 2 * self._counts["backoff"] + 64:
            self._prune_early()

    def _in_flight(self, queued: QueuedPod) -> QueuedPod:
        queued.where = "inflight"
        queued.version += 1
        queued.attempts += 1
        return queued

    def requeue(
        self,
        info: PodInfo,
        now: datetime,
        *,
        unschedulable: bool,
        rejected_by: Iterable[str] = (),
        attempts: int | None = None,
    ) -> QueuedPod:
        """Put back a pod whose attempt failed: to unschedulable (no node fits, wait for an
        event) or to backoff (an error, a failed binding). A pod the queue forgot (it was
        in flight at Permit or binding) comes back with its attempt count."""
        queued = self._pods.get(info.key)
        if queued is None:
            queued = QueuedPod(info=info, queued_at=now, attempts=attempts or 1)
            self._pods[info.key] = queued
        else:
            self._leave(queued)
            queued.info = info
        queued.failed_at = now
        queued.queued_at = now
        queued.rejected_by = frozenset(rejected_by)
        queued.errored = not unschedulable
        queued.not_before = None
        if info.gated:
            self._place(queued, "gated", now)
        elif unschedulable:
            self._place(queued, "unschedulable", now)
        else:
            self._place(queued, "backoff", now)
        return queued

    def take(self, info: PodInfo, now: datetime) -> QueuedPod:
        """Mark a pod in flight without popping it (its Permit wait or binding goes on)."""
        queued = self._pods.get(info.key)
        if queued is None:
            queued = QueuedPod(info=info, queued_at=now)
            self._pods[info.key] = queued
        else:
            self._leave(queued)
        queued.where = "inflight"
        queued.version += 1
        return queued

    def move_unschedulable(
        self,
        now: datetime,
        match: Callable[[QueuedPod], bool] | None = None,
        *,
        deaf: frozenset[str] = frozenset(),
    ) -> int:
        """An event that may help: unschedulable pods (those `match` accepts) go to backoff
        or active, except those rejected only by `deaf` plugins (plugins that do not listen to
        this event: kube's requeueing by plugin). Returns how many moved."""
        moved = 0
        for key in sorted(self._unschedulable):
            queued = self._unschedulable[key]
            if deaf and queued.rejected_by and queued.rejected_by <= deaf:
                continue
            if match is None or match(queued):
                self._move(queued, now)
                moved += 1
        return moved

    def activate(self, key: str, now: datetime) -> bool:
        """A plugin asks for an unschedulable pod to be tried again (kube's Activate, e.g. a
        gang's first member at Permit for its siblings). The pod goes to active only once
        its backoff is over: one still backing off goes to (or stays in) backoff until then.
        Returns True when it moved to active now; False when it is still backing off, or
        elsewhere (active, gated, in flight), or unknown.

        Respecting the backoff is deliberate (kube's ForceActivate skips it): a gang whose
        waiting member activates a sibling that fails and gets the waiter rejected would
        otherwise go round at one instant without end (issue 27). With it, each member is
        tried at most once per backoff period, however the plugins activate it."""
        queued = self._pods.get(key)
        if queued is None or queued.where not in ("unschedulable", "backoff"):
            return False
        if self._move(queued, now) == "active":
            return True
        if self.pop_from_backoff and not queued.errored:
            # kube's Activate puts it in the active queue, ahead of every backoff pod: popped
            # early, it comes first (a gang's siblings together), still not at its failure's
            # instant.
            self._push_early(queued, -1)
        return False

    def hold_until(self, key: str, when: datetime, now: datetime) -> None:
        """An unschedulable pod whose rejection lapses at `when` (a PodGroup's backoff): it
        waits in backoff until then instead of for an event that may never come."""
        queued = self._pods.get(key)
        if queued is not None and queued.where == "unschedulable" and when > now:
            queued.not_before = when
            self._place(queued, "backoff", now)

    def move_rejected_by(self, now: datetime, plugin: str, only: Set[str] | None = None) -> int:
        """`move_unschedulable` for the pods `plugin` rejected (an event its handler says may
        help them; `only` those of them), found through an index rather than a scan."""
        rejected = self._rejected.get(plugin, set())
        keys = sorted(rejected if only is None else rejected & only)
        for key in keys:
            self._move(self._unschedulable[key], now)
        return len(keys)

    def flush(self, now: datetime) -> None:
        """Backoff pods whose time came go to active; pods unschedulable for longer than the
        flush interval are moved."""
        while self._backoff and self._backoff[0][0] <= now:
            _, _, key, version = heapq.heappop(self._backoff)
            queued = self._pods.get(key)
            if queued is None or queued.version != version or queued.where != "backoff":
                continue
            self._place(queued, "active", now)
        due: list[QueuedPod] = []
        limit = now - self.unschedulable_flush
        flushes = self._flushes
        while flushes and flushes[0][0] <= limit:
            _, _, key, version = heapq.heappop(flushes)
            queued = self._pods.get(key)
            if queued is None or queued.version != version or queued.where != "unschedulable":
                continue
            due.append(queued)
        due.sort(key=lambda q: q.info.key)  # moved in key order, as a scan of all would
        for queued in due:
            self._move(queued, now)

    def next_wake(self) -> datetime | None:
        """The earliest time a backoff ends or an unschedulable pod is flushed."""
        times: list[datetime] = []
        backoff = self._valid_top(self._backoff, "backoff")
        if backoff is not None:
            times.append(backoff)
        since = self._valid_top(self._flushes, "unschedulable")
        if since is not None:
            times.append(since + self.unschedulable_flush)
        return min(times) if times else None

    # --- internals ---------------------------------------------------------------------------

    def _move(self, queued: QueuedPod, now: datetime) -> Where:
        """To backoff while its backoff runs, else to active; returns where it went."""
        until = self.backoff_until(queued)
        where: Where = "backoff" if until is not None and until > now else "active"
        self._place(queued, where, now)
        return where

    def _valid_top(
        self, heap: list[tuple[datetime, int, str, int]], where: Where
    ) -> datetime | None:
        """The time of the heap's first live entry, dropping the stale ones above it."""
        while heap:
            when, _, key, version = heap[0]
            queued = self._pods.get(key)
            if queued is None or queued.version != version or queued.where != where:
                heapq.heappop(heap)
                continue
            return when
        return None

    def _leave(self, queued: QueuedPod) -> None:
        if queued.where in self._counts:
            self._counts[queued.where] -= 1
        if queued.where == "unschedulable":
            key = queued.info.key
            del self._unschedulable[key]
            for plugin in queued.rejected_by:
                keys = self._rejected.get(plugin)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._rejected[plugin]
        queued.where = "inflight"
        queued.version += 1

    def _place(self, queued: QueuedPod, where: Where, now: datetime) -> None:
        self._leave(queued)
        queued.where = where
        self._counts[where] += 1
        self._seq += 1
        if where == "active":
            key = self._sort_key(queued.info, queued.queued_at)
            heapq.heappush(self._active, (key, self._seq, queued.info.key, queued.version))
        elif where == "backoff":
            until = self.backoff_until(queued) or now
            heapq.heappush(self._backoff, (until, self._seq, queued.info.key, queued.version))
            if self.pop_from_backoff and not queued.errored:
                self._push_early(queued, int(until.timestamp()))
        elif where == "unschedulable":
            queued.unschedulable_since = now
            key = queued.info.key
            self._unschedulable[key] = queued
            for plugin in queued.rejected_by:
                self._rejected.setdefault(plugin, set()).add(key)
            heapq.heappush(self._flushes, (now, self._seq, key, queued.version))
