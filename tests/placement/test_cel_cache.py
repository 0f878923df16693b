"""CEL results cached in the index: a cluster is evaluated again only when its object or one
of its score objects changed since."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from apis.cluster import ManagedCluster
from apis.placements import Placement
from placement.framework import Cycle
from placement.index.fleet_index import FleetIndex, cluster_row
from placement.snapshot.fleet_snapshot import FleetSnapshot, unstructured
from placement.testing import NOW, cluster, placement, predicate, score
from plugins.predicate import Predicate

SCORES = 'managedCluster.scores("load").exists(s, s.name == "cpu" && s.value < 50)'
WEB = placement(
    "apps",
    "web",
    predicates=[predicate(cel=['managedCluster.metadata.labels["env"] == "prod"', SCORES])],
)


def versioned(c: ManagedCluster, version: str) -> ManagedCluster:
    c.metadata.resource_version = version
    return c


class Counter:
    """A timer hook that counts evaluations."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> Callable[[], None]:
        self.count += 1
        return lambda: None


def selected(fleet: FleetSnapshot, counter: Counter, web: Placement = WEB) -> list[str]:
    cycle = Cycle(NOW, {"cel_timer": counter})
    result = Predicate().filter(cycle, web, fleet, np.ones(fleet.size, bool))
    return fleet.rows_to_names(np.flatnonzero(result.mask))


def world() -> FleetIndex:
    index = FleetIndex()
    for i, env in enumerate(["prod", "prod", "dev", "prod"]):
        index.upsert_cluster(versioned(cluster(f"c{i}", labels={"env": env}), "1"))
        index.upsert_score(score(f"c{i}", "load", {"cpu": 10 * (i + 1)}))
    return index


def test_a_warm_cycle_evaluates_nothing() -> None:
    index, counter = world(), Counter()
    assert selected(index.snapshot(), counter) == ["c0", "c1", "c3"]
    assert counter.count == 4
    assert selected(index.snapshot(), counter) == ["c0", "c1", "c3"]
    assert counter.count == 4


def test_a_changed_cluster_alone_is_evaluated_again() -> None:
    index, counter = world(), Counter()
    selected(index.snapshot(), counter)
    index.upsert_cluster(versioned(cluster("c1", labels={"env": "dev"}), "2"))
    assert selected(index.snapshot(), counter) == ["c0", "c3"]
    assert counter.count == 5


def test_a_change_only_cel_sees_is_evaluated_again() -> None:
    index, counter = world(), Counter()
    web = placement(
        "apps",
        "web",
        predicates=[predicate(cel=['managedCluster.metadata.?annotations.?a.orValue("") == "x"'])],
    )
    assert selected(index.snapshot(), counter, web) == []
    annotated = versioned(cluster("c2", labels={"env": "dev"}), "2")
    annotated.metadata.annotations = {"a": "x"}
    index.upsert_cluster(annotated)  # no column changes: only the object
    assert selected(index.snapshot(), counter, web) == ["c2"]
    assert counter.count == 5


def test_a_changed_or_deleted_score_object_reevaluates_its_cluster() -> None:
    index, counter = world(), Counter()
    selected(index.snapshot(), counter)
    index.upsert_score(score("c3", "load", {"cpu": 90}))
    assert selected(index.snapshot(), counter) == ["c0", "c1"]
    assert counter.count == 5
    index.delete_score("c0", "load")  # missing score object: not matched
    assert selected(index.snapshot(), counter) == ["c1"]
    assert counter.count == 6


def test_added_and_deleted_clusters_keep_the_others_cached() -> None:
    index, counter = world(), Counter()
    selected(index.snapshot(), counter)
    index.delete_cluster("c0")
    index.upsert_cluster(versioned(cluster("a-new", labels={"env": "prod"}), "1"))
    index.upsert_score(score("a-new", "load", {"cpu": 1}))
    assert selected(index.snapshot(), counter) == ["a-new", "c1", "c3"]
    assert counter.count == 5


def test_an_older_snapshot_still_answers_for_its_own_objects() -> None:
    index, counter = world(), Counter()
    old = index.snapshot()
    index.upsert_cluster(versioned(cluster("c0", labels={"env": "dev"}), "2"))
    new = index.snapshot()
    assert selected(new, counter) == ["c1", "c3"]
    # The old snapshot's stamp for c0 is not cached; its result is not stored either.
    selected(old, counter)
    assert selected(new, counter) == ["c1", "c3"]


def test_rows_carry_the_whole_object_as_the_controller_feeds_them() -> None:
    """The controller's cache keeps `cluster_row`s, not models: CEL still sees every field."""
    index, counter = FleetIndex(), Counter()
    web = placement(
        "apps",
        "web",
        predicates=[
            predicate(
                cel=[
                    'managedCluster.metadata.?annotations.?tier.orValue("") == "gold"',
                    "semver(managedCluster.status.version.kubernetes.substring(1))"
                    '.isGreaterThan(semver("1.29.0"))',
                ]
            )
        ],
    )
    for name, tier, version in (("c0", "gold", "v1.30.1"), ("c1", "gold", "v1.28.0")):
        c = versioned(cluster(name), "1")
        c.metadata.annotations = {"tier": tier}
        c.status = ManagedCluster.model_validate(
            {"metadata": {"name": name}, "status": {"version": {"kubernetes": version}}}
        ).status
        index.upsert_cluster(cluster_row(c))
    assert selected(index.snapshot(), counter, web) == ["c0"]
    # Only the object changes (an annotation): the columns do not, CEL sees it.
    silver = versioned(cluster("c0"), "2")
    silver.metadata.annotations = {"tier": "silver"}
    silver.status = ManagedCluster.model_validate(
        {"metadata": {"name": "c0"}, "status": {"version": {"kubernetes": "v1.30.1"}}}
    ).status
    index.upsert_cluster(cluster_row(silver))
    assert selected(index.snapshot(), counter, web) == []
    assert counter.count == 3
    # A new resourceVersion alone is no change: same snapshot, nothing evaluated again.
    before = index.snapshot()
    index.upsert_cluster(cluster_row(versioned(silver.model_copy(deep=True), "3")))
    assert index.snapshot() is before
    assert selected(index.snapshot(), counter, web) == []
    assert counter.count == 3


def test_a_packed_row_gives_cel_what_simulate_gives_it() -> None:
    c = versioned(cluster("c0", labels={"env": "prod"}, cpu="4", claims={"id.k8s.io": "x"}), "9")
    c.metadata.annotations = {"a": "b"}
    index = FleetIndex()
    index.upsert_cluster(cluster_row(c))
    inputs = index.snapshot().cel
    assert inputs is not None
    assert inputs.document("c0")[1] == unstructured(c)
