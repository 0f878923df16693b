"""The decision writer against the embedded API server through the real client: PDs as paginate
builds them, nothing written when nothing changed, stale PDs deleted, status patched only when it
differs, no still-selected cluster ever missing from every PD (replayed from a raw watch), stale
caches recovered through 409/AlreadyExists/NotFound, and OCM's events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from apis.core import Event
from apis.meta import Condition, ObjectMeta, OwnerReference
from apis.placements import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    PLACEMENT_LABEL,
    Placement,
    PlacementDecision,
    PlacementStatus,
)
from controllers.embedded import EmbeddedApiServer
from controllers.hub.writer import DecisionWriter, WritePlan, WriteReport
from controllers.kube.config import ClusterAccess
from controllers.kube.errors import ApiError, ConflictError, ServerError
from controllers.kube.gateway import Gateway
from controllers.runtime.events import EventRecorder
from controllers.runtime.patches import merge_patch_between
from placement.decisions import MAX_DECISIONS_PER_OBJECT, DecisionGroup, paginate
from placement.rows import DecisionRow
from tests.controllers.embedded.hub import WAIT, hub, placement

pytestmark = pytest.mark.asyncio

NS = "default"
WALL = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


class RecordingGateway(Gateway):
    """A gateway that remembers every request and every error answer."""

    requests: list[tuple[str, str]]
    errors: list[tuple[str, int, str]]

    async def _open(self, method: str, path: str, **kwargs: Any) -> Any:
        self.__dict__.setdefault("requests", []).append((method, path))
        try:
            return await super()._open(method, path, **kwargs)
        except ApiError as exc:
            self.__dict__.setdefault("errors", []).append((method, exc.code, exc.reason))
            raise

    def writes(self) -> list[tuple[str, str]]:
        return [r for r in self.__dict__.get("requests", []) if r[0] != "GET"]


class Sink:
    """The objects the writer reports, in order."""

    def __init__(self) -> None:
        self.objects: list[DecisionRow | Placement] = []
        self.gone: list[str] = []

    def written(self, obj: DecisionRow | Placement) -> None:
        self.objects.append(obj)

    def deleted(self, namespace: str, name: str) -> None:
        self.gone.append(f"{namespace}/{name}")


@dataclass
class Rig:
    server: EmbeddedApiServer
    gateway: RecordingGateway
    writer: DecisionWriter
    recorder: EventRecorder
    sink: Sink
    writes: list[tuple[str, str]]
    placement: Placement

    async def decisions(self, name: str = "p") -> list[PlacementDecision]:
        found = await self.gateway.list(
            PlacementDecision, NS, label_selector=f"{PLACEMENT_LABEL}={name}"
        )
        return found.items

    async def contents(self, name: str = "p") -> dict[str, list[str]]:
        return {pd.name: clusters(pd) for pd in await self.decisions(name)}

    async def apply(
        self, plan: WritePlan, current: Sequence[PlacementDecision] | None = None
    ) -> WriteReport:
        report = await self.writer.apply(
            plan, await self.decisions() if current is None else current
        )
        await self.recorder.flush()
        return report

    async def events(self) -> list[Event]:
        return sorted((await self.gateway.list(Event, NS)).items, key=lambda e: e.name)

    async def fresh_placement(self) -> Placement:
        return await self.gateway.get(Placement, "p", NS)


@asynccontextmanager
async def rig(max_conflict_retries: int = 3) -> AsyncIterator[Rig]:
    async with hub() as (server, plain):
        gateway = await RecordingGateway.connect(ClusterAccess(url=server.url), backoff=0.01)
        assert isinstance(gateway, RecordingGateway)
        recorder = EventRecorder(
            plain, controller="placement-controller", wall=lambda: WALL, instance="test"
        )
        sink = Sink()
        writes: list[tuple[str, str]] = []
        writer = DecisionWriter(
            gateway,
            recorder,
            sink=sink,
            max_conflict_retries=max_conflict_retries,
            on_write=lambda kind, verb: writes.append((kind, verb)),
        )
        created = await plain.create(placement("p", NS))
        try:
            yield Rig(server, gateway, writer, recorder, sink, writes, created)
        finally:
            await recorder.flush()
            await gateway.close()


def clusters(pd: PlacementDecision) -> list[str]:
    return [d.cluster_name for d in (pd.status.decisions if pd.status else [])]


def names(prefix: str, count: int, start: int = 0) -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(start, start + count)]


def pds(p: Placement, *groups: tuple[str, Iterable[str]]) -> tuple[PlacementDecision, ...]:
    built = [DecisionGroup(name, tuple(sorted(members))) for name, members in groups]
    return paginate(p, built or [DecisionGroup("", ())]).decisions


def plan(
    p: Placement,
    decisions: Sequence[PlacementDecision] | None,
    status: PlacementStatus | None = None,
    warning: tuple[str, str] | None = None,
) -> WritePlan:
    return WritePlan(
        placement=p,
        decisions=decisions,
        status=status if status is not None else (p.status or PlacementStatus()),
        score_note="c1:3 c2:1 ",
        warning=warning,
    )


def satisfied(message: str = "All cluster decisions scheduled") -> PlacementStatus:
    return PlacementStatus(
        number_of_selected_clusters=1,
        conditions=[
            Condition(
                type="PlacementSatisfied",
                status="True",
                reason="AllDecisionsScheduled",
                message=message,
                last_transition_time=WALL,
            )
        ],
    )


# --- create, update, delete ------------------------------------------------------------------


async def test_new_decisions_carry_paginate_names_labels_owner_and_status() -> None:
    async with rig() as r:
        report = await r.apply(plan(r.placement, pds(r.placement, ("", ["c2", "c1"]))))
        (pd,) = await r.decisions()
        assert report.created == ["p-decision-1"]
        assert pd.name == "p-decision-1"
        assert pd.metadata.labels == {
            PLACEMENT_LABEL: "p",
            DECISION_GROUP_NAME_LABEL: "",
            DECISION_GROUP_INDEX_LABEL: "0",
        }
        (owner,) = pd.metadata.owner_references or []
        assert (owner.kind, owner.name, owner.uid) == ("Placement", "p", r.placement.metadata.uid)
        assert owner.controller is True
        assert clusters(pd) == ["c1", "c2"]
        assert r.writes == [("PlacementDecision", "create"), ("PlacementDecision", "patch")]
        # The sink saw what the server answered, last the PD with its decisions.
        last = r.sink.objects[-1]
        assert isinstance(last, DecisionRow)
        assert last.resource_version == pd.metadata.resource_version
        assert list(last.clusters) == ["c1", "c2"]


async def test_101_clusters_make_two_decisions_of_100_and_1() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", names("c", 101)))))
        assert {k: len(v) for k, v in (await r.contents()).items()} == {
            "p-decision-1": 100,
            "p-decision-2": 1,
        }


async def test_an_empty_selection_is_one_decision_with_an_empty_list() -> None:
    async with rig() as r:
        wanted = plan(r.placement, pds(r.placement))
        await r.apply(wanted)
        (pd,) = await r.decisions()
        assert pd.name == "p-decision-1"
        assert pd.to_wire()["status"] == {"decisions": []}
        writes = list(r.writes)
        assert not (await r.apply(wanted)).wrote
        assert (
            r.writes == writes == [("PlacementDecision", "create"), ("PlacementDecision", "patch")]
        )


async def test_applying_the_same_plan_again_writes_nothing() -> None:
    async with rig() as r:
        wanted = plan(r.placement, pds(r.placement, ("a", names("c", 150)), ("", ["x"])))
        await r.apply(wanted)
        before = {pd.name: pd.metadata.resource_version for pd in await r.decisions()}
        rv, requests = r.server.store.rv, len(r.gateway.writes())
        report = await r.apply(wanted)
        assert not report.wrote
        assert len(r.gateway.writes()) == requests
        assert r.server.store.rv == rv  # not even an event
        assert {pd.name: pd.metadata.resource_version for pd in await r.decisions()} == before


async def test_the_score_note_is_made_once_and_only_when_decisions_change() -> None:
    async with rig() as r:
        made: list[str] = []

        def note() -> str:
            made.append("note")
            return "c1:3 "

        first = pds(r.placement, ("", ["c1", "c2", "c3"]))
        await r.apply(replace(plan(r.placement, first), score_note=note))
        assert made == ["note"]  # one PD created and filled: one ScoreUpdate, one note
        scores = [e for e in await r.events() if e.reason == "ScoreUpdate"]
        assert [e.note for e in scores] == ["c1:3 "]
        await r.apply(replace(plan(r.placement, first), score_note=note))
        assert made == ["note"]  # nothing changed: no event, no note


async def test_changed_decisions_are_patched_in_place() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1", "c2"]))))
        report = await r.apply(plan(r.placement, pds(r.placement, ("", ["c2", "c3"]))))
        assert (report.created, report.updated, report.deleted) == ([], ["p-decision-1"], [])
        assert await r.contents() == {"p-decision-1": ["c2", "c3"]}


async def test_stale_decisions_are_deleted_even_those_the_writer_did_not_create() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", names("c", 250)))))
        foreign = PlacementDecision(
            metadata=ObjectMeta(name="hand-made", namespace=NS, labels={PLACEMENT_LABEL: "p"})
        )
        await r.gateway.create(foreign)
        report = await r.apply(plan(r.placement, pds(r.placement, ("", names("c", 20)))))
        assert sorted(report.deleted) == ["hand-made", "p-decision-2", "p-decision-3"]
        assert await r.contents() == {"p-decision-1": names("c", 20)}
        assert sorted(r.sink.gone) == [
            f"{NS}/hand-made",
            f"{NS}/p-decision-2",
            f"{NS}/p-decision-3",
        ]


async def test_decisions_of_another_placement_are_never_touched() -> None:
    async with rig() as r:
        other = PlacementDecision(
            metadata=ObjectMeta(name="q-decision-1", namespace=NS, labels={PLACEMENT_LABEL: "q"})
        )
        other = await r.gateway.create(other)
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1"]))), current=[other])
        assert [pd.name for pd in await r.decisions("q")] == ["q-decision-1"]


async def test_a_misconfigured_plan_only_touches_the_status() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1", "c2"]))))
        before = {pd.name: pd.metadata.resource_version for pd in await r.decisions()}
        report = await r.apply(plan(r.placement, None, satisfied()))
        assert (report.created, report.updated, report.deleted) == ([], [], [])
        assert report.status_patched
        assert {pd.name: pd.metadata.resource_version for pd in await r.decisions()} == before
        status = (await r.fresh_placement()).status
        assert status is not None
        assert status.number_of_selected_clusters == 1


async def test_status_is_patched_only_when_it_differs() -> None:
    async with rig() as r:
        first = await r.apply(plan(r.placement, None, satisfied()))
        stored = await r.fresh_placement()
        again = await r.apply(plan(stored, None, satisfied()))
        changed = await r.apply(plan(stored, None, satisfied("1 cluster decisions unscheduled")))
        assert (first.status_patched, again.status_patched, changed.status_patched) == (
            True,
            False,
            True,
        )
        assert [w for w in r.writes if w[0] == "Placement"] == [("Placement", "patch")] * 2


async def test_status_fields_no_longer_wanted_are_removed() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, None, satisfied()))
        stored = await r.fresh_placement()
        await r.apply(plan(stored, None, PlacementStatus(number_of_selected_clusters=0)))
        status = (await r.fresh_placement()).status
        assert status is not None
        assert (status.number_of_selected_clusters, status.conditions) == (0, None)


async def test_labels_and_owner_references_that_differ_are_patched_without_events() -> None:
    async with rig() as r:
        wanted = plan(r.placement, pds(r.placement, ("", ["c1"])))
        await r.apply(wanted)
        await r.gateway.merge_patch(
            PlacementDecision,
            "p-decision-1",
            {"metadata": {"labels": {DECISION_GROUP_INDEX_LABEL: "7", "team": "x"}}},
            NS,
        )
        events = len(await r.events())
        report = await r.apply(wanted)
        (pd,) = await r.decisions()
        assert report.updated == ["p-decision-1"]
        labels = pd.metadata.labels or {}
        assert (labels[DECISION_GROUP_INDEX_LABEL], labels["team"]) == ("0", "x")
        assert clusters(pd) == ["c1"]
        assert len(await r.events()) == events


async def test_a_controller_reference_to_an_earlier_placement_is_replaced() -> None:
    async with rig() as r:
        wanted = pds(r.placement, ("", ["c1"]))
        earlier = OwnerReference(
            api_version="cluster.open-cluster-management.io/v1beta1",
            kind="Placement",
            name="p",
            uid="uid-of-a-deleted-placement",
            controller=True,
        )
        keep = OwnerReference(api_version="v1", kind="ConfigMap", name="cm", uid="cm-uid")
        meta = wanted[0].metadata.model_copy(update={"owner_references": [earlier, keep]})
        await r.gateway.create(wanted[0].model_copy(update={"metadata": meta}))
        report = await r.apply(plan(r.placement, wanted))
        (pd,) = await r.decisions()
        assert report.updated == ["p-decision-1"]
        assert sorted(o.uid for o in pd.metadata.owner_references or []) == sorted(
            ["cm-uid", r.placement.metadata.uid or ""]
        )


# --- no transient disappearance (docs/replacing-ocm.md, 'Differences from OCM') -----------------


async def replay(
    r: Rig, since: str, start: Sequence[PlacementDecision], kept: set[str]
) -> tuple[dict[str, list[str]], int]:
    """Replay every PD write after `since` from a raw watch, asserting after each one that every
    cluster of `kept` is in some PD and that no PD holds more than 100. Returns the final
    contents and the number of events replayed."""
    marker = PlacementDecision(metadata=ObjectMeta(name="zz-marker", namespace=NS))
    await r.gateway.create(marker)
    state = {pd.name: clusters(pd) for pd in start}
    seen = 0
    async with asyncio.timeout(WAIT):
        async for event in r.gateway.watch(PlacementDecision, since, NS, bookmarks=False):
            pd = event.object
            assert pd is not None
            if pd.name == "zz-marker":
                break
            assert (pd.metadata.labels or {}).get(PLACEMENT_LABEL) == "p"
            seen += 1
            if event.type == "DELETED":
                del state[pd.name]
            else:
                state[pd.name] = clusters(pd)
            present = {c for members in state.values() for c in members}
            assert kept <= present, f"after {event.type} {pd.name}: {sorted(kept - present)}"
            assert max(map(len, state.values())) <= MAX_DECISIONS_PER_OBJECT
    return state, seen


async def test_shifting_every_page_never_drops_a_still_selected_cluster() -> None:
    async with rig() as r:
        old = names("m", 300)
        await r.apply(plan(r.placement, pds(r.placement, ("", old))))
        listed = await r.gateway.list(PlacementDecision, NS)
        # 50 names sorting first push 150 clusters into the next page each.
        report = await r.apply(plan(r.placement, pds(r.placement, ("", [*names("a", 50), *old]))))
        state, seen = await replay(r, listed.resource_version, listed.items, set(old))
        assert report.created == ["p-decision-4"]
        assert report.carriers == []
        assert state == await r.contents()
        assert state["p-decision-2"] == names("m", 100, 50)
        assert seen == 5  # create + status of the new page, then three updates


async def test_decision_groups_swapping_clusters_go_through_carriers() -> None:
    async with rig() as r:
        blue, green = names("b", 150), names("g", 150)
        await r.apply(plan(r.placement, pds(r.placement, ("blue", blue), ("green", green))))
        listed = await r.gateway.list(PlacementDecision, NS)
        events_before = len(await r.events())
        report = await r.apply(
            plan(r.placement, pds(r.placement, ("blue", green), ("green", blue)))
        )
        state, _ = await replay(r, listed.resource_version, listed.items, {*blue, *green})
        assert report.carriers, "a swap cannot be ordered without a carrier"
        assert sorted(report.updated) == [f"p-decision-{k}" for k in range(1, 5)]
        assert report.deleted == []
        assert sorted(state) == [f"p-decision-{k}" for k in range(1, 5)]
        assert state["p-decision-1"] == green[:100]
        # Carriers emit nothing: two events (update and score) per updated PD.
        new_events = (await r.events())[events_before:]
        related = {e.related.name for e in new_events if e.related is not None}
        assert related == set(report.updated)
        assert len(new_events) == 2 * len(report.updated)


async def group_views(
    r: Rig, since: str, start: Sequence[PlacementDecision]
) -> list[dict[str, tuple[tuple[str, str], list[str]]]]:
    """Every state of the placement's PDs (group labels, clusters) after each write since
    `since`, from a raw watch."""

    def group(pd: PlacementDecision) -> tuple[str, str]:
        labels = pd.metadata.labels or {}
        return labels.get(DECISION_GROUP_INDEX_LABEL, ""), labels.get(DECISION_GROUP_NAME_LABEL, "")

    marker = PlacementDecision(metadata=ObjectMeta(name="zz-marker", namespace=NS))
    await r.gateway.create(marker)
    state = {pd.name: (group(pd), clusters(pd)) for pd in start}
    states = [dict(state)]
    async with asyncio.timeout(WAIT):
        async for event in r.gateway.watch(PlacementDecision, since, NS, bookmarks=False):
            pd = event.object
            assert pd is not None
            if pd.name == "zz-marker":
                break
            if event.type == "DELETED":
                del state[pd.name]
            else:
                state[pd.name] = (group(pd), clusters(pd))
            states.append(dict(state))
    return states


async def test_a_page_changing_group_never_shows_a_cluster_in_a_group_it_is_not_in() -> None:
    """Found on a real API server: the canary clusters arrive after the placement was first
    scheduled, so the rest group moves from page 1 (group 0) to page 2 (group 1) and page 1
    becomes the canary group. Page 1 must not hold a canary under the old group's labels, nor a
    rest cluster under the canary's, at any moment: a consumer's rollout reads groups."""
    async with rig() as r:
        rest, canary = ["c3", "c4", "c5", "c6"], ["c1", "c2"]
        await r.apply(plan(r.placement, pds(r.placement, ("", rest))))
        listed = await r.gateway.list(PlacementDecision, NS)
        report = await r.apply(plan(r.placement, pds(r.placement, ("canary", canary), ("", rest))))
        states = await group_views(r, listed.resource_version, listed.items)
        before = dict.fromkeys(rest, ("0", ""))
        after = {**dict.fromkeys(canary, ("0", "canary")), **dict.fromkeys(rest, ("1", ""))}
        for state in states:
            for name, (group, members) in state.items():
                for c in members:
                    assert group in {before.get(c), after[c]}, f"{c} in {group} ({name}): {state}"
        assert states[-1] == {
            "p-decision-1": (("0", "canary"), canary),
            "p-decision-2": (("1", ""), rest),
        }
        assert report.created == ["p-decision-2"]
        assert report.updated == ["p-decision-1"]
        # One DecisionUpdate (and ScoreUpdate) for page 1, however many writes it took.
        updates = [e for e in await r.events() if e.reason == "DecisionUpdate"]
        assert [e.related.name for e in updates if e.related] == [
            "p-decision-1",  # its first decisions, in the first apply
            "p-decision-2",
            "p-decision-1",
        ]


async def test_a_page_changing_group_and_only_losing_clusters_drops_them_first() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1", "c2", "c3"]))))
        listed = await r.gateway.list(PlacementDecision, NS)
        await r.apply(plan(r.placement, pds(r.placement, ("canary", ["c1"]), ("", ["c2", "c3"]))))
        states = await group_views(r, listed.resource_version, listed.items)
        canary_views = [
            members for state in states for (group, members) in state.values() if group[1]
        ]
        assert canary_views and all(members == ["c1"] for members in canary_views), states


# --- stale caches ------------------------------------------------------------------------------


async def test_a_stale_cached_decision_gets_409_then_is_reread_and_written() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1", "c2"]))))
        cached = await r.decisions()
        # Behind the writer's back: another writer adds c9.
        await r.gateway.patch_status(
            PlacementDecision,
            "p-decision-1",
            {"status": {"decisions": [{"clusterName": c, "reason": ""} for c in ["c1", "c9"]]}},
            NS,
        )
        report = await r.apply(plan(r.placement, pds(r.placement, ("", ["c2", "c3"]))), cached)
        assert ("PATCH", 409, "Conflict") in r.gateway.errors
        assert report.updated == ["p-decision-1"]
        assert await r.contents() == {"p-decision-1": ["c2", "c3"]}


async def test_conflicts_beyond_the_budget_propagate_with_earlier_writes_in_the_sink() -> None:
    async with rig(max_conflict_retries=0) as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1"]), ("g", ["c2"]))))
        cached = await r.decisions()
        await r.gateway.merge_patch(
            PlacementDecision, "p-decision-1", {"metadata": {"annotations": {"x": "y"}}}, NS
        )
        r.sink.objects.clear()
        wanted = pds(r.placement, ("", ["c3"]), ("g", ["c2"]), ("h", ["c4"]))
        with pytest.raises(ConflictError):
            await r.apply(plan(r.placement, wanted), cached)
        # The new third PD was created (and its decisions written) before the conflict.
        assert [o.name for o in r.sink.objects] == ["p-decision-3", "p-decision-3"]
        assert (await r.contents())["p-decision-3"] == ["c4"]


async def test_a_create_that_already_exists_continues_as_an_update() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1"]))))
        report = await r.apply(plan(r.placement, pds(r.placement, ("", ["c2"]))), current=[])
        assert ("POST", 409, "AlreadyExists") in r.gateway.errors
        assert report.updated == ["p-decision-1"]
        assert await r.contents() == {"p-decision-1": ["c2"]}


async def test_a_decision_deleted_behind_the_writers_back_is_created_again() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1"]))))
        cached = await r.decisions()
        await r.gateway.delete(PlacementDecision, "p-decision-1", NS)
        report = await r.apply(plan(r.placement, pds(r.placement, ("", ["c2"]))), cached)
        assert ("PATCH", 404, "NotFound") in r.gateway.errors
        assert report.created == ["p-decision-1"]
        assert await r.contents() == {"p-decision-1": ["c2"]}


async def test_a_stale_placement_status_is_reread_and_patched() -> None:
    async with rig() as r:
        stale = r.placement
        await r.gateway.patch_status(
            Placement, "p", {"status": {"numberOfSelectedClusters": 9}}, NS
        )
        report = await r.apply(plan(stale, None, satisfied()))
        assert report.status_patched
        assert ("PATCH", 409, "Conflict") in r.gateway.errors
        status = (await r.fresh_placement()).status
        assert status is not None
        assert status.number_of_selected_clusters == 1


async def test_a_placement_deleted_while_reconciled_ends_the_write_quietly() -> None:
    """Found on a real API server: a placement deleted between its scheduling and its status
    patch (404) failed the reconcile with a traceback and a retry; there is nothing left to
    write to."""
    async with rig() as r:
        await r.gateway.delete(Placement, "p", NS)
        report = await r.apply(plan(r.placement, pds(r.placement, ("", ["c1"])), satisfied()))
        assert report.created == ["p-decision-1"]
        assert not report.status_patched
        assert ("PATCH", 404, "NotFound") in r.gateway.errors


async def test_other_server_errors_propagate() -> None:
    async with rig() as r:
        r.server.faults.fail_next("patch", 500)
        with pytest.raises(ServerError):
            await r.apply(plan(r.placement, pds(r.placement, ("", ["c1"]))))
        assert [o.name for o in r.sink.objects] == ["p-decision-1"]  # the create went through
        report = await r.apply(plan(r.placement, pds(r.placement, ("", ["c1"]))))
        assert report.updated == ["p-decision-1"]


# --- events ------------------------------------------------------------------------------------


def summary(events: Sequence[Event]) -> list[tuple[str | None, ...]]:
    return [
        (e.type, e.reason, e.action, e.related.name if e.related else None, e.note) for e in events
    ]


async def test_create_update_and_delete_emit_ocms_events() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1"]))))
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c2"]), ("g", ["c3"]))))
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c2"]))))
        d1, d2 = "p-decision-1", "p-decision-2"

        def note(pd: str, verb: str) -> str:
            return f"Decision {pd} is {verb} with placement p in namespace default"

        assert summary(await r.events()) == [
            ("Normal", "DecisionCreate", "DecisionCreated", d1, note(d1, "created")),
            ("Normal", "DecisionUpdate", "DecisionUpdated", d1, note(d1, "updated")),
            ("Normal", "ScoreUpdate", "ScoreUpdated", d1, "c1:3 c2:1 "),
            ("Normal", "DecisionCreate", "DecisionCreated", d2, note(d2, "created")),
            ("Normal", "DecisionUpdate", "DecisionUpdated", d2, note(d2, "updated")),
            ("Normal", "ScoreUpdate", "ScoreUpdated", d2, "c1:3 c2:1 "),
            ("Normal", "DecisionUpdate", "DecisionUpdated", d1, note(d1, "updated")),
            ("Normal", "ScoreUpdate", "ScoreUpdated", d1, "c1:3 c2:1 "),
            ("Normal", "DecisionDelete", "DecisionDeleted", d2, note(d2, "deleted")),
        ]
        regarding = {(e.regarding.kind, e.regarding.name) for e in await r.events() if e.regarding}
        assert regarding == {("Placement", "p")}


async def test_a_warning_status_makes_the_update_event_a_warning() -> None:
    async with rig() as r:
        await r.apply(plan(r.placement, pds(r.placement, ("", ["c1"]))))
        before = len(await r.events())
        await r.apply(
            plan(r.placement, pds(r.placement, ("", ["c2"])), warning=("score expired", "AddOn"))
        )
        assert summary((await r.events())[before:]) == [
            (
                "Warning",
                "DecisionUpdate",
                "DecisionUpdated",
                "p-decision-1",
                "Decision p-decision-1 is updated with placement p in namespace default: "
                "score expired in plugin AddOn",
            ),
            ("Normal", "ScoreUpdate", "ScoreUpdated", "p-decision-1", "c1:3 c2:1 "),
        ]


@pytest.mark.parametrize(
    ("old", "new", "patch"),
    [
        pytest.param({"a": 1}, {"a": 1}, {}, id="equal"),
        pytest.param({"a": 1, "b": 2}, {"a": 1}, {"b": None}, id="removed-key"),
        pytest.param(
            {"a": {"x": 1, "y": 2}}, {"a": {"x": 1, "y": 3}}, {"a": {"y": 3}}, id="nested"
        ),
        pytest.param({"a": [1, 2]}, {"a": [2]}, {"a": [2]}, id="list-replaced"),
        pytest.param({}, {"a": {"x": 1}}, {"a": {"x": 1}}, id="added"),
    ],
)
async def test_merge_patch_between_turns_old_into_new(
    old: dict[str, Any], new: dict[str, Any], patch: dict[str, Any]
) -> None:
    assert merge_patch_between(old, new) == patch
