"""The PlacementDecision writes of one `DecisionWriter.apply`: the steps that
`controllers.hub.decision_steps` plans, executed against the API server, and planned again from
what the server holds whenever the cached PDs turn out to be stale.

Differences from OCM, on purpose:

* No transient disappearance (docs/replacing-ocm.md, differences from OCM): writes follow the
  steps, so a cluster selected before and after is always in at least one of the placement's PDs
  and no PD ever holds more than 100 decisions.
* Labels and owner references are patched whenever they differ from the desired ones (OCM patches
  labels only in a reconcile where the decisions did not change). Only the desired label keys are
  compared and set: labels others add are left alone. The one controller owner reference is the
  placement's.
* An empty PD gets `status.decisions: []` written once after its create (OCM leaves the status
  out, its semantic comparison taking nil for []), so readers always find the list.
* A PD whose decision group changes (its group labels) while its decisions change never shows
  a cluster under a group it is in neither before nor after: the clusters leaving it are
  dropped first, then it is relabelled, then the clusters joining it are added (OCM writes the
  new decisions under the old labels, so a consumer reading groups, a rollout's mandatory
  group for one, sees them in the wrong group until the labels follow). Labels that change
  with the same decisions are patched after the other writes, as before.

Events are OCM's (regarding the placement, related the PD): `DecisionCreate` on create;
`DecisionUpdate` (Warning when scheduling warned) then `ScoreUpdate` whenever a PD's decisions
change, including the first write right after a create, as OCM's create-then-update-status does;
`DecisionDelete` on delete. Carriers emit nothing.

Writes carry the cached resourceVersion, so a stale cache shows up as 409 Conflict (or as
AlreadyExists on a create, NotFound on a patch): the object is re-read and the remaining steps
are planned again from what the server holds, unless this replica no longer leads
(`may_retry`): a stale leader's 409 is its successor's write, not a stale cache. The run knows
nothing of the writer: it is handed the plan's parts, the report to fill and where to announce
what the server returned.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from apis.meta import ObjectMeta, OwnerReference
from apis.placements import Placement, PlacementDecision
from controllers.hub.decision_steps import Create, Delete, Page, Step, Update, plan_steps
from controllers.hub.decision_wire import decision_row_of_wire, row_of
from controllers.kube.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    NotFoundError,
)
from controllers.kube.gateway import Gateway
from controllers.runtime.events import EventRecorder, EventType, Reference
from controllers.runtime.leader import NotLeaderError
from placement.rows import DecisionRow, decision_row

__all__ = ["DecisionRun", "Deleted", "StepReport", "Written"]

_ROWS = decision_row_of_wire  # PD answers are read as rows, not models (`decision_wire`)

# A PD as the server returned it (its row), and the verb that wrote it (None: a re-read).
Written = Callable[[DecisionRow, str | None], None]
# A PD that is gone (namespace, name), and whether it was our delete that removed it.
Deleted = Callable[[str, str, bool], None]


class StepReport(Protocol):
    """The names of the PDs a run wrote (`controllers.hub.writer.WriteReport` is one)."""

    created: list[str]
    updated: list[str]
    deleted: list[str]
    carriers: list[str]


# --- a PD as held against the PD as wanted ------------------------------------------------------


def _owners_key(refs: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted(json.dumps(ref, sort_keys=True) for ref in refs)


def _metadata_patch(have: DecisionRow, want: DecisionRow) -> dict[str, Any]:
    """The label and ownerReference changes `have` needs ({} when none)."""
    patch: dict[str, Any] = {}
    labels = have.labels
    changed = {k: v for k, v in want.labels.items() if labels.get(k) != v}
    if changed:
        patch["labels"] = changed
    if have.owners == want.owners:
        return patch
    now = [dict(ref) for ref in have.owners]
    wanted = [dict(ref) for ref in want.owners]
    uids = {ref.get("uid") for ref in wanted}
    # Another controller's reference (an earlier placement of the same name) has to go.
    merged = [r for r in now if r.get("uid") not in uids and not r.get("controller")] + wanted
    if _owners_key(merged) != _owners_key(now):
        patch["ownerReferences"] = merged
    return patch


def _related(row: DecisionRow) -> Reference:
    """A PD as an event's `related` reference names it."""
    kind = PlacementDecision
    namespace = row.namespace or None
    return Reference(
        kind.api_version_string(), kind.KIND, row.name, namespace, row.uid, row.resource_version
    )


class _StaleError(Exception):
    """The cached copy of `name` was stale; `cause` is what the server said."""

    def __init__(self, name: str, cause: ApiError) -> None:
        super().__init__(name)
        self.name = name
        self.cause = cause


class DecisionRun:
    """One `apply` of a plan's decisions: the server state as we know it, the steps, and the
    re-planning after a stale cache."""

    def __init__(
        self,
        gateway: Gateway,
        recorder: EventRecorder,
        placement: Placement,  # as cached
        want: Sequence[DecisionRow | PlacementDecision],  # the desired PDs, from `paginate`
        current: Sequence[DecisionRow | PlacementDecision],  # as cached, possibly stale
        *,
        warning: tuple[str, str] | None,  # (message, plugin) when scheduling said Warning
        score_note: str | Callable[[], str],  # the ScoreUpdate note, or how to make it
        report: StepReport,
        written: Written,
        deleted: Deleted,
        max_conflict_retries: int,
        may_retry: Callable[[], bool] = lambda: True,
    ) -> None:
        self.gateway = gateway
        self.may_retry = may_retry
        self.recorder = recorder
        self.warning = warning
        self._score_note = score_note
        self.report = report
        self.written = written
        self.deleted = deleted
        self.max_conflict_retries = max_conflict_retries
        self.carrier_names: set[str] = set()
        self.placement = placement
        self.namespace = placement.namespace
        self.want = {
            pd.name: pd if isinstance(pd, DecisionRow) else decision_row(pd) for pd in want
        }
        rows = (pd if isinstance(pd, DecisionRow) else decision_row(pd) for pd in current)
        # Only this placement's PDs, whatever the caller passed: deleting another placement's
        # decisions would be far worse than missing a stale one.
        self.view = {
            row.name: row
            for row in rows
            if row.namespace == self.namespace and row.placement_name == self.placement.name
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
            and self.view[name].clusters == want.clusters
            and self.view[name].entries() != want.entries()
        ]
        unchanged = not rewrite and self.view.keys() == self.want.keys()
        if unchanged and all(row.clusters == self.want[n].clusters for n, row in self.view.items()):
            return []  # the common reconcile: every page as wanted
        return plan_steps(
            [Page(name, row.clusters) for name, row in self.view.items()],
            [Page(name, row.clusters) for name, row in self.want.items()],
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
        limit = self.max_conflict_retries
        if isinstance(cause, AlreadyExistsError | NotFoundError):
            limit += 1
        if self.recoveries[name] > limit:
            raise cause
        if not self.may_retry():
            raise NotLeaderError(f"{cause.reason or 'stale'} on {name}, not retried") from cause
        try:
            fresh = await self.gateway.get(PlacementDecision, name, self.namespace)
        except NotFoundError:
            self.view.pop(name, None)
            self.deleted(self.namespace, name, False)
            return
        self.view[name] = row = decision_row(fresh)
        self.written(row, None)

    # --- steps -------------------------------------------------------------------------------

    def _event(self, pd: Reference, reason: str, action: str, verb: str) -> None:
        p = self.placement
        note = f"Decision {pd.name} is {verb} with placement {p.name} in namespace {p.namespace}"
        kind: EventType = "Normal"
        if reason == "DecisionUpdate" and self.warning is not None:
            message, plugin = self.warning
            note = f"{note}: {message} in plugin {plugin}"
            kind = "Warning"
        self.recorder.record(p, pd, kind, reason, action, note)
        if reason == "DecisionUpdate":
            self.recorder.record(p, pd, "Normal", "ScoreUpdate", "ScoreUpdated", self.score_note)

    @property
    def score_note(self) -> str:
        """The ScoreUpdate note, made once on first use."""
        if not isinstance(self._score_note, str):
            self._score_note = self._score_note()
        return self._score_note

    async def _create(self, step: Create) -> None:
        labels: Mapping[str, str]
        if step.carrier_for is None:
            template = self.want[step.name]
            labels = template.labels
        else:
            # A carrier keeps the labels of the PD it relieves: consumers see its clusters in
            # the group they were in until the move completes.
            template = next(iter(self.want.values()))
            labels = self.view[step.carrier_for].labels
        body = PlacementDecision(
            metadata=ObjectMeta(
                name=step.name,
                namespace=self.namespace,
                labels=dict(labels),
                owner_references=[OwnerReference.model_validate(o) for o in template.owners],
            )
        )
        try:
            row = row_of(await self.gateway.create_kept(body, decision_row_of_wire))
        except AlreadyExistsError as exc:
            raise _StaleError(step.name, exc) from exc
        self.view[step.name] = row
        self.written(row, "create")
        if step.carrier_for is None:
            self.report.created.append(step.name)
            self._event(_related(row), "DecisionCreate", "DecisionCreated", "created")
        else:
            self.report.carriers.append(step.name)
            self.carrier_names.add(step.name)
        decisions = (
            self.want[step.name].wire_decisions()
            if step.carrier_for is None
            else [{"clusterName": c, "reason": ""} for c in step.clusters]
        )
        if not row.has_status or decisions != row.wire_decisions():
            await self._write_decisions(row, decisions, announce=step.carrier_for is None)

    async def _update(self, name: str) -> None:
        target = self.want[name]
        want = target.wire_decisions()
        have = self.view[name]
        if _metadata_patch(have, target):
            # Another group (or page) for this PD: drop the clusters that leave it (each is
            # already anchored elsewhere, as for any update), relabel, then add those joining.
            staying = set(target.clusters)
            now = have.wire_decisions()
            kept = [d for d in now if d["clusterName"] in staying]
            if kept != now:
                await self._write_decisions(have, kept, announce=kept == want)
            await self._fix_metadata_of(name)
        # (Unless the drop above was the whole change.)
        reached = self.view[name] is not have and self.view[name].wire_decisions() == want
        if not reached:
            await self._write_decisions(self.view[name], want, announce=True, since=have)
        self._updated(name)

    def _updated(self, name: str) -> None:
        if name not in self.report.updated:
            self.report.updated.append(name)

    async def _write_decisions(
        self,
        pd: DecisionRow,
        decisions: list[dict[str, Any]],
        *,
        announce: bool,
        since: DecisionRow | None = None,
    ) -> None:
        """Write `decisions` into `pd` (as cached); with `announce`, a DecisionUpdate when they
        differ from those of `since` (default `pd`: the PD before this update began)."""
        patch = {
            "metadata": {"resourceVersion": pd.resource_version},
            "status": {"decisions": decisions},
        }
        try:
            written = await self.gateway.merge_patch_kept(
                PlacementDecision, pd.name, patch, self.namespace, status=True, rows=_ROWS
            )
        except (ConflictError, NotFoundError) as exc:
            raise _StaleError(pd.name, exc) from exc
        self.view[pd.name] = row = row_of(written)
        self.written(row, "patch")
        # A missing status filled with an empty list is no change of decisions: no event.
        if announce and (since or pd).wire_decisions() != decisions:
            self._event(_related(row), "DecisionUpdate", "DecisionUpdated", "updated")

    async def _fix_metadata(self) -> None:
        for name in self.want:
            await self._fix_metadata_of(name)

    async def _fix_metadata_of(self, name: str) -> None:
        have = self.view.get(name)
        if have is None:
            return
        changes = _metadata_patch(have, self.want[name])
        if not changes:
            return
        changes["resourceVersion"] = have.resource_version
        try:
            written = await self.gateway.merge_patch_kept(
                PlacementDecision, name, {"metadata": changes}, self.namespace, rows=_ROWS
            )
        except (ConflictError, NotFoundError) as exc:
            raise _StaleError(name, exc) from exc
        self.view[name] = row = row_of(written)
        self.written(row, "patch")
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
        self.deleted(self.namespace, step.name, gone)
        if step.carrier or step.name in self.carrier_names:
            return
        if gone:
            self.report.deleted.append(step.name)
            if pd is not None:
                self._event(_related(pd), "DecisionDelete", "DecisionDeleted", "deleted")
