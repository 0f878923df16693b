"""A cold start decides the same with sixteen workers as with one: each placement's Balance
counts the decisions of every placement scheduled before it, written already or still being
written (the reconciler assumes them in the index the moment they are scheduled). Before, a
placement counted only the decisions whose writes had been answered, so with several workers the
placements scheduled while the first writes were in flight all saw empty clusters, and which
ones did depended on how fast the server answered."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.hub.writer import WritePlan
from controllers.kube.errors import ApiError
from placement.testing import binding, cluster, cluster_set, placement
from tests.controllers.hub.controller_hub import hub
from tests.controllers.hub.test_controller import create

pytestmark = pytest.mark.asyncio

PLACEMENTS = [f"p{j}" for j in range(6)]


async def _cold_start(workers: int) -> dict[str, list[str]]:
    """Four clusters and six placements of two clusters each, all there before the controller
    starts; what each placement decided."""
    async with hub() as h:
        fleet = [cluster(f"c{i}", cluster_set="fleet") for i in range(4)]
        wanted = [placement("apps", name, numberOfClusters=2) for name in PLACEMENTS]
        await create(h, [*fleet, cluster_set("fleet"), binding("apps", "fleet"), *wanted])
        manager = await h.manager(workers=workers)
        await manager.wait_idle()
        return {name: sorted(await h.decided("apps", name)) for name in PLACEMENTS}


async def test_sixteen_workers_decide_a_cold_start_as_one_worker_does() -> None:
    one = await _cold_start(1)
    # Balance: each placement takes the two clusters the ones before it left least used.
    assert one == {
        "p0": ["c0", "c1"],
        "p1": ["c2", "c3"],
        "p2": ["c0", "c1"],
        "p3": ["c2", "c3"],
        "p4": ["c0", "c1"],
        "p5": ["c2", "c3"],
    }
    assert await _cold_start(16) == one


async def test_decisions_whose_writes_failed_are_not_counted() -> None:
    """A placement whose writes fail leaves in the index what the server holds (nothing here),
    not the decisions assumed when it was scheduled: the next placement counts no phantom."""
    async with hub() as h:
        fleet = [cluster(f"c{i}", cluster_set="fleet") for i in range(4)]
        await create(h, [*fleet, cluster_set("fleet"), binding("apps", "fleet")])
        manager = await h.manager(workers=1)
        reconciler = manager.reconciler
        seen: list[int] = []

        async def refused(plan: WritePlan, current: Any) -> Any:
            # what the scheduler decided is assumed by now: the index counts it
            seen.append(reconciler.index.snapshot().decisions.rows_of("apps", "p0").size)
            raise ApiError("the server refused", code=500)

        reconciler.writer.apply = refused  # type: ignore[method-assign]
        await create(h, [placement("apps", "p0", numberOfClusters=2)])
        await manager.wait_idle()
        assert seen and seen[0] == 2
        assert reconciler.index.snapshot().decisions.rows_of("apps", "p0").size == 0
        assert await h.decided("apps", "p0") == []
