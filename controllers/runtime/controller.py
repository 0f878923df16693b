"""The life cycle every controller of ours shares: informers, a work queue and its workers,
leader election, the periodic resync, the HTTP endpoint and the event recorder, started and
stopped in the right order.

Start: the HTTP endpoint answers at once (`/readyz` says what it waits for), the informers list
and watch, and once every cache has synced (and, with leader election, once this replica leads)
the workers start on every key the controller owns. Stop (SIGTERM): no new keys are taken, the
reconciles in flight finish their writes, pending events are flushed, the lease is released so
a standby takes over at once, then the informers and the endpoint close.

Leadership lost is not a stop: the reconciles in flight are cancelled at once (their writes
would race the new leader's), and `wait_stopped` returns so that the process exits. Writes
are fenced by the lease (`fence`, see `controllers.runtime.echoes`): past the renew deadline on
the local clock nothing more is sent, even before the election loop notices.

Nothing dies silently: an informer, worker or the election loop that meets an unexpected
exception logs it and retries with backoff, and `/readyz` says unready while an informer is
not watching or the election loop is failing.

A start that cannot complete raises `StartError`, one line saying what failed: the address the
endpoint could not listen on, or which informers did not sync in time and why (their last list
error), or which one stopped. Cancelling `start` (a signal during start-up) leaves what it
started for `stop` to close.

A controller subclasses `Controller`, builds its informers in its constructor and says which
keys it owns (`keys`) and what reconciles one (`handler`); the hooks `leadership_changed` and
`event_recorded` are for its metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from controllers.kube.errors import ApiError, NotFoundError
from controllers.kube.gateway import Gateway
from controllers.runtime.cache import Informer
from controllers.runtime.events import EventRecorder
from controllers.runtime.http import HttpServer, Routes
from controllers.runtime.leader import LeaderConfig, LeaderElector, NotLeaderError
from controllers.runtime.metrics import MetricsRegistry
from controllers.runtime.queue import Clock, Handler, LoopClock, WorkQueue

__all__ = [
    "Controller",
    "ControllerOptions",
    "RetryRounds",
    "StartError",
    "failure_reasons",
    "sync_informers",
    "unsynced_reasons",
]

log = logging.getLogger(__name__)

# "GET /apis/...: detail" -> "detail": the request is the same for all informers but the path.
_REQUEST = re.compile(r"^[A-Z]+ /\S*: ")


class StartError(Exception):
    """The controller could not start; the message is one line saying what failed."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def unsynced_reasons(informers: Iterable[Informer[Any, Any]]) -> str:
    """Why these informers have not synced, informers with the same reason grouped:
    `ManagedCluster, Placement: list failed: Cannot connect to host ...; Lease: no answer yet`.
    """
    return failure_reasons((i.cls.KIND, i.last_error, i.failed_verb) for i in informers)


def failure_reasons(failures: Iterable[tuple[str, BaseException | None, str]]) -> str:
    """(kind, its last error or None, the verb that failed) grouped by reason, as
    `unsynced_reasons` says them."""
    groups: dict[str, list[str]] = {}
    for kind, error, verb in failures:
        if error is None:
            reason = "no answer yet"
        elif not isinstance(error, ApiError):
            reason = f"{verb} failed: {type(error).__name__}: {_one_line(error)[:300]}"
        elif isinstance(error, NotFoundError):
            # The server's words name the resource; the kinds listed say the same, shorter.
            reason = f"not served by the server (404 on {verb}: is its CRD installed?)"
        else:
            reason = f"{verb} failed: " + _REQUEST.sub("", _one_line(error))
        groups.setdefault(reason, []).append(kind)
    return "; ".join(f"{', '.join(kinds)}: {reason}" for reason, kinds in groups.items())


class RetryRounds:
    """The `on_retry` listener of a group of informers: one line per retry round for all of
    them in trouble (not synced, or failing), not one per kind, logged when the slowest of them
    has failed once more; one line when every informer lists and watches again."""

    def __init__(self, informers: Sequence[Informer[Any, Any]]) -> None:
        self.informers = informers
        self.round = 0  # the retry round last logged

    def __call__(self, _: Informer[Any, Any]) -> None:
        troubled = [i for i in self.informers if not i.synced or i.failures_in_a_row]
        if not troubled:
            if self.round:
                log.info("every informer lists and watches again")
            self.round = 0
            return
        attempt = min(i.failures_in_a_row for i in troubled)
        if attempt <= self.round:
            return
        self.round = attempt
        synced = all(i.synced for i in self.informers)
        log.warning(
            "%s (attempt %d): %s; retrying in %.2gs",
            "informers not watching" if synced else "caches not synced",
            attempt,
            unsynced_reasons(troubled),
            max(i.retry_in for i in troubled),
        )


async def sync_informers(informers: Sequence[Informer[Any, Any]], timeout: float | None) -> None:
    """Start the informers and wait for every first list; `StartError` when one stops (a bug or
    a broken object: nothing retries it) or the time is up (which kinds and why)."""
    runs: dict[asyncio.Future[Any], Informer[Any, Any]] = {
        informer.start(): informer for informer in informers
    }
    synced: asyncio.Future[Any] = asyncio.ensure_future(
        asyncio.gather(*(informer.wait_synced() for informer in informers))
    )
    try:
        async with asyncio.timeout(timeout):
            while not synced.done():
                done, _ = await asyncio.wait({synced, *runs}, return_when=asyncio.FIRST_COMPLETED)
                for run in done & runs.keys():
                    informer = runs.pop(run)
                    if not informer.synced:
                        error = None if run.cancelled() else run.exception()
                        why = f": {_one_line(error)}" if error is not None else ""
                        raise StartError(f"{informer.cls.KIND} informer stopped{why}")
    except TimeoutError:
        waiting = [informer for informer in informers if not informer.synced]
        raise StartError(
            f"caches not synced after {timeout:g}s: {unsynced_reasons(waiting)}"
        ) from None
    finally:
        synced.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await synced


@dataclass(frozen=True)
class ControllerOptions:
    workers: int = 4
    resync: float = 600.0
    """Every key is reconciled again this often (OCM's informer resync is 10 minutes)."""
    http_addr: str | None = "127.0.0.1:8080"
    """None: no HTTP endpoint (tests running several controllers)."""
    leader: LeaderConfig | None = None
    """None: no leader election, this instance always writes."""


class Controller:
    """One controller instance against `gateway`, reporting events as `name`."""

    def __init__(
        self,
        gateway: Gateway,
        options: ControllerOptions,
        *,
        name: str,
        metrics: MetricsRegistry,
        routes: Sequence[Routes] = (),
        clock: Clock | None = None,
        wall: Callable[[], datetime] | None = None,
    ) -> None:
        self.gateway = gateway
        self.options = options
        self.clock: Clock = clock or LoopClock()
        self.wall = wall or (lambda: datetime.now(UTC))
        # The runtime's own series (workqueue_*, rest_client_requests_total) in the controller's
        # registry, labelled with its name and its API server.
        self.queue = WorkQueue(clock=self.clock, metrics=metrics.workqueue(name))
        gateway.observe_requests = metrics.request_observer(gateway.host)
        self.recorder = EventRecorder(
            gateway, controller=name, wall=self.wall, on_recorded=self.event_recorded
        )
        self.elector: LeaderElector | None = None
        if options.leader is not None:
            self.elector = LeaderElector(
                gateway,
                options.leader,
                clock=self.clock,
                wall=self.wall,
                on_started_leading=lambda: self.leadership_changed(True),
                on_stopped_leading=lambda: self.leadership_changed(False),
            )
        self.http: HttpServer | None = None
        if options.http_addr is not None:
            self.http = HttpServer(
                address=options.http_addr, metrics=metrics, ready=self.ready, routes=routes
            )
        self.http_address = ""
        self.informers: list[Informer[Any, Any]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._working = False
        self._stopped = asyncio.Event()

    # --- what a controller supplies ------------------------------------------------------------

    def keys(self) -> Iterable[str]:
        """Every key the controller owns, in the order the workers should first take them."""
        raise NotImplementedError

    @property
    def handler(self) -> Handler:
        """What reconciles one key (the work queue's handler)."""
        raise NotImplementedError

    def leadership_changed(self, leading: bool) -> None:
        """Called when this replica starts or stops leading."""

    def event_recorded(self, reason: str, outcome: str) -> None:
        """Called once per event recorded: `created`, `patched` (a series begins), `counted` (a
        later one of a series), `failed` or `dropped`."""

    @property
    def working(self) -> bool:
        """Whether the workers have started: until then events only fill the caches."""
        return self._working

    # --- life cycle ------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return all(informer.synced for informer in self.informers)

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader

    @property
    def fence(self) -> LeaderElector | None:
        """What fences this replica's writes (None: no leader election, always writes)."""
        return self.elector

    def may_write(self) -> bool:
        """Whether a write may be sent now: no election, or the lease deadline not passed."""
        return self.elector is None or self.elector.remaining() > 0

    def ready(self) -> tuple[bool, str]:
        if not self.synced:
            waiting = [i.cls.KIND for i in self.informers if not i.synced]
            return False, f"caches not synced: {', '.join(waiting)}"
        stalled = [i for i in self.informers if not i.watching]
        if stalled:
            return False, f"informers not watching: {unsynced_reasons(stalled)}"
        if self.elector is not None and self.elector.error is not None:
            return False, f"leader election failing: {_one_line(self.elector.error)[:300]}"
        if self.elector is not None and self.elector.blocked is not None:
            return False, f"leader election: {self.elector.blocked[:300]}"
        return True, "leader" if self.leading else "standby"

    def synced_message(self) -> str:
        """What the log line announcing synced caches says."""
        return "caches synced"

    async def start(self, sync_timeout: float | None = 60.0) -> None:
        """Start everything; returns once the caches have synced (workers start when this
        replica leads, possibly later). `StartError` when the endpoint cannot listen, an
        informer stops, or the caches have not synced within `sync_timeout` seconds."""
        if self.http is not None:
            try:
                self.http_address = await self.http.start()
            except OSError as exc:
                reason = exc.strerror or _one_line(exc)
                raise StartError(
                    f"HTTP endpoint {self.options.http_addr}: cannot listen: {reason}"
                ) from None
        rounds = RetryRounds(self.informers)
        for informer in self.informers:
            informer.on_retry = rounds
        await sync_informers(self.informers, sync_timeout)
        log.info("%s", self.synced_message())
        if self.elector is None:
            self._start_working()
        else:
            self._tasks.append(asyncio.create_task(self._elect(), name="leader election"))
        self._tasks.append(asyncio.create_task(self._resync(), name="resync"))

    async def _elect(self) -> None:
        assert self.elector is not None
        runner = asyncio.create_task(self.elector.run(), name="lease")
        try:
            await self.elector.wait_leader()
            self._start_working()
            await self.elector.lost().wait()
            log.error("leadership lost: cancelling the reconciles in flight and stopping")
            await self.queue.shutdown(drain=False, cancel=True)
            self._stopped.set()
        finally:
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner

    def _start_working(self) -> None:
        if self._working:
            return
        self._working = True
        for key in self.keys():
            self.queue.add(key)
        self.queue.start(self._fenced(self.handler), workers=self.options.workers)
        log.info("started %d workers", self.options.workers)

    @staticmethod
    def _fenced(handler: Handler) -> Handler:
        """The handler, with a write refused for lost leadership ending the reconcile quietly:
        the key is not retried (the workers are about to be cancelled)."""

        async def run(key: str) -> float | None:
            try:
                return await handler(key)
            except NotLeaderError as exc:
                log.warning("reconcile of %s stopped: %s", key, exc)
                return None

        return run

    async def _resync(self) -> None:
        while True:
            await self.clock.sleep_until(self.clock.now() + self.options.resync)
            try:
                self.resync_now()
            except Exception:
                log.exception("resync failed; trying again at the next period")

    def resync_now(self) -> None:
        """Queue every key (what the periodic resync does)."""
        if self._working:
            for key in self.keys():
                self.queue.add(key)

    @property
    def busy(self) -> bool:
        """Keys queued or being reconciled (delayed keys do not count)."""
        return self.queue.busy

    async def wait_idle(self, timeout: float = 30.0, settle: float = 0.05) -> None:
        """Wait until no key is queued or in flight for `settle` seconds in a row."""
        async with asyncio.timeout(timeout):
            quiet_since: float | None = None
            loop = asyncio.get_running_loop()
            while True:
                if self.busy or not self.synced:
                    quiet_since = None
                elif quiet_since is None:
                    quiet_since = loop.time()
                elif loop.time() - quiet_since >= settle:
                    return
                await asyncio.sleep(0.005)

    async def wait_stopped(self) -> None:
        """Returns when the controller must stop on its own (leadership lost)."""
        await self._stopped.wait()

    async def stop(self) -> None:
        """Graceful stop: finish in-flight writes, flush events, release the lease."""
        await self.queue.shutdown(drain=False)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await self.recorder.flush()
        if self.elector is not None:
            await self.elector.release()
            self.leadership_changed(False)
        for informer in self.informers:
            await informer.stop()
        if self.http is not None:
            await self.http.stop()
        self._working = False
        log.info("stopped")
