"""The reconciler: one placement key -> snapshot -> scheduler -> decision writer -> status.

It reads only in-memory state (the `FleetIndex` snapshot and the views of placements and
decisions), so a reconcile that changes nothing costs one scheduling cycle and no request.
A placement's new decisions go into the index the moment they are scheduled, before their writes
are sent ("assumed", as kube-scheduler assumes a pod on its node), so the next placement's
Balance counts them whatever the order the server answers the writes of several workers in:
the placements are scheduled in the order the queue hands them out, so a cold start decides the
same with one worker or sixteen. What the server returns comes back through the writer's sink
(write-through) into the views and the index; once the writes are done or have failed, the
index holds for those PlacementDecisions what the server holds, as the decision view has it.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from apis.errors import ModelError
from apis.placements import (
    PLACEMENT_MISCONFIGURED,
    Placement,
    PlacementDecision,
    PlacementStatus,
    is_disabled,
)
from apis.registry import parse_as
from controllers.hub.decision_view import DecisionView
from controllers.hub.fanout import Fanout
from controllers.hub.metrics import SCHEDULING_NAME, Metrics
from controllers.hub.writer import DecisionWriter, WritePlan
from controllers.runtime.logs import reconcile_context
from controllers.runtime.queue import Retry, WorkQueue
from controllers.runtime.views import Latest
from placement.arrays import RowIndex
from placement.explain import explain_json
from placement.framework import Code
from placement.index.fleet_index import FleetIndex
from placement.outcome import outcome, score_note
from placement.rows import DecisionRow, decision_row
from placement.scheduler import Scheduler, ScheduleResult
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = [
    "LOG_SUBJECT",
    "MISCONFIGURED_EVENT",
    "AssumedDecisions",
    "Reconciler",
    "WriteThrough",
    "newly_misconfigured",
]

log = logging.getLogger(__name__)

HISTORY = 100_000
LOG_SUBJECT = "placement"
"""What log lines call the key of the object being reconciled (`placement=<ns/name>`)."""


MISCONFIGURED_EVENT = "PlacementMisconfigured"
"""The reason of the Warning event on a placement that becomes misconfigured (OCM writes only
the condition; an event reaches `kubectl get events` and alerting on Warning events)."""


def _misconfigured_message(status: PlacementStatus | None) -> str | None:
    for condition in (status.conditions if status is not None else None) or ():
        if condition.type == PLACEMENT_MISCONFIGURED and condition.status == "True":
            return condition.message
    return None


def newly_misconfigured(before: PlacementStatus | None, after: PlacementStatus) -> str | None:
    """The PlacementMisconfigured message when `after` is misconfigured and `before` was not,
    or was for another reason; None otherwise (a placement retried with the same error, every
    backoff step, raises one event, not one per retry)."""
    message = _misconfigured_message(after)
    if message is None or message == _misconfigured_message(before):
        return None
    return message


class AssumedDecisions:
    """The PlacementDecisions whose rows in the index are the scheduled ones while their writes
    are in flight: the answers to those writes and the watch events of those objects update the
    views, not the index, until the reconcile settles them (a create answers with no decision
    yet, and counting that would make the next placement's Balance depend on how far the writes
    have got)."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return key in self.keys


class WriteThrough:
    """The writer's sink: what the server returned goes into the views and the index at once,
    marked as ours so that its watch event is recognised as an echo (the index only for the
    PlacementDecisions not assumed, `AssumedDecisions`)."""

    def __init__(
        self,
        placements: Latest[Placement],
        decisions: DecisionView,
        index: FleetIndex,
        fanout: Fanout,
        assumed: AssumedDecisions,
    ) -> None:
        self.placements = placements
        self.decisions = decisions
        self.index = index
        self.fanout = fanout
        self.assumed = assumed

    def written(self, obj: DecisionRow | Placement) -> None:
        if isinstance(obj, DecisionRow):
            if self.decisions.observe(obj, ours=True) and obj.key not in self.assumed:
                self.index.upsert_decision(obj)
        elif self.placements.observe(obj, ours=True):
            self.fanout.placement_upserted(obj)

    def deleted(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        if self.decisions.observe_deleted(key, ours=True) is not None and key not in self.assumed:
            self.index.delete_decision(namespace, name)


class Reconciler:
    """The work queue's handler for placement keys."""

    def __init__(
        self,
        *,
        scheduler: Scheduler,
        index: FleetIndex,
        placements: Latest[Placement],
        decisions: DecisionView,
        writer: DecisionWriter,
        queue: WorkQueue,
        metrics: Metrics,
        wall: Callable[[], datetime],
        assumed: AssumedDecisions,
    ) -> None:
        self.scheduler = scheduler
        self.index = index
        self.placements = placements
        self.decisions = decisions
        self.writer = writer
        self.queue = queue
        self.metrics = metrics
        self.wall = wall
        self.assumed = assumed
        self.causeless: set[str] = set()
        """Keys queued by the start or the periodic resync and by nothing since: their
        reconcile keeps the current decision when it is still one the scheduler may make."""
        self.history: deque[str] = deque(maxlen=HISTORY)
        """The latest keys reconciled, in order (tests read which placements ran)."""
        # The labelled series every reconcile observes, looked up once (`labels()` costs a few
        # microseconds a call, a dozen calls a reconcile).
        self._succeeded = metrics.reconciles.labels(result="success")
        self._scheduling = metrics.scheduling_duration.labels(name=SCHEDULING_NAME)
        self._binding = metrics.bind_duration.labels(name=SCHEDULING_NAME)
        self._plugins: dict[tuple[str, str], Any] = {}

    async def __call__(self, key: str) -> float | None:
        with reconcile_context(key):
            try:
                await self.reconcile(key)
            except Retry:
                self.metrics.reconciles.labels(result="requeue").inc()
                raise
            except Exception:
                self.metrics.reconciles.labels(result="error").inc()
                self.metrics.reconcile_errors.inc()
                raise
            self._succeeded.inc()
            return None

    async def reconcile(self, key: str) -> None:
        self.history.append(key)
        causeless = key in self.causeless
        self.causeless.discard(key)
        placement = self.placements.get(key)
        if placement is None or is_disabled(placement):
            return  # gone (its decisions go with it, by owner reference) or left alone
        now = self.wall()
        fleet = self.index.snapshot()
        started = time.perf_counter()
        result = self.scheduler.schedule(placement, fleet, now)
        if causeless:
            result = self._unmoved(placement, fleet, now, result)
        done = outcome(result, fleet, placement.status, now)
        plan = WritePlan(
            placement=placement,
            decisions=done.paged.rows if done.paged is not None else None,
            status=done.placement_status,
            score_note=partial(score_note, result, fleet) if done.paged is not None else "",
            warning=(
                (done.status.message, done.status.plugin)
                if done.status.code == Code.WARNING
                else None
            ),
        )
        bind_started = time.perf_counter()
        self._scheduling.observe(bind_started - started)
        for kind, plugin, seconds in result.timings:
            series = self._plugins.get((kind, plugin))
            if series is None:
                series = self._plugins[(kind, plugin)] = self.metrics.plugin_duration.labels(
                    name=SCHEDULING_NAME, plugin_type=kind, plugin_name=plugin
                )
            series.observe(seconds)
        current = self.decisions.of(placement.namespace, placement.name)
        assumed = self._assume(plan.decisions, current)
        try:
            report = await self.writer.apply(plan, current)
        finally:
            # What the server holds now, as the view has it: also when the writes stopped short
            # (a placement deleted meanwhile), whose assumed decisions were never created.
            self._settle(assumed)
        self._binding.observe(time.perf_counter() - bind_started)
        if report.wrote:
            log.info(
                "scheduled: %d selected; %s",
                done.placement_status.number_of_selected_clusters or 0,
                report.summary(),
            )
        misconfigured = newly_misconfigured(placement.status, done.placement_status)
        if misconfigured is not None:
            self.writer.recorder.record(
                placement, None, "Warning", MISCONFIGURED_EVENT, "Scheduling", misconfigured
            )
        if result.requeue_at is not None:
            # A toleration expires: schedule again then (OCM's AddAfter).
            self.queue.add_after(key, max((result.requeue_at - now).total_seconds(), 0.0))
        if done.status.code != Code.SUCCESS:
            # OCM keeps Warning, Misconfigured and Error placements in rate-limited retry.
            raise Retry(str(done.status))

    def _assume(
        self, desired: Sequence[DecisionRow | PlacementDecision] | None, current: list[DecisionRow]
    ) -> list[str]:
        """Put the placement's scheduled decisions into the index before they are written (the
        module docstring); the keys of the PlacementDecisions touched."""
        if desired is None:
            return []
        rows = [d if isinstance(d, DecisionRow) else decision_row(d) for d in desired]
        kept = {row.key for row in rows}
        for row in rows:
            self.index.upsert_decision(row)
        gone = [row for row in current if row.key not in kept]
        for row in gone:
            self.index.delete_decision(row.namespace, row.name)
        keys = [*kept, *(row.key for row in gone)]
        self.assumed.keys.update(keys)
        return keys

    def _settle(self, keys: list[str]) -> None:
        """After the writes: the index holds for `keys` what the server holds (the view)."""
        self.assumed.keys.difference_update(keys)
        for key in keys:
            row = self.decisions.get(key)
            if row is not None:
                self.index.upsert_decision(row)
            else:
                namespace, _, name = key.partition("/")
                self.index.delete_decision(namespace, name)

    def _unmoved(
        self, placement: Placement, fleet: FleetSnapshot, now: datetime, result: ScheduleResult
    ) -> ScheduleResult:
        """For a reconcile nothing asked for (the start, the resync): the result that keeps
        the current decision when the scheduler may still make it, else `result`. Nothing the
        placement reads changed, only what Balance counts of the other placements' decisions,
        and a restart or a resync must not move workloads for that (README, "Differences
        from OCM"); a schedule the placement's own inputs call for is OCM's."""
        current = fleet.decisions.rows_of(placement.namespace, placement.name)
        chosen = result.selection.rows if result.selection is not None else None
        if chosen is None or not result.status.ok or _same(chosen, current):
            return result
        if current.size == 0:
            # Nothing to keep (a cold start): `keep` would add its bonus to no cluster and
            # select what this cycle did, so that second cycle is not run.
            return result
        kept = self.scheduler.schedule(placement, fleet, now, keep=True)
        if kept.selection is not None and kept.status.ok and _same(kept.selection.rows, current):
            return kept
        return result

    # --- the debug endpoint -------------------------------------------------------------------

    def explain(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The explain JSON of the stored placement, scheduled now, nothing written."""
        placement = self.placements.get(f"{namespace}/{name}")
        if placement is None:
            return None
        return self._explain(placement)

    def dry_run(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The explain JSON of a posted Placement (OCM's `POST /debug/placements/`)."""
        try:
            placement = parse_as(Placement, doc)
        except ModelError as exc:  # the endpoint answers 400 with the message for a ValueError
            raise ValueError(str(exc)) from exc
        return self._explain(placement)

    def _explain(self, placement: Placement) -> dict[str, Any]:
        fleet = self.index.snapshot()
        result = self.scheduler.schedule(placement, fleet, self.wall(), explain=True)
        return explain_json(result, fleet)


def _same(rows: RowIndex, current: RowIndex) -> bool:
    """The same clusters (rows of one snapshot), in any order."""
    return rows.size == current.size and sorted(rows.tolist()) == sorted(current.tolist())
