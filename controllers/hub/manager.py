"""The hub placement controller as one object: the runtime's life cycle (informers, queue,
leader election, HTTP endpoint, events) wired to the placement parts: caches of rows, the
`FleetIndex`, OCM's fan-out, the views, the reconciler and the decision writer.

Watch events update the index, the views and the fan-out at once; the fan-out says which
placements to queue. Until the workers start, nothing is queued (the first lists would cost
clusters x placements in fan-out): starting queues every placement once, in key order.

OCM's debug API (`/debug/placements/`) is not on the runtime's endpoint, which the metrics
Service exposes: it has a listener of its own (`debug_addr`), meant for loopback, so that only
who may `kubectl port-forward` to the pod (RBAC `pods/portforward`) can read how every placement
was scheduled or dry-run placements of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.placements import Placement, PlacementDecision
from controllers.hub.debug import DebugRoutes
from controllers.hub.decision_view import DecisionView
from controllers.hub.decision_wire import decision_row_of_wire, row_of
from controllers.hub.fanout import Fanout
from controllers.hub.metrics import Metrics
from controllers.hub.reconciler import AssumedDecisions, Reconciler, WriteThrough
from controllers.hub.writer import DecisionWriter
from controllers.kube.answers import Answers
from controllers.kube.gateway import Gateway
from controllers.runtime.cache import Informer, Keep
from controllers.runtime.controller import Controller, ControllerOptions, StartError
from controllers.runtime.echoes import GONE, EchoedGateway, Echoes
from controllers.runtime.http import HttpServer
from controllers.runtime.queue import Clock, Handler
from controllers.runtime.views import Latest
from placement.index.fleet_index import ClusterRow, FleetIndex, ScoreRow, cluster_row, score_row
from placement.rows import DecisionRow
from placement.scheduler import Scheduler
from plugins import default_scheduler

__all__ = ["CONTROLLER_NAME", "Manager", "ManagerOptions"]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "placement-controller"
"""The reportingController of our events and the name of the leader-election Lease."""


@dataclass(frozen=True)
class ManagerOptions(ControllerOptions):
    """The runtime's options (workers, resync period, HTTP address, leader election) and where
    the debug API listens."""

    debug_addr: str | None = None
    """`/debug/placements/`; None: not served. `placement run` binds it to 127.0.0.1:8081: keep
    it on loopback, its answers show every placement and cluster the controller sees."""


# The caches keep rows of clusters, scores and decisions (what the index, the fan-out and the
# writer read), not models: at 100,000 clusters the cluster models alone would take three
# quarters of a gigabyte, and the decision models of 5,000 clusters x 2,000 placements, a fifth
# of them wide, about 400 MiB.
_CLUSTER_ROWS: Keep[ManagedCluster, ClusterRow] = Keep(cluster_row, lambda r: r.resource_version)
_SCORE_ROWS: Keep[AddOnPlacementScore, ScoreRow] = Keep(score_row, lambda r: r.resource_version)
_PD_KIND = PlacementDecision.KIND
# The echoes of the writer's PD writes come as rows made from their JSON (`decision_wire`).
_DECISION_ROWS: Keep[PlacementDecision, DecisionRow] = Keep(
    row_of, lambda r: r.resource_version, decision_row_of_wire
)


def _series(cache: dict[tuple[str, ...], Any], family: Any, **labels: str) -> Any:
    """`family.labels(**labels)`, looked up once per label values in `cache`."""
    key = tuple(labels.values())
    series = cache.get(key)
    if series is None:
        series = cache[key] = family.labels(**labels)
    return series


class Manager(Controller):
    """Wires and runs one placement controller instance against `gateway`."""

    def __init__(
        self,
        gateway: Gateway,
        options: ManagerOptions | None = None,
        *,
        scheduler: Scheduler | None = None,
        clock: Clock | None = None,
        wall: Callable[[], datetime] | None = None,
    ) -> None:
        self.metrics = Metrics()
        # Labelled series looked up once each (`labels()` costs microseconds, and a cold start
        # counts a write and an event tens of thousands of times).
        self._write_series: dict[tuple[str, ...], Any] = {}
        self._event_series: dict[tuple[str, ...], Any] = {}
        self.index = FleetIndex()
        self.fanout = Fanout()
        self.placements: Latest[Placement] = Latest()
        self.decisions = DecisionView()
        self.assumed = AssumedDecisions()
        options = options or ManagerOptions()
        self.debug_http: HttpServer | None = None
        if options.debug_addr is not None:
            debug = DebugRoutes(self._explain, self._dry_run)
            self.debug_http = HttpServer(
                address=options.debug_addr, routes=[debug], name="debug endpoint"
            )
        self.debug_address = ""
        super().__init__(
            gateway,
            options,
            name=CONTROLLER_NAME,
            metrics=self.metrics,
            clock=clock,
            wall=wall,
        )
        self.metrics.queue_depth.set_function(lambda: len(self.queue))
        # Without leader election this replica always writes: it is the leader.
        self.metrics.leader.set(1 if options.leader is None else 0)
        # The writer's answers are the objects of the watch events echoing them: shared through
        # the gateway (any answer at a resourceVersion is that version of the object).
        if gateway.answers is None:
            gateway.answers = Answers()
        # Re-queues that watch events ask for wait while a write of their object is in flight.
        self.echoes = Echoes(lambda key: self._enqueue(lambda: {key}))
        self.sink = WriteThrough(
            self.placements, self.decisions, self.index, self.fanout, self.assumed
        )
        self.writer = DecisionWriter(
            # Fenced by the lease: past its renew deadline this replica sends no more writes
            # and retries none after a 409 (issue 20: a partitioned leader kept writing).
            EchoedGateway(
                gateway, self.echoes, requeue_on_conflict=[Placement.KIND], fence=self.fence
            ),
            self.recorder,
            sink=self.sink,
            on_write=self._wrote,
            may_retry=self.may_write,
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
            assumed=self.assumed,
        )
        self.informers = self._informers()

    # --- life cycle: the runtime's, plus the debug endpoint ----------------------------------

    async def start(self, sync_timeout: float | None = 60.0) -> None:
        """The runtime's start, then the debug endpoint: it answers from the caches, so it
        listens once they have synced (and a start-up that fails before never binds it)."""
        await super().start(sync_timeout)
        if self.debug_http is not None and not self.debug_address:
            try:
                self.debug_address = await self.debug_http.start()
            except OSError as exc:
                reason = exc.strerror or str(exc) or type(exc).__name__
                raise StartError(
                    f"debug endpoint {self.debug_http.address}: cannot listen: {reason}"
                ) from None

    async def stop(self) -> None:
        await super().stop()
        if self.debug_http is not None:
            await self.debug_http.stop()
            self.debug_address = ""

    # --- the runtime's hooks -------------------------------------------------------------------

    def keys(self) -> Iterable[str]:
        """Every placement, for the start and the resync: queued without a cause, so each
        keeps a decision the scheduler may still make (`Reconciler.causeless`) until an event
        gives it one."""
        keys = self.fanout.all()
        self.reconciler.causeless.update(keys)
        return keys

    @property
    def handler(self) -> Handler:
        return self.reconciler

    def leadership_changed(self, leading: bool) -> None:
        self.metrics.leader.set(1 if leading else 0)

    def event_recorded(self, reason: str, outcome: str) -> None:
        _series(self._event_series, self.metrics.events, reason=reason, outcome=outcome).inc()

    def _wrote(self, kind: str, verb: str) -> None:
        _series(self._write_series, self.metrics.writes, kind=kind, verb=verb).inc()

    def synced_message(self) -> str:
        return (
            f"caches synced: {len(self.index)} clusters, {len(self.placements)} placements, "
            f"{len(self.decisions)} decisions"
        )

    def _explain(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.reconciler.explain(namespace, name)

    def _dry_run(self, doc: dict[str, Any]) -> dict[str, Any]:
        return self.reconciler.dry_run(doc)

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
                self.decision_changed,
                self._decision_updated,
                self._decision_gone,
                _DECISION_ROWS,
            ),
            make(Placement, self._placement_changed, self._placement_updated, self._gone),
        ]

    def _enqueue(self, keys: Callable[[], set[str]]) -> None:
        """Queue the placements `keys()` names. Until the workers start, events only update the
        caches and the fan-out is not even computed (during the first lists it would cost
        clusters x placements): starting enqueues every placement once, in key order (as
        `placement simulate` schedules them)."""
        if not self.working:
            return
        causeless = self.reconciler.causeless
        for key in keys():
            causeless.discard(key)
            self.queue.add(key)

    def _requeue(
        self, kind: str, key: str, version: str | None, keys: Callable[[], set[str]]
    ) -> None:
        """Queue `keys()` for an event of object `key`, unless it may echo one of our writes
        still in flight: then `echoes` decides once the write settles."""
        if not self.working:
            return
        placements = keys()
        if not self.echoes.hold(kind, key, version, placements):
            causeless = self.reconciler.causeless
            for placement in placements:
                causeless.discard(placement)
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

    def decision_changed(self, decision: DecisionRow) -> None:
        """A PlacementDecision added or updated, as its informer reports it."""
        if self.decisions.observe(decision):  # else an echo of our own write
            if decision.key not in self.assumed:  # else the reconcile in flight settles it
                self.index.upsert_decision(decision)
            self._requeue(
                _PD_KIND,
                decision.key,
                decision.resource_version,
                lambda: self.fanout.for_decision(decision),
            )

    def _decision_updated(self, _: DecisionRow, new: DecisionRow) -> None:
        self.decision_changed(new)

    def _decision_gone(self, decision: DecisionRow) -> None:
        if self.decisions.observe_deleted(decision.key) is not None:
            if decision.key not in self.assumed:
                self.index.delete_decision(decision.namespace, decision.name)
            self._requeue(_PD_KIND, decision.key, GONE, lambda: self.fanout.for_decision(decision))

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
