"""Leader election over a coordination.k8s.io/v1 Lease, after client-go's `leaderelection`.

Several replicas of the controller run; only the one holding the Lease writes. A candidate
creates the Lease if it is missing, takes it when it is free (no holder, as a clean shutdown
leaves it) or when its holder has not renewed it for `lease_duration`, and then renews it every
`retry_period`. Expiry is judged on the local clock from when this replica last *saw the record
change*, never from the renewTime the other replica wrote: clocks of two machines disagree, the
local clock does not disagree with itself. Every write carries the resourceVersion read just
before, so of two candidates racing for the same Lease exactly one wins and the other gets 409.

A leader that cannot renew within `renew_deadline` steps down (`lost()` is set) before any other
replica may take over (`lease_duration` > `renew_deadline`), so two leaders never write at once
as long as the clocks run at the same rate. The step-down is exact, not at the next renew tick:
`remaining()` says how long this replica may still write (from the start of its last successful
renew, on the local clock), and whoever writes for the leader fences its writes with it
(`controllers.runtime.echoes.EchoedGateway`), so a leader cut off from the server stops
writing at the deadline even if the loop that notices is late.

A standby polls a held Lease every `retry_period` and tries again exactly when it would expire,
so after the leader dies without releasing (kill -9) another replica leads within
`lease_duration + retry_period` (plus one request) of the leader's last renew.

An unexpected exception in the loop (not an API error, which is expected and retried) is logged
with its traceback, steps down if leading, and is retried with backoff; `error` holds it until
an attempt succeeds, for readiness. A Lease that cannot be read, or created where it is missing
(its namespace does not exist, RBAC forbids it, the server fails), would leave the replica
waiting in silence for ever: `blocked` says why, for readiness, and the cause is logged at
ERROR once (again when it changes), then at DEBUG on each retry, until an attempt gets through.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import socket
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from apis.core import Lease, LeaseSpec
from apis.meta import ObjectMeta
from controllers.kube.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError
from controllers.kube.gateway import Gateway
from controllers.runtime.queue import Clock, LoopClock

__all__ = ["LeaderConfig", "LeaderElector", "NotLeaderError", "default_identity"]

log = logging.getLogger(__name__)

# client-go's JitterFactor: candidates started together spread their attempts.
JITTER = 1.2


class NotLeaderError(Exception):
    """A write was refused (or cut short) because this replica no longer leads: its lease
    deadline passed. Not an API error: nothing was sent, or what was sent is abandoned."""


def default_identity() -> str:
    """`<hostname>_<8 hex digits>`: unique even for two replicas on one host."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class LeaderConfig:
    """Which Lease to contend for, as whom, and the timings (client-go's defaults 15/10/2 s)."""

    name: str
    namespace: str
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election identity must not be empty")
        if min(self.lease_duration, self.renew_deadline, self.retry_period) <= 0:
            raise ValueError("lease_duration, renew_deadline and retry_period must be positive")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"lease_duration ({self.lease_duration}s) must be greater than "
                f"renew_deadline ({self.renew_deadline}s)"
            )
        if self.renew_deadline <= JITTER * self.retry_period:
            raise ValueError(
                f"renew_deadline ({self.renew_deadline}s) must be greater than "
                f"{JITTER} x retry_period ({self.retry_period}s)"
            )

    @property
    def lease_duration_seconds(self) -> int:
        """What the Lease records (whole seconds, at least 1: the API field is an integer)."""
        return max(1, math.ceil(self.lease_duration))


class LeaderElector:
    """Contends for the Lease of `config`; `run()` until cancelled, then `release()`."""

    def __init__(
        self,
        gateway: Gateway,
        config: LeaderConfig,
        *,
        clock: Clock | None = None,
        wall: Callable[[], datetime] | None = None,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self._gateway = gateway
        self._clock: Clock = clock or LoopClock()
        self._wall = wall or (lambda: datetime.now(UTC))
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._leading = asyncio.Event()
        self._lost = asyncio.Event()
        self._observed: Lease | None = None  # the Lease as last read or written
        self._observed_key: tuple[str, datetime | None, str | None] | None = None
        self._observed_at = 0.0  # local clock time the record last changed
        self._renewed: float | None = None  # local clock time the last successful renew began
        self.error: Exception | None = None
        """The unexpected exception the loop is backing off from (None once an attempt
        completes): what readiness reports."""
        self.blocked: str | None = None
        """Why the Lease cannot be read or created (None once it can): what readiness
        reports, `cannot create lease NS/NAME: <the server's answer>`."""

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    async def wait_deadline(self) -> None:
        """Return once this replica may no longer write (at once when not leading): the
        renew deadline passed without a renew, or leadership ended."""
        while (left := self.remaining()) > 0:
            await self._clock.sleep_until(self._clock.now() + left)

    def remaining(self) -> float:
        """Seconds this replica may still write for: until the renew deadline counted from the
        start of its last successful renew (0 when not leading). Writes are fenced with it."""
        if not self._leading.is_set() or self._renewed is None:
            return 0.0
        return max(0.0, self._renewed + self.config.renew_deadline - self._clock.now())

    @property
    def holder(self) -> str:
        """The holder of the Lease as last seen ("" when free or not seen yet)."""
        return (self._observed.spec.holder_identity or "") if self._observed else ""

    async def wait_leader(self) -> None:
        """Return once this instance leads (at once if it does)."""
        await self._leading.wait()

    def lost(self) -> asyncio.Event:
        """Set when leadership was held and then lost (not on a clean stop); cleared when it
        is acquired again. Whoever writes on behalf of the leader stops when it is set."""
        return self._lost

    async def run(self) -> None:
        """Acquire, renew until leadership is lost, then contend again; until cancelled. An
        unexpected exception is logged, ends leadership, and is retried with backoff."""
        delay = self.config.retry_period
        try:
            while True:
                try:
                    await self._acquire()
                    self._start_leading()
                    await self._hold()
                    self._stop_leading(lost=True)
                    delay = self.config.retry_period
                except Exception as exc:
                    self.error = exc
                    log.exception(
                        "leader election loop failed; retrying in %.3gs", delay, exc_info=exc
                    )
                    if self.is_leader:
                        self._stop_leading(lost=True)
                    await self._clock.sleep_until(self._clock.now() + delay)
                    delay = min(delay * 2, self.config.lease_duration)
        finally:
            if self.is_leader:
                self._stop_leading(lost=False)

    async def release(self) -> None:
        """Free the Lease if it names this instance, so another replica takes over at once
        instead of after `lease_duration`. Call it after cancelling `run()`."""
        cfg = self.config
        try:
            current = await self._gateway.get(Lease, cfg.name, cfg.namespace)
        except NotFoundError:
            return  # never created (its namespace missing, say): nothing to release
        except ApiError as exc:
            log.warning("leader election: cannot read lease %s to release it: %s", cfg.name, exc)
            return
        if current.spec.holder_identity != cfg.identity:
            return
        now = self._wall()
        # What client-go's ReleaseOnCancel writes: no holder, a one-second duration.
        spec = LeaseSpec(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            lease_transitions=current.spec.lease_transitions or 0,
        )
        try:
            released = await self._gateway.replace(Lease(metadata=current.metadata, spec=spec))
        except ApiError as exc:
            # Someone wrote in between (409) or the server failed: the Lease then expires.
            log.warning("leader election: cannot release lease %s: %s", cfg.name, exc)
            return
        self._observe(released, self._clock.now())
        if self.is_leader:
            self._stop_leading(lost=False)
        log.info("leader election: %s released lease %s", cfg.identity, cfg.name)

    # --- the loops ---------------------------------------------------------------------------

    async def _acquire(self) -> None:
        cfg = self.config
        period = cfg.retry_period
        while True:
            started = self._clock.now()
            if await self._try_acquire_or_renew():
                self._renewed = started
                self.error = None
                return
            self.error = None
            now = self._clock.now()
            if self.holder not in ("", cfg.identity):
                # Held by another: look every retry_period (to see each renew soon after it
                # happens) and try again the moment it would expire.
                wake = min(now + period, max(now, self._observed_at + cfg.lease_duration))
            else:
                # Free, ours from a previous life, or unreadable: candidates started together
                # spread their attempts.
                wake = now + period + random.random() * JITTER * period
            await self._clock.sleep_until(wake)

    async def _hold(self) -> None:
        """Renew every retry_period; return when leadership is lost: at the renew deadline
        exactly, when no renew succeeded within it."""
        cfg = self.config
        renewed = attempted = self._renewed if self._renewed is not None else self._clock.now()
        while True:
            await self._clock.sleep_until(
                min(attempted + cfg.retry_period, renewed + cfg.renew_deadline)
            )
            attempted = self._clock.now()
            remaining = renewed + cfg.renew_deadline - attempted
            if remaining <= 0:
                log.warning(
                    "leader election: %s failed to renew lease %s within %.3gs, stepping down",
                    cfg.identity,
                    cfg.name,
                    cfg.renew_deadline,
                )
                return
            # A hung request must not keep a leader past its deadline (on its own clock).
            ok = await _before(
                self._clock, renewed + cfg.renew_deadline, self._try_acquire_or_renew()
            )
            if ok:
                renewed = self._renewed = attempted
            elif self.holder not in ("", cfg.identity):
                log.warning(
                    "leader election: lease %s was taken by %s, stepping down",
                    cfg.name,
                    self.holder,
                )
                return

    async def _try_acquire_or_renew(self) -> bool:
        """One attempt: True when this instance holds the Lease afterwards."""
        cfg = self.config
        now = self._clock.now()
        wall = self._wall()
        try:
            current = await self._gateway.get(Lease, cfg.name, cfg.namespace)
        except NotFoundError:
            return await self._create(now, wall)
        except ApiError as exc:
            self._block("read", exc)
            return False
        self._unblock()
        self._observe(current, now)
        holder = current.spec.holder_identity or ""
        ours = holder == cfg.identity
        if holder and not ours and now < self._observed_at + cfg.lease_duration:
            return False
        old = current.spec
        spec = LeaseSpec(
            holder_identity=cfg.identity,
            lease_duration_seconds=cfg.lease_duration_seconds,
            acquire_time=old.acquire_time if ours and old.acquire_time else wall,
            renew_time=wall,
            lease_transitions=(old.lease_transitions or 0) + (0 if ours else 1),
        )
        try:
            updated = await self._gateway.replace(Lease(metadata=current.metadata, spec=spec))
        except ConflictError:
            log.debug("leader election: another candidate wrote lease %s first", cfg.name)
            return False
        except ApiError as exc:
            log.warning("leader election: cannot update lease %s: %s", cfg.name, exc)
            return False
        self._observe(updated, now)
        return True

    async def _create(self, now: float, wall: datetime) -> bool:
        cfg = self.config
        lease = Lease(
            metadata=ObjectMeta(name=cfg.name, namespace=cfg.namespace),
            spec=LeaseSpec(
                holder_identity=cfg.identity,
                lease_duration_seconds=cfg.lease_duration_seconds,
                acquire_time=wall,
                renew_time=wall,
                lease_transitions=0,
            ),
        )
        try:
            created = await self._gateway.create(lease)
        except AlreadyExistsError as exc:
            # Another candidate created it first; read it next time.
            log.debug("leader election: cannot create lease %s: %s", cfg.name, exc)
            return False
        except ApiError as exc:
            self._block("create", exc)
            return False
        self._unblock()
        self._observe(created, now)
        return True

    def _block(self, verb: str, exc: ApiError) -> None:
        cfg = self.config
        reason = f"cannot {verb} lease {cfg.namespace}/{cfg.name}: {' '.join(str(exc).split())}"
        if reason != self.blocked:
            log.error("leader election: %s; retrying every %.3gs", reason, cfg.retry_period)
        else:
            log.debug("leader election: %s", reason)
        self.blocked = reason

    def _unblock(self) -> None:
        if self.blocked is not None:
            cfg = self.config
            log.info("leader election: lease %s/%s reachable again", cfg.namespace, cfg.name)
            self.blocked = None

    def _observe(self, lease: Lease, now: float) -> None:
        spec = lease.spec
        key = (spec.holder_identity or "", spec.renew_time, lease.metadata.resource_version)
        if key != self._observed_key:
            self._observed_key = key
            self._observed_at = now
        self._observed = lease

    # --- transitions -------------------------------------------------------------------------

    def _start_leading(self) -> None:
        log.info(
            "leader election: %s became leader (lease %s)", self.config.identity, self.config.name
        )
        self._lost.clear()
        self._leading.set()
        self._notify(self._on_started)

    def _stop_leading(self, *, lost: bool) -> None:
        log.info("leader election: %s stopped leading", self.config.identity)
        self._leading.clear()
        self._renewed = None
        if lost:
            self._lost.set()
        self._notify(self._on_stopped)

    @staticmethod
    def _notify(callback: Callable[[], None] | None) -> None:
        if callback is None:
            return
        try:
            callback()
        except Exception:
            log.exception("leader election callback failed")


async def _before(clock: Clock, deadline: float, attempt: Coroutine[Any, Any, bool]) -> bool:
    """`attempt`'s answer, or False (the attempt cancelled) once `clock` reaches `deadline`."""
    task = asyncio.ensure_future(attempt)
    timer = asyncio.ensure_future(clock.sleep_until(deadline))
    try:
        await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
    if task.cancelled():
        return False
    return task.result()
