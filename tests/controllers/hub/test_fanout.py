"""OCM's event fan-out: which placements each kind of change re-queues (docs/hub-admins.md,
'When a placement is scheduled again')."""

from __future__ import annotations

from apis.cluster import CLUSTER_SET_LABEL
from controllers.hub.fanout import Fanout
from placement.testing import (
    addon,
    binding,
    builtin,
    cluster_set,
    decision,
    placement,
    score,
)


def hub() -> Fanout:
    """Namespaces `apps` (bound to prod and global) and `ops` (bound to dev); `tools` unbound."""
    fanout = Fanout()
    for s in (cluster_set("prod"), cluster_set("dev"), cluster_set("global", {})):
        fanout.set_upserted(s)
    for b in (binding("apps", "prod"), binding("apps", "global"), binding("ops", "dev")):
        fanout.binding_upserted(b)
    fanout.placement_upserted(placement("apps", "on-prod", clusterSets=["prod"]))
    fanout.placement_upserted(placement("apps", "anywhere"))
    fanout.placement_upserted(placement("apps", "on-global", clusterSets=["global"]))
    fanout.placement_upserted(placement("ops", "on-dev", clusterSets=["dev"]))
    fanout.placement_upserted(placement("ops", "on-prod", clusterSets=["prod"]))
    fanout.placement_upserted(placement("tools", "anywhere"))
    return fanout


PROD = {CLUSTER_SET_LABEL: "prod"}
DEV = {CLUSTER_SET_LABEL: "dev"}


def test_a_cluster_change_reaches_placements_bound_to_its_sets_by_name_or_by_default() -> None:
    # prod is bound to apps only (ops/on-prod names it but ops has no prod binding); global
    # contains every cluster and is bound to apps.
    assert hub().for_cluster(PROD, PROD) == {"apps/on-prod", "apps/anywhere", "apps/on-global"}


def test_a_relabelled_cluster_reaches_the_placements_of_its_old_and_new_sets() -> None:
    fanout = hub()
    fanout.set_deleted("global")
    assert fanout.for_cluster(PROD, DEV) == {"apps/on-prod", "apps/anywhere", "ops/on-dev"}


def test_a_new_or_deleted_cluster_has_only_one_side() -> None:
    fanout = hub()
    fanout.set_deleted("global")
    assert fanout.for_cluster(None, DEV) == {"ops/on-dev"}
    assert fanout.for_cluster(DEV, None) == {"ops/on-dev"}


def test_a_cluster_in_no_bound_set_reaches_nothing() -> None:
    fanout = hub()
    fanout.set_deleted("global")
    assert fanout.for_cluster({"env": "x"}, {"env": "y"}) == set()


def test_a_set_change_reaches_the_placements_of_every_namespace_bound_to_it() -> None:
    assert hub().for_set("prod") == {"apps/on-prod", "apps/anywhere"}
    assert hub().for_set("dev") == {"ops/on-dev"}
    assert hub().for_set("unbound") == set()


def test_a_binding_change_reaches_its_namespace_placements_naming_it_or_no_set() -> None:
    assert hub().for_binding("apps", "prod") == {"apps/on-prod", "apps/anywhere"}
    assert hub().for_binding("tools", "prod") == {"tools/anywhere"}


def test_a_deleted_binding_stops_the_fan_out_through_it() -> None:
    fanout = hub()
    fanout.binding_deleted("apps", "prod")
    assert fanout.for_set("prod") == set()
    # the deletion itself still reaches the namespace
    assert fanout.for_binding("apps", "prod") == {"apps/on-prod", "apps/anywhere"}


def test_a_score_reaches_placements_weighing_it_that_can_see_its_cluster() -> None:
    fanout = hub()
    weighing = [addon("usage", "cpu")]
    fanout.placement_upserted(
        placement(
            "apps", "on-prod", clusterSets=["prod"], prioritizerPolicy={"configurations": weighing}
        )
    )
    fanout.placement_upserted(
        placement(
            "ops", "on-dev", clusterSets=["dev"], prioritizerPolicy={"configurations": weighing}
        )
    )
    fanout.placement_upserted(
        placement("apps", "anywhere", prioritizerPolicy={"configurations": [builtin("Steady")]})
    )
    usage = score("c1", "usage", {"cpu": 10})
    assert fanout.for_score(usage, PROD) == {"apps/on-prod"}
    # OCM checks the namespace, not the placement's sets: apps sees a dev cluster through
    # global, so apps/on-prod is re-queued too.
    assert fanout.for_score(usage, DEV) == {"ops/on-dev", "apps/on-prod"}
    fanout.set_deleted("global")
    assert fanout.for_score(usage, DEV) == {"ops/on-dev"}
    assert fanout.for_score(score("c1", "other", {"cpu": 1}), PROD) == set()
    assert fanout.for_score(usage, None) == set()  # a score for an unknown cluster


def test_a_placement_that_stops_weighing_a_score_is_no_longer_reached() -> None:
    fanout = hub()
    weighing = {"configurations": [addon("usage", "cpu")]}
    fanout.placement_upserted(placement("apps", "anywhere", prioritizerPolicy=weighing))
    assert fanout.for_score(score("c1", "usage", {"cpu": 1}), PROD) == {"apps/anywhere"}
    fanout.placement_upserted(placement("apps", "anywhere"))
    assert fanout.for_score(score("c1", "usage", {"cpu": 1}), PROD) == set()


def test_a_deleted_placement_is_reached_by_nothing() -> None:
    fanout = hub()
    fanout.placement_deleted("apps/anywhere")
    assert fanout.for_set("prod") == {"apps/on-prod"}
    assert "apps/anywhere" not in fanout.all()


def test_a_placement_changing_its_sets_moves_between_the_indexes() -> None:
    fanout = hub()
    fanout.placement_upserted(placement("apps", "on-prod", clusterSets=["global"]))
    assert fanout.for_set("prod") == {"apps/anywhere"}
    assert "apps/on-prod" in fanout.for_set("global")


def test_a_decision_reaches_the_placement_named_by_its_label_only() -> None:
    assert Fanout.for_decision(decision("apps", "web", ["c1"])) == {"apps/web"}
    unlabelled = decision("apps", "web", ["c1"])
    unlabelled.metadata.labels = {}
    assert Fanout.for_decision(unlabelled) == set()


def test_all_lists_every_placement_sorted() -> None:
    assert hub().all() == [
        "apps/anywhere",
        "apps/on-global",
        "apps/on-prod",
        "ops/on-dev",
        "ops/on-prod",
        "tools/anywhere",
    ]
