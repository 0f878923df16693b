"""`FleetIndex`: snapshots equal `FleetSnapshot.build` of the stored objects after any sequence of
events, never change once handed out, and share what did not change."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.cluster import (
    CLUSTER_SET_LABEL,
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.meta import KubeObject
from apis.placements import Placement, PlacementDecision
from placement.index.fleet_index import FleetIndex, cluster_row, score_row
from placement.snapshot.fleet_snapshot import Column, FleetSnapshot
from placement.testing import (
    NOW,
    SCORE_RESOURCE,
    addon,
    binding,
    builtin,
    cluster,
    cluster_set,
    decision,
    placement,
    predicate,
    score,
    snapshot,
    synthetic_fleet,
    taint,
    toleration,
)
from plugins import default_scheduler

# --- comparing snapshots ---------------------------------------------------------------------


def decoded(column: Column) -> list[str | None]:
    """The value of every row; also checks that `code_of` finds each value's code."""
    out = [column.value_at(row) for row in range(column.codes.size)]
    for row, value in enumerate(out):
        if value is not None:
            assert column.code_of(value) == column.codes[row]
    return out


def columns(fleet: FleetSnapshot, claims: bool) -> dict[str, list[str | None]]:
    """Decoded columns of the keys some row has (an all-absent column reads as no column)."""
    found = {key: decoded(col) for key, col in (fleet.claims if claims else fleet.labels).items()}
    return {key: values for key, values in found.items() if any(v is not None for v in values)}


def decisions_by_name(fleet: FleetSnapshot) -> tuple[dict[str, int], dict[Any, Counter[str]]]:
    names = [*fleet.names, *fleet.decisions.extra_names]
    assert fleet.decisions.totals.size == len(names)
    totals = {name: int(total) for name, total in zip(names, fleet.decisions.totals, strict=True)}
    rows = {
        key: Counter(names[int(r)] for r in rows)
        for key, rows in fleet.decisions.by_placement.items()
    }
    return totals, rows


def addons(fleet: FleetSnapshot) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for resource, column in fleet.addons.items():
        if not column.present.any():
            continue
        names = {n for n, has in column.has_score.items() if has.any()}
        out[resource] = (
            column.present.tolist(),
            np.nan_to_num(column.valid_until, nan=-1.0).tolist(),
            {n: column.scores[n].tolist() for n in sorted(names)},
            {n: column.has_score[n].tolist() for n in sorted(names)},
        )
    return out


def assert_same_fleet(actual: FleetSnapshot, expected: FleetSnapshot) -> None:
    """Equal as a plugin sees them: codes may differ, decoded values may not."""
    assert actual.names == expected.names
    assert dict(actual.index) == dict(expected.index)
    assert columns(actual, claims=False) == columns(expected, claims=False)
    assert columns(actual, claims=True) == columns(expected, claims=True)
    assert actual.deleting.tolist() == expected.deleting.tolist()
    for got, want in (
        (actual.allocatable, expected.allocatable),
        (actual.capacity, expected.capacity),
    ):
        assert got.keys() == want.keys()
        for resource in want:
            np.testing.assert_array_equal(got[resource], want[resource])  # NaN equals NaN
    assert actual.taints == expected.taints
    assert actual.taint_table.rows.tolist() == expected.taint_table.rows.tolist()
    assert [actual.taint_table.signatures[k] for k in actual.taint_table.kinds] == [
        expected.taint_table.signatures[k] for k in expected.taint_table.kinds
    ]
    assert dict(actual.cluster_sets) == dict(expected.cluster_sets)
    assert dict(actual.bindings) == dict(expected.bindings)
    assert set(actual.decisions.extra_names) == set(expected.decisions.extra_names)
    assert decisions_by_name(actual) == decisions_by_name(expected)
    assert addons(actual) == addons(expected)


def assert_unchanged(fleet: FleetSnapshot, earlier_copy: FleetSnapshot) -> None:
    """Exactly as when it was copied: the same codes, values and value -> code mappings too."""
    assert_same_fleet(fleet, earlier_copy)
    for mine, theirs in ((fleet.labels, earlier_copy.labels), (fleet.claims, earlier_copy.claims)):
        assert mine.keys() == theirs.keys()
        for key, column in mine.items():
            assert column.codes.tolist() == theirs[key].codes.tolist()
            assert column.values == theirs[key].values
            assert dict(column.index) == dict(theirs[key].index)
    assert fleet.decisions.extra_names == earlier_copy.decisions.extra_names
    assert fleet.decisions.totals.tolist() == earlier_copy.decisions.totals.tolist()


def feed(index: FleetIndex, objects: Sequence[KubeObject]) -> FleetIndex:
    for obj in objects:
        upsert(index, obj)
    return index


def upsert(index: FleetIndex, obj: KubeObject, rows: bool = False) -> None:
    """Store `obj`; with `rows`, clusters and scores as the controller's caches keep them."""
    if isinstance(obj, ManagedCluster):
        index.upsert_cluster(cluster_row(obj) if rows else obj)
    elif isinstance(obj, ManagedClusterSet):
        index.upsert_cluster_set(obj)
    elif isinstance(obj, ManagedClusterSetBinding):
        index.upsert_binding(obj)
    elif isinstance(obj, PlacementDecision):
        index.upsert_decision(obj)
    elif isinstance(obj, AddOnPlacementScore):
        index.upsert_score(score_row(obj) if rows else obj)
    else:
        raise TypeError(obj)


def delete(index: FleetIndex, kind: type[KubeObject], namespace: str, name: str) -> None:
    if kind is ManagedCluster:
        index.delete_cluster(name)
    elif kind is ManagedClusterSet:
        index.delete_cluster_set(name)
    elif kind is ManagedClusterSetBinding:
        index.delete_binding(namespace, name)
    elif kind is PlacementDecision:
        index.delete_decision(namespace, name)
    else:
        index.delete_score(namespace, name)


def schedule_all(fleet: FleetSnapshot, placements: Sequence[Placement]) -> list[Any]:
    """What each placement decides on `fleet`, by cluster name."""
    scheduler = default_scheduler()
    out = []
    for p in placements:
        result = scheduler.schedule(p, fleet, NOW)
        totals = None
        if result.total is not None:
            totals = {fleet.names[r]: int(result.total[r]) for r in result.feasible}
        out.append(
            (fleet.rows_to_names(result.selected), totals, result.status, result.unscheduled)
        )
    return out


# --- random event sequences ------------------------------------------------------------------

CLUSTERS = ["a", "b", "0b", "a-1", "a1", "c", "zz", "z9"]  # byte order: digits first, "-" < "1"
OUTSIDERS = ["gone", "gone-2"]  # named by decisions and scores, never clusters
EFFECTS = ["NoSelect", "NoSelectIfNew", "PreferNoSelect"]
SET_SPECS: list[dict[str, Any] | None] = [None, {"matchLabels": {"env": "prod"}}, {}]
PLACEMENTS = [
    placement("apps", "p1", numberOfClusters=2),
    placement(
        "apps",
        "p2",
        numberOfClusters=3,
        clusterSets=["s1", "all"],
        predicates=[predicate(claims=[{"key": "rack", "operator": "In", "values": ["r1"]}])],
        tolerations=[toleration("k", "Exists")],
        prioritizerPolicy={
            "mode": "Additive",
            "configurations": [builtin("ResourceAllocatableCPU", 2), addon("r1", "x")],
        },
    ),
    placement("apps", "p3", predicates=[predicate({"env": "prod"})]),
    placement("ops", "p1", numberOfClusters=1),
]


@st.composite
def clusters(draw: st.DrawFn, names: Sequence[str] = CLUSTERS) -> ManagedCluster:
    words = st.sampled_from(["prod", "dev", "s1", "s2"])
    claim = st.tuples(st.sampled_from(["rack", "kv"]), st.sampled_from(["r1", "r2"]))
    some_taint = st.builds(
        taint,
        st.sampled_from(["k", "u"]),
        st.sampled_from(EFFECTS),
        st.sampled_from([None, "v"]),
        st.sampled_from([None, NOW - timedelta(hours=1)]),
    )
    return cluster(
        draw(st.sampled_from(names)),
        labels=draw(st.dictionaries(st.sampled_from(["env", "zone", CLUSTER_SET_LABEL]), words)),
        claims=draw(st.lists(claim, max_size=3)),  # duplicates: the later one wins
        cpu=draw(st.sampled_from([None, "1", "4", "500m"])),
        memory=draw(st.sampled_from([None, "1Gi"])),
        taints=draw(st.lists(some_taint, max_size=2)),
        deleting=draw(st.booleans()),
    )


def unlabelled(namespace: str, name: str, clusters: list[str]) -> PlacementDecision:
    """A PlacementDecision of no placement: counts in totals only."""
    return PlacementDecision.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace},
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
        }
    )


@st.composite
def decisions(draw: st.DrawFn, names: Sequence[str] = CLUSTERS) -> PlacementDecision:
    chosen = draw(st.lists(st.sampled_from([*names, *OUTSIDERS]), max_size=4))
    namespace = draw(st.sampled_from(["apps", "ops"]))
    if draw(st.integers(0, 5)) == 0:
        return unlabelled(namespace, "orphan", chosen)
    owner = draw(st.sampled_from(["p1", "p2", "p3"]))
    return decision(namespace, owner, chosen, draw(st.integers(1, 2)))


@st.composite
def scores(draw: st.DrawFn, names: Sequence[str] = CLUSTERS) -> AddOnPlacementScore:
    until = draw(st.sampled_from([None, NOW - timedelta(minutes=1), NOW + timedelta(hours=1)]))
    return score(
        draw(st.sampled_from([*names, OUTSIDERS[0]])),
        draw(st.sampled_from(["r1", "r2"])),
        draw(st.lists(st.tuples(st.sampled_from(["x", "y"]), st.integers(1, 100)), max_size=3)),
        valid_until=until,
    )


Delete = tuple[type[KubeObject], str, str]
Event = KubeObject | Delete | str  # "snapshot": take one and check it


def deletes(kind: type[KubeObject], namespaces: Sequence[str], names: Sequence[str]) -> Any:
    return st.tuples(st.just(kind), st.sampled_from(namespaces), st.sampled_from(names))


def events(*choices: Any) -> Any:
    return st.lists(st.one_of(*choices, st.just("snapshot")), min_size=10, max_size=60)


FEW = CLUSTERS[:4]  # fewer names: more events hit the same rows
NAMESPACES = ["apps", "ops"]
SETS = ["s1", "s2", "all"]
MIXES = [
    pytest.param(
        events(
            clusters(),
            clusters(),
            decisions(),
            scores(),
            st.builds(cluster_set, st.sampled_from(SETS), st.sampled_from(SET_SPECS)),
            st.builds(binding, st.sampled_from(NAMESPACES), st.sampled_from(["s1", "all", "x"])),
            deletes(ManagedCluster, [""], CLUSTERS),
            deletes(ManagedClusterSet, [""], SETS),
            deletes(ManagedClusterSetBinding, NAMESPACES, ["s1", "all"]),
            deletes(PlacementDecision, NAMESPACES, ["p1-decision-1", "p2-decision-2", "orphan"]),
            deletes(AddOnPlacementScore, [*CLUSTERS, OUTSIDERS[0]], ["r1", "r2"]),
        ),
        id="every-kind",
    ),
    pytest.param(
        events(clusters(FEW), clusters(FEW), deletes(ManagedCluster, [""], FEW)),
        id="clusters",
    ),
    pytest.param(
        events(
            clusters(FEW),
            decisions(FEW),
            decisions(FEW),
            deletes(ManagedCluster, [""], FEW),
            deletes(PlacementDecision, ["apps"], ["p1-decision-1", "p1-decision-2", "orphan"]),
        ),
        id="clusters-and-decisions",
    ),
    pytest.param(
        events(
            clusters(FEW),
            scores(FEW),
            scores(FEW),
            deletes(ManagedCluster, [""], FEW),
            deletes(AddOnPlacementScore, FEW, ["r1", "r2"]),
        ),
        id="clusters-and-scores",
    ),
]


def stored_key(obj: KubeObject) -> Delete:
    return type(obj), obj.namespace, obj.name


@pytest.mark.parametrize("mix", MIXES)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_event_sequence_gives_the_snapshot_build_gives(mix: Any, data: st.DataObject) -> None:
    index = FleetIndex()
    stored: dict[Delete, KubeObject] = {}
    handed_out: list[tuple[FleetSnapshot, FleetSnapshot]] = []
    seen: tuple[int, FleetSnapshot | None] = (-1, None)
    for event in data.draw(mix):
        if event == "snapshot":
            fleet = index.snapshot()
            assert_same_fleet(fleet, snapshot(stored.values()))
            if index.version == seen[0]:
                assert fleet is seen[1]
            seen = (index.version, fleet)
            handed_out.append((fleet, copy.deepcopy(fleet)))
        elif isinstance(event, tuple):
            stored.pop(event, None)
            delete(index, *event)
        else:
            stored[stored_key(event)] = event
            upsert(index, event, rows=data.draw(st.booleans()))
    fleet, expected = index.snapshot(), snapshot(stored.values())
    assert_same_fleet(fleet, expected)
    assert schedule_all(fleet, PLACEMENTS) == schedule_all(expected, PLACEMENTS)
    assert len(index) == sum(1 for kind, _, _ in stored if kind is ManagedCluster)
    for earlier, earlier_copy in handed_out:
        assert_unchanged(earlier, earlier_copy)


# --- caching, versions and sharing ------------------------------------------------------------


def with_version(obj: Any, version: str) -> Any:
    return obj.model_copy(
        update={"metadata": obj.metadata.model_copy(update={"resource_version": version})}
    )


def small_world() -> list[KubeObject]:
    return [
        cluster("a", labels={"env": "prod", "zone": "z1"}, cpu="4", taints=[taint("k")]),
        cluster("b", labels={"env": "dev", "zone": "z1"}, cpu="2"),
        cluster("c", labels={"env": "prod", "zone": "z2"}, claims={"rack": "r1"}),
        cluster_set("all", {}),
        cluster_set("prod", {"matchLabels": {"env": "prod"}}),
        binding("apps", "all"),
        binding("apps", "prod"),
        decision("apps", "web", ["a", "gone"]),
        decision("apps", "db", ["b", "c"]),
        score("a", "r1", {"x": 10}),
    ]


def test_snapshot_is_the_same_object_until_something_changes() -> None:
    index = feed(FleetIndex(), small_world())
    first = index.snapshot()
    version = index.version
    assert index.snapshot() is first
    index.upsert_cluster(cluster("b", labels={"env": "prod", "zone": "z1"}, cpu="2"))
    assert index.version > version
    assert index.snapshot() is not first


def test_an_upsert_with_the_stored_resource_version_is_skipped() -> None:
    index = FleetIndex()
    index.upsert_cluster(with_version(cluster("a", labels={"env": "prod"}), "7"))
    first, version = index.snapshot(), index.version
    index.upsert_cluster(with_version(cluster("a", labels={"env": "prod"}), "7"))
    assert (index.snapshot(), index.version) == (first, version)


def test_an_update_that_changes_no_column_keeps_the_snapshot_but_stores_the_row() -> None:
    index = FleetIndex()
    index.upsert_cluster(with_version(cluster("a", labels={"env": "prod"}), "1"))
    first, version = index.snapshot(), index.version
    heartbeat = cluster_row(with_version(cluster("a", labels={"env": "prod"}), "2"))
    index.upsert_cluster(heartbeat)
    assert index.snapshot() is first
    assert index.version == version
    assert index.cluster("a") is heartbeat


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(ManagedCluster, id="cluster"),
        pytest.param(ManagedClusterSet, id="cluster-set"),
        pytest.param(ManagedClusterSetBinding, id="binding"),
        pytest.param(PlacementDecision, id="decision"),
        pytest.param(AddOnPlacementScore, id="score"),
    ],
)
def test_deleting_an_unknown_object_changes_nothing(kind: type[KubeObject]) -> None:
    index = feed(FleetIndex(), small_world())
    first, version = index.snapshot(), index.version
    delete(index, kind, "nowhere", "nothing")
    assert (index.snapshot(), index.version) == (first, version)


def test_cluster_returns_the_stored_row_and_len_counts_clusters() -> None:
    index = feed(FleetIndex(), small_world())
    a = with_version(cluster("a", labels={"env": "dev"}), "9")
    index.upsert_cluster(a)
    index.upsert_cluster(cluster("d"))  # pending until the next snapshot, counted already
    index.delete_cluster("b")
    stored = index.cluster("a")
    assert stored == cluster_row(a)
    assert stored is not None and (stored.name, stored.resource_version) == ("a", "9")
    assert index.cluster("b") is None
    assert len(index) == 3


def test_a_label_change_copies_its_column_and_shares_the_others() -> None:
    index = feed(FleetIndex(), small_world())
    before = index.snapshot()
    index.upsert_cluster(cluster("b", labels={"env": "prod", "zone": "z1"}, cpu="2"))
    after = index.snapshot()
    assert decoded(before.labels["env"]) == ["prod", "dev", "prod"]
    assert decoded(after.labels["env"]) == ["prod", "prod", "prod"]
    assert after.labels["zone"].codes is before.labels["zone"].codes
    assert after.allocatable["cpu"] is before.allocatable["cpu"]
    assert after.names is before.names


def test_a_published_column_does_not_see_values_coded_after_it() -> None:
    index = feed(FleetIndex(), small_world())
    before = index.snapshot()
    index.upsert_cluster(cluster("b", labels={"env": "qa", "zone": "z1"}, cpu="2"))
    after = index.snapshot()
    assert "qa" not in before.labels["env"].index
    assert len(before.labels["env"].index) == len(before.labels["env"].values) == 2
    assert before.labels["env"].code_of("qa") == -2  # matches no row, not even absent ones
    assert after.labels["env"].codes[1] == after.labels["env"].code_of("qa")


def test_snapshots_never_change_while_the_index_keeps_changing() -> None:
    world = small_world()
    index = feed(FleetIndex(), world)
    handed_out = []
    changes: list[KubeObject | Delete] = [
        cluster("a", labels={"env": "dev", "zone": "z9"}, cpu="8", taints=[taint("u")]),
        cluster("c", labels={"env": "prod"}, claims={"rack": "r2"}, deleting=True),
        decision("apps", "web", ["c", "gone-too"]),
        score("a", "r1", {"y": 3}),
        score("c", "r2", {"x": 1}),
        cluster("aa", labels={"env": "new"}),
        (ManagedCluster, "", "b"),
        (PlacementDecision, "apps", "db-decision-1"),
        (AddOnPlacementScore, "a", "r1"),
        cluster_set("prod", {"matchLabels": {"env": "dev"}}),
        (ManagedClusterSetBinding, "apps", "prod"),
        cluster("gone", labels={"env": "prod"}),
        (ManagedCluster, "", "a"),
    ]
    stored = {stored_key(obj): obj for obj in world}
    for change in changes:
        fleet = index.snapshot()
        default_scheduler().schedule(PLACEMENTS[1], fleet, NOW)  # fills the caches too
        handed_out.append((fleet, copy.deepcopy(fleet)))
        if isinstance(change, tuple):
            stored.pop(change)
            delete(index, *change)
        else:
            stored[stored_key(change)] = change
            upsert(index, change)
    assert_same_fleet(index.snapshot(), snapshot(stored.values()))
    for fleet, earlier_copy in handed_out:
        assert_unchanged(fleet, earlier_copy)


def test_set_masks_are_shared_while_set_membership_cannot_have_changed() -> None:
    index = feed(FleetIndex(), small_world())
    first = index.snapshot()
    default_scheduler().schedule(PLACEMENTS[0], first, NOW)
    assert set(first._set_masks) == {"all", "prod"}
    index.upsert_decision(decision("apps", "web", ["b"]))
    index.upsert_score(score("b", "r1", {"x": 1}))
    index.upsert_cluster(cluster("c", labels={"env": "prod", "zone": "z2"}, cpu="64"))
    assert index.snapshot()._set_masks is first._set_masks
    index.upsert_cluster_set(cluster_set("prod", {"matchLabels": {"env": "dev"}}))
    assert set(index.snapshot()._set_masks) == {"all"}
    index.upsert_cluster(cluster("c", labels={"env": "dev"}))
    assert index.snapshot()._set_masks == {}


def test_the_taint_table_is_carried_over_while_taints_are_unchanged() -> None:
    index = feed(FleetIndex(), small_world())
    first = index.snapshot()
    table = first.taint_table
    index.upsert_cluster(cluster("b", labels={"env": "prod"}, cpu="2"))
    assert index.snapshot().taint_table is table
    index.upsert_cluster(cluster("b", taints=[taint("u")]))
    assert index.snapshot().taint_table.rows.tolist() == [0, 1]


def test_a_decision_change_keeps_the_rows_of_other_placements() -> None:
    index = feed(FleetIndex(), small_world())
    first = index.snapshot()
    index.upsert_decision(decision("apps", "web", ["b", "c"]))
    after = index.snapshot()
    assert after.decisions.by_placement["apps", "db"] is first.decisions.by_placement["apps", "db"]
    assert after.decided_mask("apps", "web").tolist() == [False, True, True]
    assert after.decisions.totals.tolist() == [0, 2, 2]
    assert after.decisions.extra_names == ()


# --- rows that move ---------------------------------------------------------------------------


def test_rows_are_clusters_sorted_by_name_in_byte_order() -> None:
    index = FleetIndex()
    for name in ["b", "zz", "a1", "0b", "a-1", "z"]:
        index.upsert_cluster(cluster(name))
    assert index.snapshot().names == ("0b", "a-1", "a1", "b", "z", "zz")
    index.upsert_cluster(cluster("a"))
    index.delete_cluster("b")
    assert index.snapshot().names == ("0b", "a", "a-1", "a1", "z", "zz")


def test_a_decided_cluster_moves_between_extra_and_fleet_rows_as_it_comes_and_goes() -> None:
    index = feed(FleetIndex(), [cluster("a"), cluster("c"), decision("apps", "web", ["b", "c"])])
    assert index.snapshot().decisions.extra_names == ("b",)
    index.upsert_cluster(cluster("b"))
    joined = index.snapshot()
    assert joined.decisions.extra_names == ()
    assert joined.decisions.totals.tolist() == [0, 1, 1]
    assert joined.decided_mask("apps", "web").tolist() == [False, True, True]
    index.delete_cluster("c")
    left = index.snapshot()
    assert left.decisions.extra_names == ("c",)
    assert left.decisions.totals.tolist() == [0, 1, 1]
    assert left.decisions.rows_of("apps", "web").tolist() == [1, 2]


def test_extra_rows_are_renumbered_when_an_earlier_one_is_no_longer_named() -> None:
    index = feed(
        FleetIndex(),
        [cluster("a"), decision("apps", "web", ["gone-1"]), decision("apps", "db", ["gone-2"])],
    )
    assert index.snapshot().decisions.extra_names == ("gone-1", "gone-2")
    index.delete_decision("apps", "web-decision-1")
    fleet = index.snapshot()
    assert fleet.decisions.extra_names == ("gone-2",)
    assert fleet.decisions.rows_of("apps", "db").tolist() == [1]
    assert fleet.decisions.totals.tolist() == [0, 1]
    assert ("apps", "web") not in fleet.decisions.by_placement


def test_a_cluster_deleted_and_upserted_again_before_a_snapshot_keeps_its_row() -> None:
    index = feed(FleetIndex(), small_world())
    first = index.snapshot()
    index.delete_cluster("b")
    index.upsert_cluster(cluster("b", labels={"env": "qa"}))
    fleet = index.snapshot()
    assert fleet.names is first.names
    assert decoded(fleet.label("env")) == ["prod", "qa", "prod"]
    assert np.isnan(fleet.allocatable["cpu"][1])


def test_a_changed_score_leaves_no_value_behind_in_a_score_it_no_longer_has() -> None:
    index = feed(FleetIndex(), [cluster("a"), cluster("b"), score("a", "r1", {"x": 5})])
    index.upsert_score(score("b", "r1", {"x": 1}))
    index.snapshot()
    index.upsert_score(score("a", "r1", {"y": 2}))
    column = index.snapshot().addons["r1"]
    assert column.scores["x"].tolist() == [0, 1]
    assert column.has_score["x"].tolist() == [False, True]


def test_a_churning_label_value_does_not_grow_its_column_forever() -> None:
    index = feed(FleetIndex(), [cluster("a", labels={"seen": "t0"}), cluster("b")])
    for step in range(1, 500):
        index.upsert_cluster(cluster("a", labels={"seen": f"t{step}"}))
        fleet = index.snapshot()
    assert decoded(fleet.labels["seen"]) == ["t499", None]
    assert len(fleet.labels["seen"].values) < 200


# --- at scale ---------------------------------------------------------------------------------


def test_a_synthetic_fleet_fed_in_any_order_schedules_as_its_build_does() -> None:
    fleet = synthetic_fleet(600, 3, decided={"bench": 0.05}, expired_rate=0.1)
    objects = fleet.objects()
    np.random.default_rng(3).shuffle(objects)
    index = FleetIndex()
    half = len(objects) // 2
    feed(index, objects[:half])
    index.snapshot()  # a first layout half way, then the rest moves rows again
    feed(index, objects[half:])
    bench = placement(
        "apps",
        "bench",
        numberOfClusters=20,
        predicates=[predicate(expressions=[{"key": "env", "operator": "In", "values": ["prod"]}])],
        prioritizerPolicy={
            "mode": "Additive",
            "configurations": [
                builtin("ResourceAllocatableCPU", 2),
                addon(SCORE_RESOURCE, "cpuAvailable"),
            ],
        },
    )
    expected = fleet.snapshot()
    assert_same_fleet(index.snapshot(), expected)
    assert schedule_all(index.snapshot(), [bench]) == schedule_all(expected, [bench])
