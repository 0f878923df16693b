"""The controller's work queue, after client-go's rate-limited delaying queue
(docs/architecture.md, 'Kubernetes gateway, embedded API server, cache and queue').

Keys (`namespace/name`) are deduplicated: a key added while queued is queued once, a key added
while a worker processes it is queued again only after that worker is done, so one key never has
two workers at a time. `add_after` delays a key; `add_rate_limited` delays it by a per-key
exponential backoff (capped), and by an overall token bucket so a burst of failures cannot
hammer the API server. Time comes from an injected `Clock` so tests run without sleeping.

An optional `QueueMetrics` hook hears what client-go's workqueue metrics are made of (a key
added, taken by a worker, done, retried); the runtime wires it to the `workqueue_*` series.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = ["Clock", "Handler", "LoopClock", "ManualClock", "QueueMetrics", "Retry", "WorkQueue"]

log = logging.getLogger(__name__)

# A handler returns None when done, or the seconds after which to look at the key again.
Handler = Callable[[str], Awaitable[float | None]]


class Retry(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a handler that finished but wants the key again with backoff (OCM requeues
    a placement whose scheduling ended in Warning, Misconfigured or Error this way). Unlike
    other exceptions it is not logged as a failure, and unlike returning a delay it keeps the
    key's backoff growing."""


class Clock(Protocol):
    """Where the queue gets the time and how it waits for it."""

    def now(self) -> float: ...

    async def sleep_until(self, deadline: float) -> None:
        """Return once `now() >= deadline` (an absolute time, so a late start cannot shift
        it)."""
        ...


class QueueMetrics(Protocol):
    """What a work queue reports, key by key (client-go's `queueMetrics`)."""

    def added(self, key: str) -> None:
        """`key` became due: queued now, or owed a run once the one in progress is done."""

    def started(self, key: str) -> None:
        """A worker took `key`."""

    def finished(self, key: str) -> None:
        """The worker that took `key` is done with it."""

    def retried(self, key: str) -> None:
        """`key` was asked for again after a delay (`add_after`, `add_rate_limited`)."""

    def dropped(self, keys: int) -> None:
        """`keys` due keys were thrown away unprocessed (a shutdown without draining)."""


class LoopClock:
    """The event loop's monotonic clock."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep_until(self, deadline: float) -> None:
        await asyncio.sleep(max(0.0, deadline - self.now()))


class ManualClock:
    """A clock that moves only when `advance` is called (for tests)."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    async def sleep_until(self, deadline: float) -> None:
        if deadline <= self._now:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (deadline, next(self._seq), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move time on, wake the sleepers that are due, and let them run."""
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
        for _ in range(20):  # some loop turns, so woken tasks act before the test looks
            await asyncio.sleep(0)


class WorkQueue:
    """Keyed, deduplicated, per-key serial, delayed and rate-limited work for N workers."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        base_delay: float = 0.005,
        max_delay: float = 300.0,
        qps: float = 10.0,
        burst: int = 100,
        metrics: QueueMetrics | None = None,
    ) -> None:
        self.clock: Clock = clock or LoopClock()
        self.metrics = metrics
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.qps = qps
        self.burst = burst
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._failures: dict[str, int] = {}
        self._waiting: dict[str, float] = {}
        self._timers: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._tokens = float(burst)
        self._tokens_at: float | None = None
        self._ready = asyncio.Event()  # set while keys may be waiting for a worker
        self._timer_changed = asyncio.Event()
        self._shutting_down = False
        self._workers: list[asyncio.Task[None]] = []
        self._timer_task: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def busy(self) -> bool:
        """Keys queued or being processed (delayed keys are not counted)."""
        return bool(self._queue or self._processing)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # --- adding --------------------------------------------------------------------------------

    def add(self, key: str) -> None:
        """Queue `key` unless it already is; while it is processed, queue it for afterwards."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if self.metrics is not None:
            self.metrics.added(key)
        if key not in self._processing:
            self._queue.append(key)
            self._notify()

    def add_after(self, key: str, delay: float) -> None:
        """Queue `key` after `delay` seconds (the earliest of several pending times wins)."""
        if self._shutting_down:
            return
        if self.metrics is not None:
            self.metrics.retried(key)
        if delay <= 0:
            self.add(key)
            return
        ready = self.clock.now() + delay
        if key in self._waiting and self._waiting[key] <= ready:
            return
        self._waiting[key] = ready
        heapq.heappush(self._timers, (ready, next(self._seq), key))
        self._timer_changed.set()
        self._ensure_timer()

    def when(self, key: str) -> float:
        """The delay before retrying `key` after one more failure (and count that failure)."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        backoff = min(self.base_delay * 2.0**failures, self.max_delay)
        return max(backoff, self._bucket_delay())

    def add_rate_limited(self, key: str) -> None:
        self.add_after(key, self.when(key))

    def forget(self, key: str) -> None:
        """Reset `key`'s backoff (after it was processed successfully)."""
        self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    def _bucket_delay(self) -> float:
        now = self.clock.now()
        if self._tokens_at is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._tokens_at) * self.qps)
        self._tokens_at = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def _notify(self) -> None:
        self._ready.set()

    # --- timers --------------------------------------------------------------------------------

    def _ensure_timer(self) -> None:
        if self._timer_task is None or self._timer_task.done():
            self._timer_task = asyncio.get_running_loop().create_task(self._run_timers())

    async def _run_timers(self) -> None:
        while self._timers and not self._shutting_down:
            ready, _, key = self._timers[0]
            if self._waiting.get(key) != ready:
                heapq.heappop(self._timers)  # superseded by an earlier time
                continue
            if ready <= self.clock.now():
                heapq.heappop(self._timers)
                del self._waiting[key]
                self.add(key)
                continue
            self._timer_changed.clear()
            sleeper = asyncio.ensure_future(self.clock.sleep_until(ready))
            changed = asyncio.ensure_future(self._timer_changed.wait())
            await asyncio.wait({sleeper, changed}, return_when=asyncio.FIRST_COMPLETED)
            for task in (sleeper, changed):
                task.cancel()

    # --- processing ----------------------------------------------------------------------------

    async def get(self) -> str | None:
        """The next key to process (mark it done with `done`), or None once shut down and
        drained."""
        while not self._queue:
            if self._shutting_down:
                return None
            # No await between the check and the clear: an add() cannot slip in between.
            self._ready.clear()
            await self._ready.wait()
        key = self._queue.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        if self.metrics is not None:
            self.metrics.started(key)
        return key

    def done(self, key: str) -> None:
        if self.metrics is not None and key in self._processing:
            self.metrics.finished(key)
        self._processing.discard(key)
        if key in self._dirty:
            # Added while it was processed (and so before any shutdown): it is still owed a run.
            self._queue.append(key)
            self._notify()

    def start(self, handler: Handler, workers: int = 1) -> None:
        """Run `workers` workers calling `handler` until `shutdown`."""
        for i in range(workers):
            self._start_worker(handler, f"worker {i}")

    def _start_worker(self, handler: Handler, name: str) -> None:
        task = asyncio.create_task(self._work(handler), name=name)
        self._workers.append(task)
        task.add_done_callback(lambda done: self._worker_ended(done, handler))

    def _worker_ended(self, task: asyncio.Task[None], handler: Handler) -> None:
        """A worker that died of an unexpected exception (a bug outside the handler, which
        is caught per key) is logged and replaced, so the queue never silently loses one."""
        if task.cancelled() or task.exception() is None:
            return
        log.error("%s died; starting another", task.get_name(), exc_info=task.exception())
        if task in self._workers:
            self._workers.remove(task)
        if not self._shutting_down:
            self._start_worker(handler, task.get_name())

    async def _work(self, handler: Handler) -> None:
        while (key := await self.get()) is not None:
            try:
                again = await handler(key)
            except Retry as retry:
                log.debug("%s requeued with backoff: %s", key, retry)
                self.add_rate_limited(key)
            except Exception:
                log.exception("reconcile of %s failed; retrying with backoff", key)
                self.add_rate_limited(key)
            else:
                self.forget(key)
                if again is not None:
                    self.add_after(key, again)
            finally:
                self.done(key)

    async def shutdown(self, drain: bool = True, *, cancel: bool = False) -> None:
        """Stop taking new keys; with `drain`, workers finish what is queued first. Delayed
        keys are dropped. With `cancel`, the handlers in flight are cancelled at once (a
        replica that lost leadership must not finish its writes) and nothing queued is kept.
        Returns once every worker has stopped."""
        self._shutting_down = True
        if cancel:
            drain = False
            for worker in self._workers:
                worker.cancel()
        if not drain:
            if self.metrics is not None and self._dirty:
                self.metrics.dropped(len(self._dirty))
            self._queue.clear()
            self._dirty.clear()
        self._timers.clear()
        self._waiting.clear()
        self._timer_changed.set()
        self._ready.set()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers.clear()
        if self._timer_task is not None:
            self._timer_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer_task
