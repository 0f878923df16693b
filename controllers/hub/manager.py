"""The hub controller as one object: caches, fan-out, index, queue, reconciler, writer, leader
election and the HTTP endpoint, started and stopped in the right order.

Start: the HTTP endpoint answers at once (`/readyz` says what it waits for), the caches list and
watch, and once every cache has synced (and, with leader election, once this replica leads) the
workers start on the placements the caches queued. Stop (SIGTERM): no new keys are taken, the
reconciles in flight finish their writes, pending events are flushed, the lease is released so a
standby takes over at once, then the caches and the endpoint close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.placements import Placement, PlacementDecision
from controllers.hub.fanout import Fanout
from controllers.hub.reconciler import EchoedGateway, Reconciler, WriteThrough
from controllers.hub.writer import DecisionWriter
from controllers.kube.gateway import Gateway
from controllers.runtime.cache import Informer, Keep
from controllers.runtime.events import EventRecorder
from controllers.runtime.http import HttpServer
from controllers.runtime.leader import LeaderConfig, LeaderElector
from controllers.runtime.metrics import Metrics
from controllers.runtime.queue import Clock, LoopClock, WorkQueue
from controllers.runtime.views import GONE, DecisionView, Echoes, Latest
from placement.index import ClusterRow, FleetIndex, ScoreRow, cluster_row, score_row
from placement.scheduler import Scheduler
from plugins import default_scheduler

__all__ = ["Manager", "ManagerOptions"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ManagerOptions:
    workers: int = 4
    resync: float = 600.0
    """Every placement is scheduled again this often (OCM's informer resync is 10 minutes)."""
    http_addr: str | None = "127.0.0.1:8080"
    """None: no HTTP endpoint (tests running several controllers)."""
    leader: LeaderConfig | None = None
    """None: no leader election, this instance always writes."""


# The caches keep rows of clusters and scores (what the index and the fan-out read), not
# models: at 100,000 clusters the models alone would take three quarters of a gigabyte.
_CLUSTER_ROWS: Keep[ManagedCluster, ClusterRow] = Keep(cluster_row, lambda r: r.resource_version)
_SCORE_ROWS: Keep[AddOnPlacementScore, ScoreRow] = Keep(score_row, lambda r: r.resource_version)


class Manager:
    """Wires and runs one controller instance against `gateway`."""

    def __init__(
        self,
        gateway: Gateway,
        options: ManagerOptions | None = None,
        *,
        scheduler: Scheduler | None = None,
        clock: Clock | None = None,
        wall: Callable[[], datetime] | None = None,
    ) -> None:
        self.gateway = gateway
        self.options = options or ManagerOptions()
        self.clock: Clock = clock or LoopClock()
        self.wall = wall or (lambda: datetime.now(UTC))
        self.metrics = Metrics()
        self.index = FleetIndex()
        self.fanout = Fanout()
        self.placements: Latest[Placement] = Latest()
        self.decisions = DecisionView()
        self.queue = WorkQueue(clock=self.clock)
        self.metrics.queue_depth.set_function(lambda: len(self.queue))
        self.recorder = EventRecorder(
            gateway,
            wall=self.wall,
            on_recorded=lambda reason, outcome: self.metrics.events.labels(
                reason=reason, outcome=outcome
            ).inc(),
        )
        # Re-queues that watch events ask for wait while a write of their object is in flight.
        self.echoes = Echoes(lambda key: self._enqueue(lambda: {key}))
        self.writer = DecisionWriter(
            EchoedGateway(gateway, self.echoes),
            self.recorder,
            sink=WriteThrough(self.placements, self.decisions, self.index, self.fanout),
            on_write=lambda kind, verb: self.metrics.writes.labels(kind=kind, verb=verb).inc(),
        )
        self.reconciler = Reconciler(
            scheduler=scheduler or default_scheduler(),
            index=self.index,
            placements=self.placements,
            decisions=self.decisions,
            writer=self.writer,
            queue=self.queue,
            metrics=self.metrics,
            wall=self.wall,
        )
        self.elector: LeaderElector | None = None
        if self.options.leader is not None:
            self.elector = LeaderElector(
                gateway,
                self.options.leader,
                clock=self.clock,
                wall=self.wall,
                on_started_leading=lambda: self.metrics.leader.set(1),
                on_stopped_leading=lambda: self.metrics.leader.set(0),
            )
        self.http: HttpServer | None = None
        if self.options.http_addr is not None:
            self.http = HttpServer(
                address=self.options.http_addr,
                metrics=self.metrics,
                ready=self.ready,
                explain=self.reconciler.explain,
                dry_run=self.reconciler.dry_run,
            )
        self.http_address = ""
        self.informers: list[Informer[Any, Any]] = self._informers()
        self._tasks: list[asyncio.Task[None]] = []
        self._working = False
        self._stopped = asyncio.Event()

    # --- watch events -> index, fan-out, queue -------------------------------------------

    def _informers(self) -> list[Informer[Any, Any]]:
        def make(cls: type[Any], add: Any, update: Any, delete: Any, keep: Any = None) -> Any:
            return Informer(
                self.gateway, cls, keep=keep, on_add=add, on_update=update, on_delete=delete
            )

        return [
            make(
                ManagedCluster,
                self._cluster_added,
                self._cluster_updated,
                self._cluster_gone,
                _CLUSTER_ROWS,
            ),
            make(ManagedClusterSet, self._set_changed, self._set_updated, self._set_gone),
            make(
                ManagedClusterSetBinding,
                self._binding_changed,
                self._binding_updated,
                self._binding_gone,
            ),
            make(
                AddOnPlacementScore,
                self._score_changed,
                self._score_updated,
                self._score_gone,
                _SCORE_ROWS,
            ),
            make(
                PlacementDecision,
                self._decision_changed,
                self._decision_updated,
                self._decision_gone,
            ),
            make(Placement, self._placement_changed, self._placement_updated, self._gone),
        ]

    def _enqueue(self, keys: Callable[[], set[str]]) -> None:
        """Queue the placements `keys()` names. Until the workers start, events only update the
        caches and the fan-out is not even computed (during the first lists it would cost
        clusters x placements): starting enqueues every placement once, in key order (as
        `placement simulate` schedules them)."""
        if not self._working:
            return
        for key in keys():
            self.queue.add(key)

    def _requeue(
        self, kind: str, key: str, version: str | None, keys: Callable[[], set[str]]
    ) -> None:
        """Queue `keys()` for an event of object `key`, unless it may echo one of our writes
        still in flight: then `echoes` decides once the write settles."""
        if not self._working:
            return
        placements = keys()
        if not self.echoes.hold(kind, key, version, placements):
            for placement in placements:
                self.queue.add(placement)

    def _cluster_added(self, cluster: ClusterRow) -> None:
        self.index.upsert_cluster(cluster)
        self._enqueue(lambda: self.fanout.for_cluster(cluster.labels))

    def _cluster_updated(self, old: ClusterRow, new: ClusterRow) -> None:
        self.index.upsert_cluster(new)  # always: cache and index share one row per cluster
        if old == new:
            # Rows compare what the scheduler reads: an update that changes none of it (a
            # heartbeat, a condition) re-queues nothing. OCM re-queues on every update; at
            # 5,000 clusters the heartbeats alone would keep every placement busy.
            return
        self._enqueue(lambda: self.fanout.for_cluster(old.labels, new.labels))

    def _cluster_gone(self, cluster: ClusterRow) -> None:
        self.index.delete_cluster(cluster.name)
        self._enqueue(lambda: self.fanout.for_cluster(cluster.labels))

    def _set_changed(self, cluster_set: ManagedClusterSet) -> None:
        self.index.upsert_cluster_set(cluster_set)
        self.fanout.set_upserted(cluster_set)
        self._enqueue(lambda: self.fanout.for_set(cluster_set.name))

    def _set_updated(self, _: ManagedClusterSet, new: ManagedClusterSet) -> None:
        self._set_changed(new)

    def _set_gone(self, cluster_set: ManagedClusterSet) -> None:
        self.index.delete_cluster_set(cluster_set.name)
        self.fanout.set_deleted(cluster_set.name)
        self._enqueue(lambda: self.fanout.for_set(cluster_set.name))

    def _binding_changed(self, binding: ManagedClusterSetBinding) -> None:
        self.index.upsert_binding(binding)
        self.fanout.binding_upserted(binding)
        self._enqueue(lambda: self.fanout.for_binding(binding.namespace, binding.name))

    def _binding_updated(self, _: ManagedClusterSetBinding, new: ManagedClusterSetBinding) -> None:
        self._binding_changed(new)

    def _binding_gone(self, binding: ManagedClusterSetBinding) -> None:
        self.index.delete_binding(binding.namespace, binding.name)
        self.fanout.binding_deleted(binding.namespace, binding.name)
        self._enqueue(lambda: self.fanout.for_binding(binding.namespace, binding.name))

    def _score_changed(self, score: ScoreRow) -> None:
        self.index.upsert_score(score)
        self._enqueue(lambda: self._score_keys(score))

    def _score_updated(self, _: ScoreRow, new: ScoreRow) -> None:
        self._score_changed(new)

    def _score_gone(self, score: ScoreRow) -> None:
        self.index.delete_score(score.namespace, score.name)
        self._enqueue(lambda: self._score_keys(score))

    def _score_keys(self, score: ScoreRow) -> set[str]:
        cluster = self.index.cluster(score.namespace)
        return self.fanout.for_score(score, cluster.labels if cluster is not None else None)

    def _decision_changed(self, decision: PlacementDecision) -> None:
        if self.decisions.observe(decision):  # else an echo of our own write
            self.index.upsert_decision(decision)
            self._requeue(
                decision.KIND,
                decision.key,
                decision.metadata.resource_version,
                lambda: self.fanout.for_decision(decision),
            )

    def _decision_updated(self, _: PlacementDecision, new: PlacementDecision) -> None:
        self._decision_changed(new)

    def _decision_gone(self, decision: PlacementDecision) -> None:
        if self.decisions.observe_deleted(decision.key) is not None:
            self.index.delete_decision(decision.namespace, decision.name)
            self._requeue(
                decision.KIND, decision.key, GONE, lambda: self.fanout.for_decision(decision)
            )

    def _placement_changed(self, placement: Placement) -> None:
        if self.placements.observe(placement):  # else an echo of our own status patch
            self.fanout.placement_upserted(placement)
            self._requeue(
                placement.KIND,
                placement.key,
                placement.metadata.resource_version,
                lambda: {placement.key},
            )

    def _placement_updated(self, _: Placement, new: Placement) -> None:
        self._placement_changed(new)

    def _gone(self, placement: Placement) -> None:
        self.placements.observe_deleted(placement.key)
        self.fanout.placement_deleted(placement.key)
        self._enqueue(lambda: {placement.key})

    # --- life cycle ------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return all(informer.synced for informer in self.informers)

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def ready(self) -> tuple[bool, str]:
        if not self.synced:
            waiting = [i.cls.KIND for i in self.informers if not i.synced]
            return False, f"caches not synced: {', '.join(waiting)}"
        return True, "leader" if self.leading else "standby"

    async def start(self, sync_timeout: float | None = 60.0) -> None:
        """Start everything; returns once the caches have synced (workers start when this
        replica leads, possibly later)."""
        if self.http is not None:
            self.http_address = await self.http.start()
        for informer in self.informers:
            informer.start()
        await asyncio.gather(*(i.wait_synced(sync_timeout) for i in self.informers))
        log.info(
            "caches synced: %d clusters, %d placements, %d decisions",
            len(self.index),
            len(self.placements),
            len(self.decisions),
        )
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
            log.error("leadership lost: stopping so that only the new leader writes")
            self._stopped.set()
        finally:
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner

    def _start_working(self) -> None:
        if self._working:
            return
        self._working = True
        for key in self.fanout.all():
            self.queue.add(key)
        self.queue.start(self.reconciler, workers=self.options.workers)
        log.info("started %d workers", self.options.workers)

    async def _resync(self) -> None:
        while True:
            await self.clock.sleep_until(self.clock.now() + self.options.resync)
            self.resync_now()

    def resync_now(self) -> None:
        """Queue every placement (what the periodic resync does)."""
        if self._working:
            for key in self.fanout.all():
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
        """Returns when the manager must stop on its own (leadership lost)."""
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
            self.metrics.leader.set(0)
        for informer in self.informers:
            await informer.stop()
        if self.http is not None:
            await self.http.stop()
        self._working = False
        log.info("stopped")
