"""The decision writer: makes a placement's PlacementDecisions and status on the hub match what
scheduling produced (as OCM's writer does, docs/replacing-ocm.md), writing nothing when they
already match.

The PDs come first, written by `controllers.hub.decision_run` in the order of
`controllers.hub.decision_steps` (no still-selected cluster ever vanishes,
docs/replacing-ocm.md; events and the other deliberate differences from OCM are described
there). `decisions=None` (misconfigured or failed scheduling, docs/replacing-ocm.md) leaves
every PD untouched. Then the Placement status, by one merge patch of the fields that differ. A
placement deleted while it is being reconciled (its status patch, or the re-read after a 409,
answers 404) ends the write quietly: nothing is left to write to, and its PlacementDecisions go
with it (their owner reference).

Writes that depend on the cached state carry its resourceVersion, so a stale cache shows up as
409 Conflict: the object is re-read and written again (for the PDs, the remaining steps are
planned again from what the server holds) — but only while `may_retry()` says this replica
still leads: a 409 is also how a stale leader meets its successor's writes, and re-planning
over them is a fight (`NotLeaderError` ends the reconcile instead). Every object the server
returns goes to the `WriteSink`, also when a later write fails, so the reconciler's cache never
lags behind our own writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from apis.placements import Placement, PlacementDecision, PlacementStatus
from controllers.hub.decision_run import DecisionRun
from controllers.kube.errors import ConflictError, NotFoundError
from controllers.kube.gateway import Gateway
from controllers.runtime.events import EventRecorder
from controllers.runtime.leader import NotLeaderError
from controllers.runtime.patches import merge_patch_between
from placement.rows import DecisionRow

__all__ = [
    "DecisionWriter",
    "WritePlan",
    "WriteReport",
    "WriteSink",
]

log = logging.getLogger(__name__)

PD_KIND = PlacementDecision.KIND


@dataclass(frozen=True)
class WritePlan:
    """What one reconcile wants on the hub for one placement."""

    placement: Placement  # as cached: metadata.uid, resourceVersion and current status
    # The desired PDs from `placement.decisions.paginate` (its rows, or its models); None keeps
    # the current ones untouched.
    decisions: Sequence[DecisionRow | PlacementDecision] | None
    status: PlacementStatus  # the desired Placement status
    # The ScoreUpdate note, formatted and capped by the caller; a callable is called only when
    # a PD's decisions change (most reconciles change nothing and record no event).
    score_note: str | Callable[[], str]
    warning: tuple[str, str] | None = None  # (message, plugin) when scheduling said Warning


class WriteSink(Protocol):
    """The reconciler's write-through cache."""

    def written(self, obj: DecisionRow | Placement) -> None:
        """`obj` as the server returned it (a PlacementDecision as its row)."""

    def deleted(self, namespace: str, name: str) -> None:
        """A PlacementDecision that is gone."""


@dataclass
class WriteReport:
    """What `apply` wrote. Carriers (temporary PDs of a cycle) are listed apart."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    status_patched: bool = False
    carriers: list[str] = field(default_factory=list)

    @property
    def wrote(self) -> bool:
        return bool(
            self.created or self.updated or self.deleted or self.status_patched or self.carriers
        )

    def summary(self) -> str:
        """What was written, as a log line says it: `decisions created a, b; deleted c; status
        patched` (names comma-separated, what was not written left out)."""
        done = [
            f"{verb} {', '.join(names)}"
            for verb, names in (
                ("created", self.created),
                ("updated", self.updated),
                ("deleted", self.deleted),
            )
            if names
        ]
        parts = [f"decisions {'; '.join(done)}"] if done else []
        if self.status_patched:
            parts.append("status patched")
        if self.carriers:
            parts.append(f"carriers {', '.join(self.carriers)}")
        return "; ".join(parts) or "nothing written"


def _status_wire(status: PlacementStatus) -> dict[str, Any]:
    """The status as on the wire without nulls (the server drops them). Every field of a
    PlacementStatus is typed, so pydantic's exclude_none drops every null there is, as
    `without_nulls` would, at a third of the cost (it runs twice per reconcile)."""
    return status.model_dump(by_alias=True, exclude_unset=True, exclude_none=True, mode="json")


class DecisionWriter:
    """Applies `WritePlan`s; one `apply` per placement at a time (the work queue's job)."""

    def __init__(
        self,
        gateway: Gateway,
        recorder: EventRecorder,
        *,
        sink: WriteSink | None = None,
        max_conflict_retries: int = 3,
        on_write: Callable[[str, str], None] | None = None,
        may_retry: Callable[[], bool] = lambda: True,
    ) -> None:
        self.gateway = gateway
        self.recorder = recorder
        self._sink = sink
        self.max_conflict_retries = max_conflict_retries
        self._on_write = on_write
        self.may_retry = may_retry
        """Whether a write that met 409 may be retried (this replica still leads)."""

    async def apply(
        self, plan: WritePlan, current: Sequence[DecisionRow | PlacementDecision]
    ) -> WriteReport:
        """Write the PDs (when `plan.decisions` is not None), then the placement status.

        `current` holds the placement's PDs as cached (possibly stale). ApiErrors other than
        the stale-cache ones handled here propagate; whatever was written before is already in
        the sink.
        """
        report = WriteReport()
        if plan.decisions is not None:
            run = DecisionRun(
                self.gateway,
                self.recorder,
                plan.placement,
                plan.decisions,
                current,
                warning=plan.warning,
                score_note=plan.score_note,
                report=report,
                written=self._written,
                deleted=self._deleted,
                max_conflict_retries=self.max_conflict_retries,
                may_retry=self.may_retry,
            )
            await run.run()
        await self._write_status(plan, report)
        return report

    # --- bookkeeping, shared with the DecisionRun --------------------------------------------

    def _written(self, obj: DecisionRow | Placement, verb: str | None) -> None:
        if self._sink is not None:
            self._sink.written(obj)
        if verb is not None and self._on_write is not None:
            self._on_write(PD_KIND if isinstance(obj, DecisionRow) else obj.KIND, verb)

    def _deleted(self, namespace: str, name: str, wrote: bool) -> None:
        if self._sink is not None:
            self._sink.deleted(namespace, name)
        if wrote and self._on_write is not None:
            self._on_write(PD_KIND, "delete")

    # --- placement status --------------------------------------------------------------------

    async def _write_status(self, plan: WritePlan, report: WriteReport) -> None:
        try:
            await self._patch_status(plan, report)
        except NotFoundError:
            log.info(
                "placement %s was deleted meanwhile: its status is not written", plan.placement.key
            )

    async def _patch_status(self, plan: WritePlan, report: WriteReport) -> None:
        placement = plan.placement
        new = _status_wire(plan.status)
        for attempt in range(self.max_conflict_retries + 1):
            old = _status_wire(placement.status) if placement.status else {}
            if old == new:
                return
            patch = {
                "metadata": {"resourceVersion": placement.metadata.resource_version},
                "status": merge_patch_between(old, new),
            }
            try:
                written = await self.gateway.patch_status(
                    Placement, placement.name, patch, placement.namespace
                )
            except ConflictError as exc:
                if attempt == self.max_conflict_retries:
                    raise
                if not self.may_retry():
                    raise NotLeaderError(f"409 on placement {placement.key}, not retried") from exc
                placement = await self.gateway.get(Placement, placement.name, placement.namespace)
                self._written(placement, None)
                continue
            self._written(written, "patch")
            report.status_patched = True
            return
