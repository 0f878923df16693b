"""DecisionTracker on the embedded hub through the real client: the union of a placement's
PlacementDecisions as (added, removed) changes, no spurious remove while clusters move between
PlacementDecisions in either order, nothing lost across a dropped watch or a 410, 10,000
clusters in 100 PlacementDecisions with one list and one watch, and a missing Placement is an
error naming it (at once, or after `wait_for_placement` seconds)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import pytest

from apis.placements import DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL, PlacementDecision
from controllers.consumer import DecisionTracker, PlacementNotFoundError
from controllers.embedded import EmbeddedApiServer
from controllers.embedded.audit import AuditEntry
from controllers.kube.gateway import Gateway
from placement.rollout import GroupKey
from placement.testing import decision, placement
from tests.controllers.embedded.hub import hub

pytestmark = pytest.mark.asyncio

NS, NAME = "apps", "web"
SETTLE = 0.3


@asynccontextmanager
async def placed() -> AsyncIterator[tuple[EmbeddedApiServer, Gateway]]:
    """An embedded hub holding the Placement the tracker follows."""
    async with hub(namespaces=[NS]) as (server, gw):
        await gw.create(placement(NS, NAME))
        yield server, gw


def pd(index: int, clusters: Iterable[str], group: int = 0, name: str = "") -> PlacementDecision:
    made = decision(NS, NAME, clusters, index)
    labels = {
        **(made.metadata.labels or {}),
        DECISION_GROUP_INDEX_LABEL: str(group),
        DECISION_GROUP_NAME_LABEL: name,
    }
    return made.model_copy(update={"metadata": made.metadata.model_copy(update={"labels": labels})})


async def put(gw: Gateway, index: int, clusters: Iterable[str]) -> None:
    decisions = [{"clusterName": c, "reason": ""} for c in clusters]
    await gw.patch_status(
        PlacementDecision, f"{NAME}-decision-{index}", {"status": {"decisions": decisions}}, NS
    )


async def create(gw: Gateway, made: PlacementDecision) -> None:
    await gw.create(made)
    await gw.patch_status(PlacementDecision, made.name, {"status": made.to_wire()["status"]}, NS)


async def quiet(
    tracker: DecisionTracker, seconds: float = 3 * SETTLE
) -> list[tuple[frozenset[str], frozenset[str]]]:
    """The changes reported within `seconds`."""
    out = []
    try:
        async with asyncio.timeout(seconds):
            while True:
                out.append(await tracker.next_change())
    except TimeoutError:
        return out


async def test_the_first_list_is_one_addition_with_groups() -> None:
    async with placed() as (_, gw):
        await create(gw, pd(1, ["a", "b"], 0, "canary"))
        await create(gw, pd(2, ["c"], 1))
        await create(gw, decision(NS, "other", ["z"], 1))  # another placement's
        async with DecisionTracker(gw, NS, NAME, settle=SETTLE) as tracker:
            changes = await quiet(tracker)
            # One change with the whole first list, not one per PlacementDecision.
            assert changes == [(frozenset({"a", "b", "c"}), frozenset())]
            assert tracker.groups() == {
                GroupKey(0, "canary"): frozenset({"a", "b"}),
                GroupKey(1, ""): frozenset({"c"}),
            }


@pytest.mark.parametrize("remove_first", [False, True], ids=["add-then-remove", "remove-then-add"])
async def test_a_cluster_moving_between_decisions_is_never_removed(remove_first: bool) -> None:
    async with placed() as (_, gw):
        await create(gw, pd(1, ["a", "b"]))
        await create(gw, pd(2, ["c"]))
        async with DecisionTracker(gw, NS, NAME, settle=SETTLE) as tracker:
            await quiet(tracker)
            steps = [(1, ["a"]), (2, ["b", "c"])]
            for index, clusters in reversed(steps) if not remove_first else steps:
                await put(gw, index, clusters)
                await asyncio.sleep(SETTLE / 3)  # the writer's round takes a while
            assert await quiet(tracker) == []
            assert tracker.clusters() == {"a", "b", "c"}
            # A real removal is reported, once the decisions are quiet.
            await put(gw, 2, ["b"])
            assert await quiet(tracker) == [(frozenset(), frozenset({"c"}))]


async def test_a_dropped_watch_and_a_410_lose_nothing() -> None:
    async with placed() as (server, gw):
        await create(gw, pd(1, ["a", "b"]))
        await create(gw, pd(2, ["c"]))
        async with DecisionTracker(gw, NS, NAME, settle=SETTLE) as tracker:
            await quiet(tracker)
            server.drop_watches(abrupt=True)
            await put(gw, 1, ["a", "b", "d"])
            assert await quiet(tracker) == [(frozenset({"d"}), frozenset())]
            # Partitioned: the changes happen while the watch hears nothing, history compacted.
            server.stall_watches()
            await gw.delete(PlacementDecision, f"{NAME}-decision-2", NS)
            await create(gw, pd(3, ["e"]))
            server.store.compact()
            server.drop_watches(abrupt=True)
            changes = await quiet(tracker, 10 * SETTLE)
            assert (frozenset({"e"}), frozenset()) in changes
            assert (frozenset(), frozenset({"c"})) in changes
            assert tracker.clusters() == {"a", "b", "d", "e"}
            assert tracker.informer.relists >= 2


async def test_ten_thousand_clusters_in_a_hundred_decisions_take_one_list_and_one_watch() -> None:
    async with placed() as (server, gw):
        for index in range(1, 101):
            await create(gw, pd(index, [f"c{index:03d}-{j:02d}" for j in range(100)]))
        server.audit.clear()
        async with DecisionTracker(gw, NS, NAME, settle=SETTLE) as tracker:
            changes = await quiet(tracker)
            assert len(changes) == 1 and len(changes[0][0]) == 10_000
            assert len(tracker.clusters()) == 10_000
            requests = {e: n for e, n in server.audit.items() if e.resource == "placementdecisions"}
            group = "cluster.open-cluster-management.io"
            assert requests == {
                AuditEntry("list", group, "placementdecisions", "", NS): 1,
                AuditEntry("watch", group, "placementdecisions", "", NS): 1,
            }


async def test_a_missing_placement_is_an_error_naming_it() -> None:
    async with hub(namespaces=[NS]) as (_, gw):
        await create(gw, pd(1, ["a"]))  # decisions without their Placement: still an error
        started = time.monotonic()
        with pytest.raises(PlacementNotFoundError, match=f"placement {NS}/missing not found"):
            async with DecisionTracker(gw, NS, "missing", settle=SETTLE):
                pass
        assert time.monotonic() - started < 2
        with pytest.raises(PlacementNotFoundError, match="placement elsewhere/web not found"):
            await DecisionTracker(gw, "elsewhere", NAME).start()  # no such namespace either


async def test_wait_for_placement_waits_for_it_then_follows_or_gives_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "controllers.consumer.tracker")
    async with hub(namespaces=[NS]) as (_, gw):
        tracker = DecisionTracker(gw, NS, NAME, settle=SETTLE, wait_for_placement=10)
        starting = asyncio.create_task(tracker.start())
        await asyncio.sleep(0.3)
        assert not starting.done()
        assert f"placement {NS}/{NAME} not found: waiting up to 10 s" in caplog.text
        await gw.create(placement(NS, NAME))
        await create(gw, pd(1, ["a"]))
        await asyncio.wait_for(starting, 5)
        try:
            assert await asyncio.wait_for(tracker.next_change(), 5) == (
                frozenset({"a"}),
                frozenset(),
            )
        finally:
            await tracker.stop()
        started = time.monotonic()
        late = DecisionTracker(gw, NS, "never", wait_for_placement=0.4)
        with pytest.raises(
            PlacementNotFoundError, match=r"not found on the hub after waiting 0\.4 s"
        ):
            await late.start()
        assert 0.4 <= time.monotonic() - started < 2
