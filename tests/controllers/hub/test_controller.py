"""The hub controller end to end, against the embedded API server through the real client:
decisions and status as `placement simulate` computes them, OCM's fan-out (and only it),
toleration expiry on an injected clock, idempotence, misconfiguration, owner references."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.meta import KubeObject
from apis.placements import PLACEMENT_MISCONFIGURED as MISCONFIGURED
from apis.placements import PLACEMENT_SATISFIED as SATISFIED
from apis.placements import Placement, PlacementDecision
from controllers.hub.manager import Manager
from placement.simulate import simulate
from placement.testing import (
    addon,
    binding,
    cluster,
    cluster_set,
    placement,
    predicate,
    score,
    taint,
    toleration,
)
from plugins import default_scheduler
from tests.controllers.embedded.hub import ensure_namespaces, eventually
from tests.controllers.hub.controller_hub import START, Hub, hub

pytestmark = pytest.mark.asyncio

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples" / "hub"
KINDS: tuple[type[KubeObject], ...] = (
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    AddOnPlacementScore,
    Placement,
    PlacementDecision,
)


async def create(h: Hub, objects: Iterable[KubeObject]) -> None:
    """Create through the API, each object's Namespace first if missing; a status (which
    create drops) is written afterwards."""
    for obj in objects:
        if obj.namespace:
            await ensure_namespaces(h.gateway, [obj.namespace])
        created = await h.gateway.create(obj)
        status = getattr(obj, "status", None)
        if status is not None and obj.to_wire().get("status"):
            await h.gateway.patch_status(
                type(obj), created.name, {"status": obj.to_wire()["status"]}, obj.namespace or None
            )


async def everything(h: Hub) -> list[KubeObject]:
    out: list[KubeObject] = []
    for kind in KINDS:
        out.extend((await h.gateway.list(kind)).items)
    return out


def decision_view(pd: PlacementDecision) -> dict[str, Any]:
    wire = pd.to_wire()
    meta = wire["metadata"]
    return {
        "name": meta["name"],
        "labels": meta.get("labels"),
        "owner": [(o["kind"], o["name"], o["uid"]) for o in meta.get("ownerReferences", [])],
        "status": wire.get("status"),
    }


# --- parity with placement simulate ----------------------------------------------------------


async def test_decisions_and_status_are_what_simulate_computes_for_the_same_objects() -> None:
    from controllers.cli.manifests import load_paths

    loaded = [o.obj for o in load_paths([SAMPLES]).objects if isinstance(o.obj, KINDS)]
    async with hub() as h:
        await create(h, loaded)
        before = await everything(h)
        manager = await h.manager()
        await manager.wait_idle()
        expected = simulate(before, default_scheduler(), START)
        placements = {p.key: p for p in (await h.gateway.list(Placement)).items}
        decisions = (await h.gateway.list(PlacementDecision)).items
        assert len(expected) == len(placements) >= 10
        for item in expected:
            key = item.placement.key
            got = placements[key]
            if item.outcome is None:
                continue  # disabled: left alone
            assert got.status is not None, key
            assert item.placement.status is not None, key
            assert got.status.to_wire() == item.placement.status.to_wire(), key
            mine = sorted(
                (
                    pd
                    for pd in decisions
                    if pd.namespace == got.namespace
                    and (pd.metadata.labels or {}).get(
                        "cluster.open-cluster-management.io/placement"
                    )
                    == got.name
                ),
                key=lambda pd: pd.name,
            )
            assert [decision_view(pd) for pd in mine] == [
                decision_view(pd) for pd in item.decisions
            ], key


# --- fan-out: the affected placements, and only those -----------------------------------------

TWO_TEAMS: list[KubeObject] = [
    cluster("a1", labels={"env": "prod"}, cluster_set="team-a", cpu="4"),
    cluster("a2", labels={"env": "dev"}, cluster_set="team-a", cpu="8"),
    cluster("b1", labels={"env": "prod"}, cluster_set="team-b", cpu="4"),
    cluster("b2", labels={"env": "dev"}, cluster_set="team-b", cpu="8"),
    cluster_set("team-a"),
    cluster_set("team-b"),
    binding("ns-a", "team-a"),
    binding("ns-b", "team-b"),
    placement("ns-a", "prod", predicates=[predicate(labels={"env": "prod"})]),
    placement("ns-a", "all"),
    placement("ns-b", "prod", predicates=[predicate(labels={"env": "prod"})]),
    placement(
        "ns-b",
        "scored",
        prioritizerPolicy={"mode": "Exact", "configurations": [addon("usage", "free")]},
        numberOfClusters=1,
    ),
]


async def settled(h: Hub, manager: Manager) -> None:
    await manager.wait_idle()
    manager.reconciler.history.clear()


async def rescheduled_after(h: Hub, manager: Manager, expected: set[str]) -> set[str]:
    """Wait until the expected keys ran, let everything settle, return what ran."""
    await eventually(lambda: expected <= set(manager.reconciler.history))
    await manager.wait_idle()
    return set(manager.reconciler.history)


async def test_relabelling_a_cluster_reschedules_the_placements_of_its_sets_only() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await settled(h, manager)
        assert await h.decided("ns-a", "prod") == ["a1"]
        await h.relabel("a2", {"env": "prod"})
        ran = await rescheduled_after(h, manager, {"ns-a/prod", "ns-a/all"})
        assert ran == {"ns-a/prod", "ns-a/all"}
        assert await h.decided("ns-a", "prod") == ["a1", "a2"]
        assert await h.decided("ns-b", "prod") == ["b1"]


async def test_a_status_heartbeat_on_a_cluster_reschedules_nothing() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await settled(h, manager)
        await h.gateway.patch_status(
            ManagedCluster,
            "a1",
            {
                "status": {
                    "conditions": [
                        {
                            "type": "ManagedClusterConditionAvailable",
                            "status": "True",
                            "reason": "Heartbeat",
                            "message": "",
                            "lastTransitionTime": "2026-11-22T12:00:00Z",
                        }
                    ]
                }
            },
        )
        await h.relabel("b1", {"touched": "yes"})  # a marker event, processed after the first
        await rescheduled_after(h, manager, {"ns-b/prod"})
        assert not any(k.startswith("ns-a/") for k in manager.reconciler.history)


async def test_a_taint_with_toleration_seconds_is_dropped_when_the_toleration_expires() -> None:
    async with hub() as h:
        tolerant = placement(
            "ns-a",
            "tolerant",
            tolerations=[toleration("example.com/drain", "Exists", seconds=60)],
        )
        await create(h, [*TWO_TEAMS, tolerant])
        manager = await h.manager()
        await settled(h, manager)
        assert await h.decided("ns-a", "tolerant") == ["a1", "a2"]
        drain = taint("example.com/drain", "NoSelect", added=h.wall())
        await h.gateway.merge_patch(ManagedCluster, "a2", {"spec": {"taints": [drain.to_wire()]}})
        await rescheduled_after(h, manager, {"ns-a/tolerant"})
        assert await h.decided("ns-a", "tolerant") == ["a1", "a2"]  # still tolerated
        assert await h.decided("ns-a", "all") == ["a1"]  # no toleration: dropped at once
        manager.reconciler.history.clear()
        await h.clock.advance(59)
        await manager.wait_idle()
        assert "ns-a/tolerant" not in manager.reconciler.history
        await h.clock.advance(1)
        await rescheduled_after(h, manager, {"ns-a/tolerant"})
        assert await h.decided("ns-a", "tolerant") == ["a1"]


async def test_an_addon_score_change_reschedules_the_placements_weighing_it_only() -> None:
    async with hub() as h:
        await create(
            h, [*TWO_TEAMS, score("b1", "usage", {"free": 10}), score("b2", "usage", {"free": 20})]
        )
        manager = await h.manager()
        await settled(h, manager)
        assert await h.decided("ns-b", "scored") == ["b2"]
        await h.gateway.patch_status(
            AddOnPlacementScore,
            "usage",
            {"status": {"scores": [{"name": "free", "value": 90}]}},
            "b1",
        )
        ran = await rescheduled_after(h, manager, {"ns-b/scored"})
        assert ran == {"ns-b/scored"}
        assert await h.decided("ns-b", "scored") == ["b1"]


async def test_deleting_a_binding_empties_the_placements_of_its_namespace_only() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await settled(h, manager)
        await h.gateway.delete(ManagedClusterSetBinding, "team-b", "ns-b")
        ran = await rescheduled_after(h, manager, {"ns-b/prod", "ns-b/scored"})
        assert ran == {"ns-b/prod", "ns-b/scored"}
        assert await h.decided("ns-b", "prod") == []
        assert await h.condition("ns-b", "prod", SATISFIED) == (
            "False",
            "NoManagedClusterSetBindings",
            "No valid ManagedClusterSetBindings found in placement namespace",
        )
        assert await h.decided("ns-a", "prod") == ["a1"]


async def test_deleting_a_cluster_removes_it_from_the_placements_that_had_it() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await settled(h, manager)
        await h.gateway.delete(ManagedCluster, "a1")
        ran = await rescheduled_after(h, manager, {"ns-a/prod", "ns-a/all"})
        assert ran == {"ns-a/prod", "ns-a/all"}
        assert await h.decided("ns-a", "prod") == []
        assert await h.decided("ns-a", "all") == ["a2"]


# --- idempotence -------------------------------------------------------------------------------


async def test_a_reconcile_with_nothing_changed_writes_nothing() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await settled(h, manager)
        revision = h.server.store.rv
        manager.resync_now()
        await rescheduled_after(h, manager, {"ns-a/prod", "ns-a/all", "ns-b/prod"})
        assert h.server.store.rv == revision


async def test_restarting_the_controller_on_an_unchanged_hub_writes_nothing() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        first = await h.manager()
        await first.wait_idle()
        await h.stop(first)
        revision = h.server.store.rv
        second = await h.manager()
        await second.wait_idle()
        assert set(second.reconciler.history) >= {"ns-a/prod", "ns-a/all", "ns-b/prod"}
        assert h.server.store.rv == revision


# --- misconfiguration and deletion ------------------------------------------------------------


async def test_a_misconfigured_update_keeps_the_decisions_and_says_why() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await settled(h, manager)
        await h.gateway.merge_patch(
            Placement,
            "prod",
            {"spec": {"prioritizerPolicy": {"mode": "Sideways"}}},
            "ns-a",
        )

        async def misconfigured() -> tuple[str, str, str] | None:
            value = await h.condition("ns-a", "prod", MISCONFIGURED)
            return value if value[0] == "True" else None

        status = await eventually(misconfigured)
        assert status == ("True", "Misconfigured", ":incorrect prioritizer policy mode: Sideways")
        assert await h.decided("ns-a", "prod") == ["a1"]
        satisfied = await h.condition("ns-a", "prod", SATISFIED)
        assert satisfied[:2] == ("False", "NoManagedClusterMatched")


async def test_deleting_a_placement_deletes_its_decisions() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await settled(h, manager)
        assert await h.decided("ns-a", "all") == ["a1", "a2"]
        await h.gateway.delete(Placement, "all", "ns-a")

        async def only_prod_left() -> bool:
            left = (await h.gateway.list(PlacementDecision, "ns-a")).items
            return [pd.name for pd in left] == ["prod-decision-1"]

        await eventually(only_prod_left)
        await manager.wait_idle()
        assert await only_prod_left()


async def test_a_disabled_placement_is_left_alone() -> None:
    async with hub() as h:
        disabled = placement("ns-a", "off")
        disabled.metadata.annotations = {
            "cluster.open-cluster-management.io/experimental-scheduling-disable": "true"
        }
        await create(h, [*TWO_TEAMS, disabled])
        manager = await h.manager()
        await manager.wait_idle()
        assert "ns-a/off" in manager.reconciler.history
        assert await h.decided("ns-a", "off") == []
        assert (await h.placement("ns-a", "off")).status is None


async def test_the_periodic_resync_schedules_every_placement_again_and_writes_nothing() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager(resync=600.0)
        await settled(h, manager)
        revision = h.server.store.rv
        await h.clock.advance(599)
        await manager.wait_idle()
        assert not manager.reconciler.history
        await h.clock.advance(1)
        ran = await rescheduled_after(h, manager, {"ns-a/prod", "ns-a/all", "ns-b/prod"})
        assert ran >= {"ns-a/prod", "ns-a/all", "ns-b/prod", "ns-b/scored"}
        assert h.server.store.rv == revision
