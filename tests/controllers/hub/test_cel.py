"""CEL placements in the hub controller: a score object's change re-queues exactly the
placements whose CEL reads it (OCM does not), the CEL runtime metric on `/metrics`, and CEL
reading fields no row column holds decides as `placement simulate` does."""

from __future__ import annotations

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from apis.cluster import AddOnPlacementScore, ManagedCluster
from apis.meta import KubeObject
from controllers.hub.fanout import Fanout
from controllers.hub.metrics import BUCKETS, SCHEDULING_NAME
from placement.simulate import simulate
from placement.testing import binding, cluster, cluster_set, placement, predicate, score
from plugins import default_scheduler
from tests.controllers.hub.controller_hub import START, hub
from tests.controllers.hub.test_controller import (
    create,
    everything,
    rescheduled_after,
    settled,
)

READS_USAGE = 'managedCluster.scores("usage").exists(s, s.name == "free" && s.value > 15)'
READS_LABELS = 'managedCluster.metadata.labels["env"] == "prod"'


def cel_placement(namespace: str, name: str, *expressions: str) -> KubeObject:
    return placement(namespace, name, predicates=[predicate(cel=list(expressions))])


# --- the fan-out's index ---------------------------------------------------------------------


def fanout_of(*placements: KubeObject) -> Fanout:
    """Namespace `apps` bound to the set `global` (every cluster); `ops` bound to nothing."""
    fanout = Fanout()
    fanout.set_upserted(cluster_set("global", {}))
    fanout.binding_upserted(binding("apps", "global"))
    for p in placements:
        fanout.placement_upserted(p)  # type: ignore[arg-type]
    return fanout


def test_a_score_reaches_the_placements_whose_cel_reads_it_by_name() -> None:
    fanout = fanout_of(
        cel_placement("apps", "usage", READS_USAGE),
        cel_placement("apps", "labels", READS_LABELS),
        cel_placement("apps", "other", 'managedCluster.scores("other").size() > 0'),
        cel_placement("ops", "usage", READS_USAGE),  # its namespace cannot see the cluster
    )
    assert fanout.for_score(score("c1", "usage", {"free": 1}), {}) == {"apps/usage"}
    assert fanout.for_score(score("c1", "other", {"free": 1}), {}) == {"apps/other"}
    assert fanout.for_score(score("c1", "unread", {"free": 1}), {}) == set()


def test_a_computed_score_name_makes_every_score_of_a_visible_cluster_count() -> None:
    computed = "managedCluster.scores(managedCluster.metadata.name).size() > 0"
    fanout = fanout_of(cel_placement("apps", "any", computed))
    assert fanout.for_score(score("c1", "whatever", {"x": 1}), {}) == {"apps/any"}
    assert fanout.for_score(score("c1", "whatever", {"x": 1}), None) == set()


def test_changing_or_deleting_a_cel_placement_updates_what_it_is_reached_by() -> None:
    fanout = fanout_of(cel_placement("apps", "p", READS_USAGE))
    fanout.placement_upserted(cel_placement("apps", "p", READS_LABELS))  # type: ignore[arg-type]
    assert fanout.for_score(score("c1", "usage", {"free": 1}), {}) == set()
    fanout.placement_upserted(cel_placement("apps", "p", READS_USAGE))  # type: ignore[arg-type]
    assert fanout.for_score(score("c1", "usage", {"free": 1}), {}) == {"apps/p"}
    fanout.placement_deleted("apps/p")
    assert fanout.for_score(score("c1", "usage", {"free": 1}), {}) == set()


def test_an_object_only_change_reaches_the_cel_placements_that_see_the_cluster() -> None:
    fanout = fanout_of(
        cel_placement("apps", "cel", READS_LABELS),
        placement("apps", "labels", predicates=[predicate(labels={"env": "prod"})]),
        cel_placement("ops", "cel", READS_LABELS),
    )
    assert fanout.for_cel_cluster({"env": "prod"}) == {"apps/cel"}
    fanout.placement_deleted("apps/cel")
    assert fanout.for_cel_cluster({"env": "prod"}) == set()


def test_a_placement_whose_cel_does_not_compile_is_reached_by_no_score() -> None:
    fanout = fanout_of(cel_placement("apps", "broken", 'managedCluster.scores("usage") >'))
    assert fanout.for_score(score("c1", "usage", {"free": 1}), {}) == set()


# --- end to end on the embedded API server ---------------------------------------------------

FLEET: list[KubeObject] = [
    cluster("b1", labels={"env": "prod"}, cluster_set="team-b"),
    cluster("b2", labels={"env": "dev"}, cluster_set="team-b"),
    cluster_set("team-b"),
    binding("ns-b", "team-b"),
    cel_placement("ns-b", "by-usage", READS_USAGE),
    cel_placement("ns-b", "by-label", READS_LABELS),
    score("b1", "usage", {"free": 10}),
    score("b2", "usage", {"free": 20}),
]


@pytest.mark.asyncio
async def test_a_score_change_alone_moves_the_decision_of_the_cel_placement_reading_it() -> None:
    async with hub() as h:
        await create(h, FLEET)
        manager = await h.manager()
        await settled(h, manager)
        assert await h.decided("ns-b", "by-usage") == ["b2"]
        assert await h.decided("ns-b", "by-label") == ["b1"]
        await h.gateway.patch_status(
            AddOnPlacementScore,
            "usage",
            {"status": {"scores": [{"name": "free", "value": 90}]}},
            "b1",
        )
        await rescheduled_after(h, manager, {"ns-b/by-usage"})
        # Re-queued once, alone: the placement that does not read the score stays put.
        assert list(manager.reconciler.history) == ["ns-b/by-usage"]
        assert await h.decided("ns-b", "by-usage") == ["b1", "b2"]
        assert await h.decided("ns-b", "by-label") == ["b1"]


@pytest.mark.asyncio
async def test_deleting_the_score_a_cel_placement_reads_drops_that_cluster() -> None:
    async with hub() as h:
        await create(h, FLEET)
        manager = await h.manager()
        await settled(h, manager)
        await h.gateway.delete(AddOnPlacementScore, "usage", "b2")
        await rescheduled_after(h, manager, {"ns-b/by-usage"})
        assert list(manager.reconciler.history) == ["ns-b/by-usage"]
        assert await h.decided("ns-b", "by-usage") == []  # missing object: not matched, as OCM


# --- the CEL runtime metric ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_metrics_show_the_cel_runtime_histogram_once_a_cel_placement_is_scheduled() -> None:
    async with hub() as h:
        await create(h, [o for o in FLEET if o.kind != "Placement"])
        manager = await h.manager(http_addr="127.0.0.1:0")
        manager.metrics.instrument(manager.reconciler.scheduler)
        async with aiohttp.ClientSession() as session:
            url = f"http://{manager.http_address}/metrics"
            async with session.get(url) as response:
                before = await response.text()
            await create(h, [cel_placement("ns-b", "by-usage", READS_USAGE)])
            await rescheduled_after(h, manager, {"ns-b/by-usage"})
            async with session.get(url) as response:
                after = await response.text()
    assert "scheduling_cel_runtime_duration_seconds_count" not in before
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(after)
        for s in family.samples
    }
    cel = "scheduling_cel_runtime_duration_seconds"
    # One observation per cluster evaluated (b1 and b2), in OCM's decade buckets.
    assert samples[(f"{cel}_count", frozenset({("name", SCHEDULING_NAME)}))] == 2
    les = sorted(float(dict(labels)["le"]) for name, labels in samples if name == f"{cel}_bucket")
    assert les == [*map(float, BUCKETS), float("inf")]


# --- fields no row column holds: the controller decides as simulate ---------------------------


def described(name: str, tier: str, version: str, available: str) -> ManagedCluster:
    base = cluster(name, labels={"env": "prod"}, cluster_set="team-b").to_wire()
    # status.version is what OCM's agent reports, but our CRD (like apis/) leaves it untyped and
    # the API server prunes it: the version rides on an annotation here.
    base["metadata"]["annotations"] = {"example.com/tier": tier, "example.com/k8s": version}
    base["status"] = {
        "conditions": [
            {
                "type": "ManagedClusterConditionAvailable",
                "status": available,
                "reason": "ManagedClusterAvailable",
                "message": "",
                "lastTransitionTime": "2026-11-22T11:00:00Z",
            }
        ],
    }
    return ManagedCluster.model_validate(base)


OUTSIDE_THE_ROW: list[KubeObject] = [
    described("c1", "gold", "v1.30.2", "True"),
    described("c2", "gold", "v1.28.9", "True"),
    described("c3", "silver", "v1.31.0", "True"),
    described("c4", "gold", "v1.31.0", "False"),
    cluster_set("team-b"),
    binding("ns-b", "team-b"),
    cel_placement(
        "ns-b", "gold", 'managedCluster.metadata.annotations["example.com/tier"] == "gold"'
    ),
    cel_placement(
        "ns-b",
        "recent",
        'semver(managedCluster.metadata.annotations["example.com/k8s"].substring(1))'
        '.isGreaterThan(semver("1.29.0"))',
    ),
    cel_placement(
        "ns-b",
        "available",
        'managedCluster.status.conditions.exists(c, c.type == "ManagedClusterConditionAvailable"'
        ' && c.status == "True")',
        'managedCluster.metadata.annotations["example.com/tier"] == "gold"',
    ),
]


@pytest.mark.asyncio
async def test_cel_on_annotations_version_and_conditions_decides_as_simulate() -> None:
    async with hub() as h:
        await create(h, OUTSIDE_THE_ROW)
        before = await everything(h)
        manager = await h.manager()
        await manager.wait_idle()
        expected = {
            item.placement.key: sorted(
                d.cluster_name
                for pd in item.decisions
                for d in (pd.status.decisions if pd.status else [])
            )
            for item in simulate(before, default_scheduler(), START)
        }
        got = {
            key: sorted(await h.decided(*key.split("/")))
            for key in ("ns-b/gold", "ns-b/recent", "ns-b/available")
        }
    assert got == expected
    assert got == {
        "ns-b/gold": ["c1", "c2", "c4"],
        "ns-b/recent": ["c1", "c3", "c4"],
        "ns-b/available": ["c1", "c2"],
    }
