"""How a controller process runs: start, serve until a signal or until a controller stops on
its own (it lost its leadership), stop, and say why, the same way for the hub controller and
the pod scheduler.

`run_until_signal` starts the controllers with SIGINT and SIGTERM already caught, so a signal
during start-up (caches still listing) stops at once with exit code 0. A start-up failure of
one of the expected kinds prints one line, `error: ...`, on stderr after everything opened is
closed (the last line a person reads), and exits 1. Once running it prints one line on stdout
(what runs, where its HTTP endpoint listens) and waits: a signal is exit 0, a controller that
stops by itself (lost leadership) exit 1.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar

__all__ = [
    "GC_THRESHOLDS",
    "HUB_GC_THRESHOLDS",
    "Running",
    "freeze_at_exit",
    "run_until_signal",
    "tune_gc",
]

log = logging.getLogger(__name__)

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


GC_THRESHOLDS = (50_000, 50, 100)
HUB_GC_THRESHOLDS = (200_000, 50, 100)
"""The hub controller's: every object alive at a young collection (the requests and events
in flight, thousands at a cold start) is moved to the middle generation, which is walked
again at each of its own collections; four times fewer young collections moved four times
fewer, and the middle collections' share of a 5,000 x 10,000 cold start went from 1.06 s of
CPU to 0.03 s (the young ones' from 1.47 s to 1.56 s, the peak RSS the same)."""


_freeze_registered: list[bool] = []


def tune_gc(thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> None:
    """Collect young objects less often. The controller keeps hundreds of thousands of
    long-lived models (every cluster, placement, decision and score) and allocates many small
    objects per request; with Python's default thresholds the collector took a third of a
    5,000 x 10,000 cold start (perf/RESULTS.md). The pod scheduler keeps as many (pods, nodes).
    Process-wide, so only entry points call it; it also calls `freeze_at_exit`."""
    gc.set_threshold(*thresholds)
    freeze_at_exit()


def freeze_at_exit() -> None:
    """Freeze the heap at exit, so that the interpreter's last full collection skips it. That
    collection walked every object still alive between the last log line of a stop and the
    exit: 0.4 s for a pod scheduler with 1,500 pods cached, 1 s for a hub controller with
    5,000 clusters and 10,000 placements, 0.3 s for the webhook (most of its SIGTERM to exit).
    Process-wide, so only entry points call it."""
    if not _freeze_registered:
        atexit.register(gc.freeze)
        _freeze_registered.append(True)


class Running(Protocol):
    """A started controller: `wait_stopped` returns when it stops by itself."""

    async def wait_stopped(self) -> None: ...


R = TypeVar("R", bound=Running)


async def run_until_signal(
    start: Coroutine[Any, Any, Sequence[R]],
    *,
    running: Callable[[Sequence[R]], str],
    close: Callable[[], Awaitable[None]],
    start_errors: tuple[type[Exception], ...],
) -> int:
    """Run `start` (the controllers it returns), print `running(controllers)`, and serve; see
    the module docstring. `close` stops whatever start-up opened, however it ended."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in _SIGNALS:
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    failure = ""
    try:
        starting = asyncio.create_task(start, name="start-up")
        signalled = asyncio.create_task(stop.wait(), name="signal")
        await asyncio.wait({starting, signalled}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
            log.info("stopped by a signal during start-up")
            return 0
        signalled.cancel()
        try:
            controllers = starting.result()
        except start_errors as exc:
            failure = f"error: {exc}"
            return 1
        print(running(controllers), flush=True)
        signalled = asyncio.create_task(stop.wait(), name="signal")
        lost = [asyncio.create_task(c.wait_stopped(), name="leadership lost") for c in controllers]
        await asyncio.wait({signalled, *lost}, return_when=asyncio.FIRST_COMPLETED)
        code = 1 if any(task.done() for task in lost) else 0
        for task in (signalled, *lost):
            task.cancel()
        return code
    finally:
        await close()
        for sig in _SIGNALS:
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(sig)
        if failure:  # last, after the log lines of the stop: what a person reads first
            print(failure, file=sys.stderr)
