"""Replay (issue 20, item 1): random event sequences fed into the controller on the injected
clock, then the clock moved past every toleration expiry: the decisions must be what
`placement simulate` computes offline for the objects on the hub at that moment.

The sequences mix what decides a taint filter's outcome and its requeue: taints with and
without `tolerationSeconds` (NoSelect, NoSelectIfNew, PreferNoSelect), label changes that make
a placement newly select a tainted cluster, cluster-set moves and AddOnPlacementScore changes.
The resync is off (a day): only the controller's own requeues may catch an expiry, as the
resync would hide a lost one for ten minutes.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

import pytest

from apis.cluster import AddOnPlacementScore, ManagedCluster, Taint
from apis.meta import KubeObject
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
from tests.controllers.hub.controller_hub import START, Hub, hub
from tests.controllers.hub.test_controller import create, decision_view, everything

pytestmark = pytest.mark.asyncio

CLUSTERS = [f"c{i}" for i in range(12)]
SETS = ("s0", "s1", "s2", "s3", "s4", "s5", "s6")  # s6 is not bound: moving there deselects
KEYS = ("drain", "upgrade", "gpu")
EFFECTS = ("NoSelect", "NoSelect", "NoSelectIfNew", "PreferNoSelect")
LONGEST = 60  # the longest tolerationSeconds below

# Each placement sees one or two sets, so that an event reaches a few placements only (OCM's
# fan-out) and the event that makes one newly select a tainted cluster is often its last; the
# tolerations outlast a sequence's events. Prioritizers on add-on scores only (Exact mode):
# what a placement selects depends on the fleet alone, not on the order in which placements
# were reconciled (Balance would).
EXACT = {"mode": "Exact", "configurations": [addon("usage", "free")]}
PLACEMENTS = [
    placement(
        "apps",
        "all",
        clusterSets=["s0", "s1"],
        tolerations=[toleration("drain", "Exists", seconds=40)],
    ),
    placement(
        "apps",
        "prod",
        clusterSets=["s2"],
        predicates=[predicate(labels={"env": "prod"})],
        tolerations=[
            toleration("drain", "Exists", seconds=30),
            toleration("upgrade", "Exists"),
        ],
    ),
    placement(
        "apps",
        "top3",
        clusterSets=["s3", "s4"],
        numberOfClusters=3,
        prioritizerPolicy=EXACT,
        tolerations=[
            toleration("upgrade", "Exists", seconds=LONGEST),
            toleration("gpu", "Equal", "a100", seconds=30),
        ],
    ),
    placement(
        "apps",
        "dev",
        clusterSets=["s5"],
        predicates=[predicate(labels={"env": "dev"})],
        tolerations=[toleration(None, "Exists", seconds=45)],
    ),
    placement(
        "apps",
        "gpus",
        clusterSets=["s1", "s4"],
        tolerations=[
            toleration("gpu", "Exists", seconds=50),
            toleration("drain", "Exists", effect="NoSelect", seconds=35),
        ],
    ),
]


def fleet(rng: random.Random) -> list[KubeObject]:
    objects: list[KubeObject] = [
        *(cluster_set(name) for name in SETS),
        *(binding("apps", name) for name in SETS[:-1]),
        *PLACEMENTS,
    ]
    for name in CLUSTERS:
        env = rng.choice(["prod", "dev"])
        taints = [random_taint(rng, START)] if rng.random() < 0.5 else []
        where = rng.choice(SETS[:-1])
        objects.append(cluster(name, labels={"env": env}, cluster_set=where, taints=taints))
        objects.append(score(name, "usage", {"free": rng.randrange(100)}))
    return objects


def random_taint(rng: random.Random, added: datetime) -> Taint:
    key = rng.choice(KEYS)
    value = "a100" if key == "gpu" and rng.random() < 0.7 else None
    return taint(key, rng.choice(EFFECTS), value, added=added)


async def random_event(h: Hub, rng: random.Random) -> None:
    """One change to the fleet, stamped on the injected clock."""
    name = rng.choice(CLUSTERS)
    what = rng.choice(["taint"] * 3 + ["untaint"] + ["label"] * 3 + ["set"] * 2 + ["score"])
    if what == "taint":
        current = await h.gateway.get(ManagedCluster, name)
        taints = [t.to_wire() for t in current.spec.taints or []]
        new = random_taint(rng, h.wall()).to_wire()
        # A taint of the same key and effect is replaced (a new timeAdded), as a re-taint does.
        taints = [t for t in taints if (t["key"], t["effect"]) != (new["key"], new["effect"])]
        await h.gateway.merge_patch(ManagedCluster, name, {"spec": {"taints": [*taints, new]}})
    elif what == "untaint":
        current = await h.gateway.get(ManagedCluster, name)
        taints = [t.to_wire() for t in current.spec.taints or []]
        if taints:
            taints.pop(rng.randrange(len(taints)))
        await h.gateway.merge_patch(ManagedCluster, name, {"spec": {"taints": taints}})
    elif what == "label":
        await h.relabel(name, {"env": rng.choice(["prod", "dev", "test"])})
    elif what == "set":
        await h.relabel(name, {"cluster.open-cluster-management.io/clusterset": rng.choice(SETS)})
    else:
        status = {"status": {"scores": [{"name": "free", "value": rng.randrange(100)}]}}
        await h.gateway.patch_status(AddOnPlacementScore, "usage", status, name)


async def decisions_by_placement(h: Hub) -> dict[str, list[dict[str, Any]]]:
    pds = sorted((await h.gateway.list(PlacementDecision)).items, key=lambda pd: pd.name)
    out: dict[str, list[dict[str, Any]]] = {}
    for pd in pds:
        out.setdefault(f"{pd.namespace}/{pd.placement_name}", []).append(decision_view(pd))
    return out


async def replay(h: Hub, manager: Manager, rng: random.Random, events: int) -> None:
    for _ in range(events):
        for _ in range(rng.choice([1, 1, 2, 3])):  # sometimes a burst before the controller runs
            await random_event(h, rng)
        await manager.wait_idle()
        await h.clock.advance(rng.choice([0, 0, 0.5, 1, 3]))
        await manager.wait_idle()


@pytest.mark.parametrize("seed", range(20))
async def test_after_every_expiry_the_decisions_are_what_simulate_computes(seed: int) -> None:
    rng = random.Random(seed)
    async with hub(["apps"]) as h:
        await create(h, fleet(rng))
        manager = await h.manager(resync=86_400.0)
        await manager.wait_idle()
        await replay(h, manager, rng, events=3)
        # Past every expiry (the resync, a day away, never comes).
        for _ in range(3):
            await h.clock.advance(LONGEST / 2)
            await manager.wait_idle()
        objects = await everything(h)
        expected = simulate(objects, default_scheduler(), h.wall())
        have = await decisions_by_placement(h)
        placements = {p.key: p for p in (await h.gateway.list(Placement)).items}
        for item in expected:
            key = item.placement.key
            assert [decision_view(pd) for pd in item.decisions] == have.get(key, []), key
            got = placements[key].status
            want = item.placement.status
            assert got is not None and want is not None
            assert got.number_of_selected_clusters == want.number_of_selected_clusters, key
