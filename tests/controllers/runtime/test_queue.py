"""The work queue: deduplication, one worker per key, delays and backoff on an injected clock,
the overall rate limit, and shutdown."""

from __future__ import annotations

import asyncio

import pytest

from controllers.runtime.queue import ManualClock, Retry, WorkQueue

pytestmark = pytest.mark.asyncio

WAIT = 5.0


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_busy_counts_queued_and_processed_keys_but_not_delayed_ones() -> None:
    clock = ManualClock()
    queue = WorkQueue(clock=clock)
    release = asyncio.Event()

    async def handle(key: str) -> None:
        await release.wait()

    def busy() -> bool:  # a call, so the checker does not narrow the property between asserts
        return queue.busy

    assert not busy()
    queue.add_after("later", 10)
    assert not busy()
    queue.add("a")
    assert busy()
    queue.start(handle)
    await _settle()
    assert busy()  # "a" is being processed
    release.set()
    await _settle()
    assert not busy()
    await queue.shutdown()


async def test_a_key_added_twice_before_processing_is_processed_once() -> None:
    queue = WorkQueue()
    seen: list[str] = []

    async def handle(key: str) -> None:
        seen.append(key)

    for key in ("a", "b", "a", "a", "c", "b"):
        queue.add(key)
    assert len(queue) == 3
    queue.start(handle, workers=2)
    await queue.shutdown()
    assert sorted(seen) == ["a", "b", "c"]


async def test_a_key_never_has_two_workers_and_is_reprocessed_after_a_mid_flight_add() -> None:
    queue = WorkQueue()
    busy: set[str] = set()
    overlap: list[str] = []
    runs: list[str] = []
    release = asyncio.Event()

    async def handle(key: str) -> None:
        if key in busy:
            overlap.append(key)
        busy.add(key)
        runs.append(key)
        if len(runs) == 1:
            await release.wait()
        busy.discard(key)

    queue.start(handle, workers=4)
    queue.add("a")
    await _settle()
    queue.add("a")  # while "a" is being processed: must wait for it
    queue.add("b")
    await _settle()
    assert runs == ["a", "b"]
    release.set()
    await queue.shutdown()
    assert runs == ["a", "b", "a"]
    assert overlap == []


async def test_workers_process_different_keys_concurrently() -> None:
    queue = WorkQueue()
    started = 0
    all_started = asyncio.Event()

    async def handle(key: str) -> None:
        nonlocal started
        started += 1
        if started == 3:
            all_started.set()
        async with asyncio.timeout(WAIT):
            await all_started.wait()  # deadlocks unless three workers run at once

    for key in ("a", "b", "c"):
        queue.add(key)
    queue.start(handle, workers=3)
    await queue.shutdown()
    assert started == 3


async def test_add_after_waits_for_the_clock() -> None:
    clock = ManualClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("a", 10)
    await _settle()
    assert len(queue) == 0
    await clock.advance(9.9)
    assert len(queue) == 0
    await clock.advance(0.1)
    assert len(queue) == 1
    await queue.shutdown(drain=False)


async def test_add_after_keeps_the_earliest_pending_time() -> None:
    clock = ManualClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("a", 10)
    queue.add_after("a", 3)
    queue.add_after("a", 20)
    await clock.advance(3)
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    await clock.advance(20)
    assert len(queue) == 0
    await queue.shutdown(drain=False)


async def test_backoff_doubles_per_failure_up_to_the_cap_and_forget_resets_it() -> None:
    queue = WorkQueue(clock=ManualClock(), base_delay=1, max_delay=10, qps=1000, burst=1000)
    assert [queue.when("a") for _ in range(6)] == [1, 2, 4, 8, 10, 10]
    assert queue.when("b") == 1  # per key
    assert queue.failures("a") == 6
    queue.forget("a")
    assert queue.when("a") == 1


async def test_overall_rate_limit_spaces_out_requeues_beyond_the_burst() -> None:
    clock = ManualClock()
    queue = WorkQueue(clock=clock, base_delay=0.001, qps=2, burst=3)
    delays = [queue.when(f"k{i}") for i in range(5)]
    assert delays[:3] == [0.001] * 3
    assert delays[3:] == [0.5, 1.0]
    await clock.advance(10)  # the bucket refills
    assert queue.when("k9") == 0.001


async def test_failed_reconcile_is_retried_after_its_backoff() -> None:
    clock = ManualClock()
    queue = WorkQueue(clock=clock, base_delay=5, qps=1000, burst=1000)
    attempts: list[float] = []

    async def handle(key: str) -> None:
        attempts.append(clock.now())
        if len(attempts) < 3:
            raise RuntimeError("transient")

    queue.start(handle, workers=1)
    queue.add("a")
    await _settle()
    await clock.advance(4.9)
    assert attempts == [0.0]
    await clock.advance(0.1)
    assert attempts == [0.0, 5.0]
    await clock.advance(10)  # second failure: 10 s
    assert attempts == [0.0, 5.0, 15.0]
    assert queue.failures("a") == 0  # success forgets
    await queue.shutdown()


async def test_handler_result_requeues_after_that_many_seconds() -> None:
    clock = ManualClock()
    queue = WorkQueue(clock=clock)
    runs: list[float] = []

    async def handle(key: str) -> float | None:
        runs.append(clock.now())
        return 30.0 if len(runs) == 1 else None

    queue.start(handle)
    queue.add("a")
    await _settle()
    await clock.advance(30)
    await _settle()
    assert runs == [0.0, 30.0]
    await queue.shutdown()


async def test_retry_requeues_with_growing_backoff_without_logging_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    queue = WorkQueue(clock=clock, base_delay=5, qps=1000, burst=1000)
    runs: list[float] = []

    async def handle(key: str) -> None:
        runs.append(clock.now())
        raise Retry("expired add-on score")

    queue.start(handle)
    queue.add("a")
    await _settle()
    await clock.advance(5)
    await clock.advance(10)
    assert runs == [0.0, 5.0, 15.0]
    assert queue.failures("a") == 3
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    await queue.shutdown()


async def test_shutdown_drains_queued_keys_and_drops_delayed_ones() -> None:
    clock = ManualClock()
    queue = WorkQueue(clock=clock)
    seen: list[str] = []

    async def handle(key: str) -> None:
        await asyncio.sleep(0)
        seen.append(key)

    for key in ("a", "b", "c"):
        queue.add(key)
    queue.add_after("later", 5)
    queue.start(handle, workers=1)
    async with asyncio.timeout(WAIT):
        await queue.shutdown(drain=True)
    assert seen == ["a", "b", "c"]
    queue.add("d")  # ignored once shut down
    await clock.advance(5)
    assert len(queue) == 0


async def test_shutdown_without_drain_drops_queued_keys() -> None:
    queue = WorkQueue()
    seen: list[str] = []

    async def handle(key: str) -> None:
        seen.append(key)

    for key in ("a", "b"):
        queue.add(key)
    await queue.shutdown(drain=False)
    queue.start(handle)
    await queue.shutdown()
    assert seen == []


# --- the metrics hook ---------------------------------------------------------------------------


class Heard:
    """A QueueMetrics that writes down what the queue reports, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | int]] = []

    def added(self, key: str) -> None:
        self.calls.append(("added", key))

    def started(self, key: str) -> None:
        self.calls.append(("started", key))

    def finished(self, key: str) -> None:
        self.calls.append(("finished", key))

    def retried(self, key: str) -> None:
        self.calls.append(("retried", key))

    def dropped(self, keys: int) -> None:
        self.calls.append(("dropped", keys))


async def test_the_metrics_hook_hears_each_add_take_and_done_once_per_run() -> None:
    heard = Heard()
    queue = WorkQueue(metrics=heard)
    release = asyncio.Event()

    async def handle(key: str) -> None:
        if release.is_set():
            return
        queue.add("a")  # while "a" is processed: owed one more run
        queue.add("a")  # ... still one
        release.set()

    queue.add("a")
    queue.add("a")  # deduplicated: not heard
    queue.start(handle)
    await _settle()
    await queue.shutdown()
    assert heard.calls == [
        ("added", "a"),
        ("started", "a"),
        ("added", "a"),
        ("finished", "a"),
        ("started", "a"),
        ("finished", "a"),
    ]


async def test_the_metrics_hook_counts_every_delayed_add_as_a_retry_as_client_go_does() -> None:
    heard = Heard()
    clock = ManualClock()
    queue = WorkQueue(clock=clock, metrics=heard, base_delay=1, qps=1000, burst=1000)
    queue.add_after("a", 5)
    queue.add_after("a", 9)  # a later time than the pending one: still a retry asked for
    queue.add_rate_limited("b")
    await clock.advance(5)
    assert heard.calls == [
        ("retried", "a"),
        ("retried", "a"),
        ("retried", "b"),
        ("added", "b"),
        ("added", "a"),
    ]
    await queue.shutdown(drain=False)


async def test_the_metrics_hook_hears_a_failed_reconcile_as_a_retry() -> None:
    heard = Heard()
    clock = ManualClock()
    queue = WorkQueue(clock=clock, metrics=heard, base_delay=1, qps=1000, burst=1000)

    async def handle(key: str) -> None:
        raise RuntimeError("boom")

    queue.add("a")
    queue.start(handle)
    await _settle()
    assert heard.calls == [("added", "a"), ("started", "a"), ("retried", "a"), ("finished", "a")]
    await queue.shutdown(drain=False)


async def test_shutdown_without_drain_tells_the_hook_how_many_due_keys_it_dropped() -> None:
    heard = Heard()
    queue = WorkQueue(metrics=heard)
    for key in ("a", "b", "c"):
        queue.add(key)
    await queue.shutdown(drain=False)
    assert heard.calls[-1] == ("dropped", 3)


async def test_shutdown_with_cancel_cancels_the_handlers_in_flight() -> None:
    # Issue 20: a replica that lost leadership must not finish its reconciles.
    queue = WorkQueue()
    started = asyncio.Event()
    finished: list[str] = []

    async def handler(key: str) -> float | None:
        started.set()
        await asyncio.sleep(30)
        finished.append(key)
        return None

    queue.start(handler, workers=1)
    queue.add("a")
    queue.add("b")
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.wait_for(queue.shutdown(drain=True, cancel=True), 5)
    assert finished == []
    assert not queue.busy


async def test_a_worker_that_dies_outside_the_handler_is_replaced() -> None:
    queue = WorkQueue()
    done: list[str] = []

    async def handler(key: str) -> float | None:
        done.append(key)
        return float("nan") if key == "bad" else None

    original = queue.add_after

    def broken_add_after(key: str, delay: float) -> None:
        if delay != delay:  # NaN: a bug outside the handler's own error handling
            raise ValueError("delay is NaN")
        original(key, delay)

    queue.add_after = broken_add_after  # type: ignore[method-assign]
    queue.start(handler, workers=1)
    queue.add("bad")
    await asyncio.sleep(0.05)
    queue.add("good")
    for _ in range(100):
        if "good" in done:
            break
        await asyncio.sleep(0.01)
    assert done == ["bad", "good"]
    await queue.shutdown()
