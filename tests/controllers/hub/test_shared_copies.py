"""One copy of each object in the controller: the cluster cache and the index share each
cluster's row, and the informers and the write-through views share each Placement and
PlacementDecision once the echo of our last write to it has arrived."""

from __future__ import annotations

import pytest

from apis.cluster import ManagedCluster
from apis.placements import Placement, PlacementDecision
from controllers.hub.manager import Manager
from tests.controllers.embedded.hub import eventually
from tests.controllers.hub.controller_hub import hub
from tests.controllers.hub.test_controller import TWO_TEAMS, create

pytestmark = pytest.mark.asyncio


def shared(manager: Manager) -> bool:
    caches = {informer.cls: informer for informer in manager.informers}
    clusters = caches[ManagedCluster]
    placements, decisions = caches[Placement], caches[PlacementDecision]
    cluster_names, placement_keys, decision_keys = (
        clusters.keys(),
        placements.keys(),
        decisions.keys(),
    )
    return (
        bool(decision_keys)
        and all(clusters.get(k) is manager.index.cluster(k) for k in cluster_names)
        and all(placements.get(k) is manager.placements.get(k) for k in placement_keys)
        and all(decisions.get(k) is manager.decisions.get(k) for k in decision_keys)
    )


async def test_caches_index_and_views_keep_one_copy_of_each_object() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await manager.wait_idle()
        await eventually(lambda: shared(manager))
        await h.relabel("a2", {"env": "prod"})  # one more write of ns-a/prod's objects
        await eventually(lambda: "ns-a/prod" in manager.reconciler.history)
        await manager.wait_idle()
        await eventually(lambda: shared(manager))
