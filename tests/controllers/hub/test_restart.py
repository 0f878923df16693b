"""A restart (or the periodic resync) changes nothing on a settled hub, Balance placements
included: the placements the start queues without a cause keep their decisions while the
scheduler may still make them; OCM would re-decide them with the other placements' current
decisions and move some (shown here with `placement simulate`, which is OCM's schedule). A
placement whose own inputs changed while the controller was down is scheduled as OCM does."""

from __future__ import annotations

from typing import Any

import pytest

from apis.cluster import ManagedCluster
from apis.placements import Placement
from controllers.hub.manager import Manager, ManagerOptions
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway
from placement.simulate import simulate
from placement.testing import binding, cluster, cluster_set, placement
from plugins import default_scheduler
from tests.controllers.hub.controller_hub import START, Hub, hub
from tests.controllers.hub.test_controller import create, everything

pytestmark = pytest.mark.asyncio

NAMES = ["p0", "p2", "p4"]


async def _settled_balance_hub(h: Hub) -> None:
    """Six placements of two clusters each out of four, created one by one: each is decided
    with the Balance counts of the ones before it, so they alternate between c0+c1 and c2+c3.
    Then, with the controller stopped, the odd ones are deleted: c2 and c3 are left unused and
    nothing queues the others."""
    fleet = [cluster(f"c{i}", cluster_set="fleet") for i in range(4)]
    await create(h, [*fleet, cluster_set("fleet"), binding("apps", "fleet")])
    first = await h.manager()
    for j in range(6):
        await create(h, [placement("apps", f"p{j}", numberOfClusters=2)])
        await first.wait_idle()
    await h.stop(first)
    for name in ("p1", "p3", "p5"):  # their PlacementDecisions go with them
        await h.gateway.delete(Placement, name, "apps")


async def _decided(h: Hub) -> dict[str, list[str]]:
    return {name: await h.decided("apps", name) for name in NAMES}


async def test_a_restart_on_a_settled_hub_with_balance_placements_writes_nothing() -> None:
    async with hub() as h:
        await _settled_balance_hub(h)
        before = await _decided(h)
        # OCM's schedule of this hub moves some placement (Balance counts changed under them).
        ocm = simulate(await everything(h), default_scheduler(), START)
        ocm_decided = {
            item.placement.name: sorted(
                d.cluster_name for pd in item.decisions if pd.status for d in pd.status.decisions
            )
            for item in ocm
        }
        moved = {name for name in NAMES if ocm_decided[name] != sorted(before[name])}
        assert moved == {"p0"}, moved  # c2+c3 unused: p0 would move there
        revision = h.server.store.rv
        second = await h.manager()
        await second.wait_idle()
        assert set(second.reconciler.history) >= {f"apps/{n}" for n in NAMES}
        assert before == {"p0": ["c0", "c1"], "p2": ["c0", "c1"], "p4": ["c0", "c1"]}
        assert await _decided(h) == before
        assert h.server.store.rv == revision  # no write at all: decisions, status, events
        second.resync_now()  # the periodic resync is as quiet
        await second.wait_idle()
        assert h.server.store.rv == revision


async def test_a_placement_whose_cluster_went_away_meanwhile_is_rescheduled() -> None:
    async with hub() as h:
        await _settled_balance_hub(h)
        assert (await _decided(h))["p0"] == ["c0", "c1"]
        gone = "c1"
        await h.gateway.delete(ManagedCluster, gone)
        second = await h.manager()
        await second.wait_idle()
        after = await _decided(h)
        for name in NAMES:  # each lost c1: rescheduled as OCM would, none kept its old pair
            assert gone not in after[name] and len(after[name]) == 2, after


async def test_a_cold_start_schedules_each_undecided_placement_once() -> None:
    # With no decisions to keep, the start's keep-cycle would select what the first cycle did:
    # it is not run (placements with decisions still are: the restart test above).
    async with hub() as h:
        fleet = [cluster(f"c{i}", cluster_set="fleet") for i in range(4)]
        await create(h, [*fleet, cluster_set("fleet"), binding("apps", "fleet")])
        await create(h, [placement("apps", f"p{j}", numberOfClusters=2) for j in range(3)])
        cycles: list[tuple[str, bool]] = []
        scheduler = default_scheduler()
        schedule = scheduler.schedule

        def counted(p: Placement, *args: Any, **kwargs: Any) -> Any:
            cycles.append((p.name, bool(kwargs.get("keep"))))
            return schedule(p, *args, **kwargs)

        scheduler.schedule = counted  # type: ignore[method-assign, assignment]
        gateway = await Gateway.connect(ClusterAccess(url=h.server.url), backoff=0.01)
        options = ManagerOptions(workers=1, http_addr=None)
        manager = Manager(gateway, options, scheduler=scheduler, clock=h.clock, wall=h.wall)
        h.managers.append(manager)
        await manager.start(sync_timeout=10)
        await manager.wait_idle()
        assert sorted(cycles) == [("p0", False), ("p1", False), ("p2", False)]
        for j in range(3):
            assert len(await h.decided("apps", f"p{j}")) == 2
