"""The decision writer: makes a placement's PlacementDecisions and status on the hub match what
scheduling produced (OCM reference §1.6, §1.8), writing nothing when they already match.

Differences from OCM, on purpose:

* No transient disappearance (DESIGN §4.2): writes follow `controllers.hub.decision_steps`, so a
  cluster selected before and after is always in at least one of the placement's PDs and no PD
  ever holds more than 100 decisions.
* Labels and owner references are patched whenever they differ from the desired ones (OCM patches
  labels only in a reconcile where the decisions did not change). Only the desired label keys are
  compared and set: labels others add are left alone. The one controller owner reference is the
  placement's.
* `decisions=None` (misconfigured or failed scheduling, DESIGN §4.3) leaves every PD untouched.
* An empty PD gets `status.decisions: []` written once after its create (OCM leaves the status
  out, its semantic comparison taking nil for []), so readers always find the list.

Events are OCM's (regarding the placement, related the PD): `DecisionCreate` on create;
`DecisionUpdate` (Warning when scheduling warned) then `ScoreUpdate` whenever a PD's decisions
change, including the first write right after a create, as OCM's create-then-update-status does;
`DecisionDelete` on delete. Carriers emit nothing.

Writes that depend on the cached state carry its resourceVersion, so a stale cache shows up as
409 Conflict: the object is re-read and the remaining steps are planned again from what the
server holds. Every object the server returns goes to the `WriteSink`, also when a later write
fails, so the reconciler's cache never lags behind our own writes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from apis.meta import ObjectMeta
from apis.placements import (
    PLACEMENT_LABEL,
    Placement,
    PlacementDecision,
    PlacementStatus,
)
from controllers.hub.decision_steps import Create, Delete, Page, Step, Update, plan_steps
from controllers.kube.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    NotFoundError,
)
from controllers.kube.gateway import Gateway
from controllers.runtime.events import EventRecorder, EventType

__all__ = [
    "DecisionWriter",
    "WritePlan",
    "WriteReport",
    "WriteSink",
    "merge_patch_between",
]

PD_KIND = PlacementDecision.KIND


@dataclass(frozen=True)
class WritePlan:
    """What one reconcile wants on the hub for one placement."""

    placement: Placement  # as cached: metadata.uid, resourceVersion and current status
    # The desired PDs from `placement.decisions.paginate`; None keeps the current ones untouched.
    decisions: Sequence[PlacementDecision] | None
    status: PlacementStatus  # the desired Placement status
    score_note: str  # the ScoreUpdate note, formatted and capped by the caller
    warning: tuple[str, str] | None = None  # (message, plugin) when scheduling said Warning


class WriteSink(Protocol):
    """The reconciler's write-through cache."""

    def written(self, obj: PlacementDecision | Placement) -> None:
        """`obj` as the server returned it."""

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


def _pruned(value: Any) -> Any:
    # The API server drops nulls, so a field set to None and an absent one are the same.
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def merge_patch_between(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The RFC 7386 merge patch turning `old` into `new` (lists are replaced whole)."""
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key)
        if before == value:
            continue
        if isinstance(before, dict) and isinstance(value, dict):
            patch[key] = merge_patch_between(before, value)
        else:
            patch[key] = value
    return patch


DecisionKey = tuple[tuple[str, str, int | None], ...]


def _decision_key(pd: PlacementDecision) -> DecisionKey | None:
    # Compared on every reconcile, so plain tuples rather than wire dicts. None (no status at
    # all, as a create leaves it) differs from an empty list: an empty PD gets
    # `status.decisions: []` written once, so readers always find the list.
    if pd.status is None:
        return None
    return tuple((d.cluster_name, d.reason, d.score) for d in pd.status.decisions)


def _decisions(pd: PlacementDecision) -> list[dict[str, Any]]:
    return [_pruned(d.to_wire()) for d in (pd.status.decisions if pd.status else [])]


def _clusters(pd: PlacementDecision) -> tuple[str, ...]:
    return tuple(d.cluster_name for d in (pd.status.decisions if pd.status else []))


def _owners_key(refs: Sequence[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(ref, sort_keys=True) for ref in refs)


def _metadata_patch(have: PlacementDecision, want: PlacementDecision) -> dict[str, Any]:
    """The label and ownerReference changes `have` needs ({} when none)."""
    patch: dict[str, Any] = {}
    labels = have.metadata.labels or {}
    changed = {k: v for k, v in (want.metadata.labels or {}).items() if labels.get(k) != v}
    if changed:
        patch["labels"] = changed
    now = [_pruned(ref.to_wire()) for ref in have.metadata.owner_references or []]
    wanted = [_pruned(ref.to_wire()) for ref in want.metadata.owner_references or []]
    uids = {ref.get("uid") for ref in wanted}
    # Another controller's reference (an earlier placement of the same name) has to go.
    merged = [r for r in now if r.get("uid") not in uids and not r.get("controller")] + wanted
    if _owners_key(merged) != _owners_key(now):
        patch["ownerReferences"] = merged
    return patch


class _StaleError(Exception):
    """The cached copy of `name` was stale; `cause` is what the server said."""

    def __init__(self, name: str, cause: ApiError) -> None:
        super().__init__(name)
        self.name = name
        self.cause = cause


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
    ) -> None:
        self.gateway = gateway
        self.recorder = recorder
        self._sink = sink
        self.max_conflict_retries = max_conflict_retries
        self._on_write = on_write

    async def apply(self, plan: WritePlan, current: Sequence[PlacementDecision]) -> WriteReport:
        """Write the PDs (when `plan.decisions` is not None), then the placement status.

        `current` holds the placement's PDs as cached (possibly stale). ApiErrors other than
        the stale-cache ones handled here propagate; whatever was written before is already in
        the sink.
        """
        report = WriteReport()
        if plan.decisions is not None:
            await _Run(self, plan, current, report).run()
        await self._write_status(plan, report)
        return report

    # --- bookkeeping shared with _Run ----------------------------------------------------------

    def _written(self, obj: PlacementDecision | Placement, verb: str | None) -> None:
        if self._sink is not None:
            self._sink.written(obj)
        if verb is not None and self._on_write is not None:
            self._on_write(obj.KIND, verb)

    def _deleted(self, namespace: str, name: str, wrote: bool) -> None:
        if self._sink is not None:
            self._sink.deleted(namespace, name)
        if wrote and self._on_write is not None:
            self._on_write(PD_KIND, "delete")

    # --- placement status --------------------------------------------------------------------

    async def _write_status(self, plan: WritePlan, report: WriteReport) -> None:
        placement = plan.placement
        new = _pruned(plan.status.to_wire())
        for attempt in range(self.max_conflict_retries + 1):
            old = _pruned(placement.status.to_wire()) if placement.status else {}
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
            except ConflictError:
                if attempt == self.max_conflict_retries:
                    raise
                placement = await self.gateway.get(Placement, placement.name, placement.namespace)
                self._written(placement, None)
                continue
            self._written(written, "patch")
            report.status_patched = True
            return


class _Run:
    """One `apply` of a plan's decisions: the server state as we know it, the steps, and the
    re-planning after a stale cache."""

    def __init__(
        self,
        writer: DecisionWriter,
        plan: WritePlan,
        current: Sequence[PlacementDecision],
        report: WriteReport,
    ) -> None:
        self.writer = writer
        self.gateway = writer.gateway
        self.recorder = writer.recorder
        self.carrier_names: set[str] = set()
        self.plan = plan
        self.report = report
        self.placement = plan.placement
        self.namespace = plan.placement.namespace
        self.want = {pd.name: pd for pd in plan.decisions or ()}
        # Only this placement's PDs, whatever the caller passed: deleting another placement's
        # decisions would be far worse than missing a stale one.
        self.view = {
            pd.name: pd
            for pd in current
            if pd.namespace == self.namespace
            and (pd.metadata.labels or {}).get(PLACEMENT_LABEL) == self.placement.name
        }
        self.recoveries: Counter[str] = Counter()

    async def run(self) -> None:
        while True:
            try:
                await self._execute(self._steps())
                return
            except _StaleError as stale:
                await self._recover(stale)

    def _steps(self) -> list[Step]:
        rewrite = [
            name
            for name, want in self.want.items()
            if name in self.view
            and _clusters(self.view[name]) == _clusters(want)
            and _decision_key(self.view[name]) != _decision_key(want)
        ]
        return plan_steps(
            [Page(name, _clusters(pd)) for name, pd in self.view.items()],
            [Page(name, _clusters(pd)) for name, pd in self.want.items()],
            carrier_prefix=f"{self.placement.name}-decision-",
            rewrite=rewrite,
        )

    async def _execute(self, steps: list[Step]) -> None:
        fixed = False
        for step in steps:
            if isinstance(step, Delete) and not fixed:
                await self._fix_metadata()
                fixed = True
            if isinstance(step, Create):
                await self._create(step)
            elif isinstance(step, Update):
                await self._update(step.name)
            else:
                await self._delete(step)
        if not fixed:
            await self._fix_metadata()

    async def _recover(self, stale: _StaleError) -> None:
        name, cause = stale.name, stale.cause
        self.recoveries[name] += 1
        # A conflict may repeat while someone else keeps writing; AlreadyExists and NotFound are
        # settled by one re-read, so they get one attempt more than the conflict budget.
        limit = self.writer.max_conflict_retries
        if isinstance(cause, AlreadyExistsError | NotFoundError):
            limit += 1
        if self.recoveries[name] > limit:
            raise cause
        try:
            fresh = await self.gateway.get(PlacementDecision, name, self.namespace)
        except NotFoundError:
            self.view.pop(name, None)
            self.writer._deleted(self.namespace, name, wrote=False)
            return
        self.view[name] = fresh
        self.writer._written(fresh, None)

    # --- steps -------------------------------------------------------------------------------

    def _event(self, pd: PlacementDecision, reason: str, action: str, verb: str) -> None:
        p = self.placement
        note = f"Decision {pd.name} is {verb} with placement {p.name} in namespace {p.namespace}"
        kind: EventType = "Normal"
        if reason == "DecisionUpdate" and self.plan.warning is not None:
            message, plugin = self.plan.warning
            note = f"{note}: {message} in plugin {plugin}"
            kind = "Warning"
        self.recorder.record(p, pd, kind, reason, action, note)
        if reason == "DecisionUpdate":
            self.recorder.record(
                p, pd, "Normal", "ScoreUpdate", "ScoreUpdated", self.plan.score_note
            )

    async def _create(self, step: Create) -> None:
        if step.carrier_for is None:
            template = self.want[step.name]
            labels = template.metadata.labels
        else:
            # A carrier keeps the labels of the PD it relieves: consumers see its clusters in
            # the group they were in until the move completes.
            template = next(iter(self.want.values()))
            labels = self.view[step.carrier_for].metadata.labels
        body = PlacementDecision(
            metadata=ObjectMeta(
                name=step.name,
                namespace=self.namespace,
                labels=dict(labels or {}),
                owner_references=list(template.metadata.owner_references or []),
            )
        )
        try:
            created = await self.gateway.create(body)
        except AlreadyExistsError as exc:
            raise _StaleError(step.name, exc) from exc
        self.view[step.name] = created
        self.writer._written(created, "create")
        if step.carrier_for is None:
            self.report.created.append(step.name)
            self._event(created, "DecisionCreate", "DecisionCreated", "created")
        else:
            self.report.carriers.append(step.name)
            self.carrier_names.add(step.name)
        decisions = (
            _decisions(self.want[step.name])
            if step.carrier_for is None
            else [{"clusterName": c, "reason": ""} for c in step.clusters]
        )
        if created.status is None or decisions != _decisions(created):
            await self._write_decisions(created, decisions, announce=step.carrier_for is None)

    async def _update(self, name: str) -> None:
        await self._write_decisions(self.view[name], _decisions(self.want[name]), announce=True)
        if name not in self.report.updated:
            self.report.updated.append(name)

    async def _write_decisions(
        self, pd: PlacementDecision, decisions: list[dict[str, Any]], *, announce: bool
    ) -> None:
        patch = {
            "metadata": {"resourceVersion": pd.metadata.resource_version},
            "status": {"decisions": decisions},
        }
        try:
            written = await self.gateway.patch_status(
                PlacementDecision, pd.name, patch, self.namespace
            )
        except (ConflictError, NotFoundError) as exc:
            raise _StaleError(pd.name, exc) from exc
        self.view[pd.name] = written
        self.writer._written(written, "patch")
        # A missing status filled with an empty list is no change of decisions: no event.
        if announce and _decisions(pd) != decisions:
            self._event(written, "DecisionUpdate", "DecisionUpdated", "updated")

    async def _fix_metadata(self) -> None:
        for name, want in self.want.items():
            have = self.view.get(name)
            if have is None:
                continue
            changes = _metadata_patch(have, want)
            if not changes:
                continue
            changes["resourceVersion"] = have.metadata.resource_version
            try:
                written = await self.gateway.merge_patch(
                    PlacementDecision, name, {"metadata": changes}, self.namespace
                )
            except (ConflictError, NotFoundError) as exc:
                raise _StaleError(name, exc) from exc
            self.view[name] = written
            self.writer._written(written, "patch")
            if name not in self.report.updated and name not in self.report.created:
                self.report.updated.append(name)

    async def _delete(self, step: Delete) -> None:
        pd = self.view.get(step.name)
        try:
            await self.gateway.delete(PlacementDecision, step.name, self.namespace)
        except NotFoundError:
            gone = False
        else:
            gone = True
        self.view.pop(step.name, None)
        self.writer._deleted(self.namespace, step.name, wrote=gone)
        if step.carrier or step.name in self.carrier_names:
            return
        if gone:
            self.report.deleted.append(step.name)
            if pd is not None:
                self._event(pd, "DecisionDelete", "DecisionDeleted", "deleted")
