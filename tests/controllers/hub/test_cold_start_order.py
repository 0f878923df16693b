"""A cold start decides the same with sixteen workers as with one: each placement's Balance
counts the decisions of every placement scheduled before it, written already or still being
written (the reconciler assumes them in the index the moment they are scheduled). Before, a
placement counted only the decisions whose writes had been answered, so with several workers the
placements scheduled while the first writes were in flight all saw empty clusters, and which
ones did depended on how fast the server answered."""

from __future__ import annotations

from typing import Any

import pytest

from apis.placements import Placement
from controllers.hub.writer import WritePlan
from controllers.kube.errors import ApiError
from placement.rows import DecisionRow
from placement.testing import binding, cluster, cluster_set, placement
from tests.controllers.hub.controller_hub import hub
from tests.controllers.hub.test_controller import create

pytestmark = pytest.mark.asyncio

PLACEMENTS = [f"p{j}" for j in range(6)]


async def _cold_start(
    workers: int, names: list[str] = PLACEMENTS, clusters: int = 4
) -> dict[str, list[str]]:
    """`clusters` clusters and placements of two clusters each, all there before the controller
    starts; what each placement decided."""
    async with hub() as h:
        fleet = [cluster(f"c{i}", cluster_set="fleet") for i in range(clusters)]
        wanted = [placement("apps", name, numberOfClusters=2) for name in names]
        await create(h, [*fleet, cluster_set("fleet"), binding("apps", "fleet"), *wanted])
        manager = await h.manager(workers=workers)
        await manager.wait_idle()
        return {name: sorted(await h.decided("apps", name)) for name in names}


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


async def test_a_half_written_decision_does_not_replace_the_assumed_one() -> None:
    """While a placement's writes are in flight, the created PlacementDecision (a create cannot
    carry the status: no decision yet) comes back as the create's answer. The index keeps
    counting what the placement was scheduled to until the writes are done, so a placement
    scheduled meanwhile counts it whole, however far the writes have got."""
    async with hub() as h:
        fleet = [cluster(f"c{i}", cluster_set="fleet") for i in range(4)]
        await create(h, [*fleet, cluster_set("fleet"), binding("apps", "fleet")])
        manager = await h.manager(workers=1)
        index, sink = manager.reconciler.index, manager.sink
        answers: list[tuple[int, int]] = []  # (decisions in the answer, decisions counted)
        written = sink.written

        def counting(obj: DecisionRow | Placement) -> None:
            written(obj)
            if isinstance(obj, DecisionRow):
                counted = index.snapshot().decisions.rows_of("apps", "p0").size
                answers.append((len(obj.clusters), counted))

        sink.written = counting  # type: ignore[method-assign]
        await create(h, [placement("apps", "p0", numberOfClusters=2)])
        await manager.wait_idle()
        assert answers == [(0, 2), (2, 2)]  # the create's answer, then the status patch's
        assert sorted(await h.decided("apps", "p0")) == ["c0", "c1"]


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
