"""InterPodAffinity's filter: kube's documented examples through the engine, symmetry,
namespaces and namespaceSelector, matchLabelKeys, kube's reasons and codes, bad input."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from placement.pods.framework.events import ObjectEvent
from placement.pods.framework.results import PodCode
from plugins.pods.interpodaffinity.plugin import (
    ERR_REASON_AFFINITY,
    ERR_REASON_ANTI_AFFINITY,
    ERR_REASON_EXISTING,
)
from tests.placement.pods.test_engine import T0
from tests.plugins.pods.affinity_harness import (
    ZONE,
    apod,
    fits,
    hnode,
    namespace,
    placed,
    reasons,
    run_filter,
    term,
    world,
)


def test_kube_docs_web_store_and_cache_one_of_each_per_node() -> None:
    """kube's "Always co-located in the same node" example: three redis-cache replicas
    anti-affine among themselves, three web servers anti-affine among themselves and affine
    to the cache; each node ends up with one cache and one web server."""
    w = world(hnode("node-1"), hnode("node-2"), hnode("node-3"))
    store = {"app": "store"}
    web = {"app": "web-store"}
    w.add_pods(*(apod(f"redis-cache-{i}", store, anti=[term(store)]) for i in range(3)))
    w.run()
    w.add_pods(
        *(apod(f"web-server-{i}", web, anti=[term(web)], required=[term(store)]) for i in range(3))
    )
    w.run()
    where = placed(w)
    assert sorted(where[f"redis-cache-{i}"] or "" for i in range(3)) == [
        "node-1",
        "node-2",
        "node-3",
    ]
    for i in range(3):
        assert where[f"web-server-{i}"] is not None
    assert sorted(where[f"web-server-{i}"] or "" for i in range(3)) == [
        "node-1",
        "node-2",
        "node-3",
    ]


def test_a_fourth_anti_affine_replica_stays_pending_with_kubes_message() -> None:
    w = world(hnode("node-1"), hnode("node-2"), hnode("node-3"))
    store = {"app": "store"}
    w.add_pods(*(apod(f"redis-cache-{i}", store, anti=[term(store)]) for i in range(4)))
    w.run()
    where = placed(w)
    assert sum(1 for n in where.values() if n) == 3
    [pending] = [w.pods[f"default/{k}"] for k, n in where.items() if n is None]
    assert pending.status is not None
    [cond] = [c for c in pending.status.conditions or [] if c["type"] == "PodScheduled"]
    assert cond["message"] == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        "no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )


def test_web_servers_without_a_cache_wait_unresolvable() -> None:
    w = world(hnode("node-1"), hnode("node-2"))
    w.add_pods(apod("cache", {"app": "store"}, node="node-2", scheduler="other"))
    web = apod("web", {"app": "web"}, required=[term({"app": "nothing-like-this"})])
    got = reasons(w, web)
    assert got == {
        "node-1": (ERR_REASON_AFFINITY, False),
        "node-2": (ERR_REASON_AFFINITY, False),
    }


def test_affinity_zone_domain_and_nodes_without_the_key() -> None:
    w = world(hnode("a1", "a"), hnode("a2", "a"), hnode("b1", "b"), hnode("nozone"))
    w.add_pods(apod("cache", {"app": "store"}, node="a1", scheduler="other"))
    web = apod("web", {"app": "web"}, required=[term({"app": "store"}, ZONE)])
    assert fits(w, web) == ["a1", "a2"]
    got = reasons(w, web)
    assert got == {"b1": (ERR_REASON_AFFINITY, False), "nozone": (ERR_REASON_AFFINITY, False)}


def test_the_first_of_a_self_affine_group_goes_anywhere_with_the_key() -> None:
    w = world(hnode("a1", "a"), hnode("b1", "b"), hnode("nozone"))
    group = {"app": "group"}
    first = apod("g-0", group, required=[term(group, ZONE)])
    assert fits(w, first) == ["a1", "b1"]  # every node that has the topology key
    # A pod that does not match its own term gets no such pass.
    other = apod("o", {"app": "other"}, required=[term(group, ZONE)])
    assert fits(w, other) == []
    # Once one member runs, the others follow it into its zone.
    w.add_pods(apod("g-0", group, node="b1", scheduler="other"))
    assert fits(w, apod("g-1", group, required=[term(group, ZONE)])) == ["b1"]


def test_affinity_needs_one_pod_matching_every_term() -> None:
    w = world(hnode("n1"), hnode("n2"))
    w.add_pods(apod("x", {"a": "1"}, node="n1", scheduler="other"))
    w.add_pods(apod("y", {"b": "1"}, node="n1", scheduler="other"))
    both = apod("p", required=[term({"a": "1"}), term({"b": "1"})])
    assert fits(w, both) == []  # no single pod has both labels
    w.add_pods(apod("xy", {"a": "1", "b": "1"}, node="n2", scheduler="other"))
    assert fits(w, both) == ["n2"]


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    w = world(hnode("n1"), hnode("n2"), hnode("n3"))
    w.add_pods(apod("loner", {"app": "loner"}, node="n1", anti=[term({"app": "noisy"})]))
    noisy = apod("noisy", {"app": "noisy"})  # no terms of its own
    assert fits(w, noisy) == ["n2", "n3"]
    assert reasons(w, noisy) == {"n1": (ERR_REASON_EXISTING, True)}
    quiet = apod("quiet", {"app": "quiet"})
    pre, result, _ = run_filter(w, quiet)
    assert pre.status.code == PodCode.SKIP and result is None


def test_anti_affinity_on_zone_blocks_the_whole_zone() -> None:
    w = world(hnode("a1", "a"), hnode("a2", "a"), hnode("b1", "b"), hnode("nozone"))
    w.add_pods(apod("db-0", {"app": "db"}, node="a2", scheduler="other"))
    db = apod("db-1", {"app": "db"}, anti=[term({"app": "db"}, ZONE)])
    assert fits(w, db) == ["b1", "nozone"]  # a node without the key cannot conflict
    assert reasons(w, db) == {
        "a1": (ERR_REASON_ANTI_AFFINITY, True),
        "a2": (ERR_REASON_ANTI_AFFINITY, True),
    }


def test_reasons_follow_kubes_order_one_per_node() -> None:
    w = world(hnode("n1"), hnode("n2"), hnode("n3"))
    w.add_pods(apod("cache", {"app": "store"}, node="n1", scheduler="other"))
    w.add_pods(apod("cache2", {"app": "store"}, node="n2", scheduler="other"))
    w.add_pods(apod("rival", {"app": "rival"}, node="n2", scheduler="other"))
    w.add_pods(apod("guard", {}, node="n1", anti=[term({"app": "web"})]))
    web = apod(
        "web", {"app": "web"}, required=[term({"app": "store"})], anti=[term({"app": "rival"})]
    )
    assert reasons(w, web) == {
        "n1": (ERR_REASON_EXISTING, True),
        "n2": (ERR_REASON_ANTI_AFFINITY, True),
        "n3": (ERR_REASON_AFFINITY, False),
    }


def test_term_namespaces_default_to_the_pods_own() -> None:
    w = world(hnode("n1"), hnode("n2"))
    w.add_pods(apod("db", {"app": "db"}, node="n1", namespace="other", scheduler="other"))
    mine = apod("db-2", {"app": "db"}, anti=[term({"app": "db"})])
    assert fits(w, mine) == ["n1", "n2"]  # the db in "other" is not in the term's namespace
    named = apod("db-3", {"app": "db"}, anti=[term({"app": "db"}, namespaces=["other"])])
    assert fits(w, named) == ["n2"]


def test_namespace_selector_matches_namespace_labels_and_empty_means_all() -> None:
    w = world(
        hnode("n1"),
        hnode("n2"),
        hnode("n3"),
        namespaces=[namespace("prod", env="prod"), namespace("dev", env="dev")],
    )
    w.add_pods(apod("db-prod", {"app": "db"}, node="n1", namespace="prod", scheduler="other"))
    w.add_pods(apod("db-dev", {"app": "db"}, node="n2", namespace="dev", scheduler="other"))
    prod_only = apod(
        "x",
        {"app": "db"},
        anti=[term({"app": "db"}, namespace_selector={"matchLabels": {"env": "prod"}})],
    )
    assert fits(w, prod_only) == ["n2", "n3"]
    everywhere = apod("y", {"app": "db"}, anti=[term({"app": "db"}, namespace_selector={})])
    assert fits(w, everywhere) == ["n3"]
    # A Namespace relabelled is seen at the next cycle.
    w.engine.handle(ObjectEvent("Modified", namespace("dev", env="prod")), T0)
    assert fits(w, prod_only) == ["n3"]


def test_existing_terms_namespace_selector_reads_the_incoming_pods_namespace() -> None:
    w = world(hnode("n1"), hnode("n2"), namespaces=[namespace("team-a", team="a")])
    w.add_pods(
        apod(
            "guard",
            node="n1",
            anti=[term({"app": "web"}, namespace_selector={"matchLabels": {"team": "a"}})],
        )
    )
    assert fits(w, apod("web-a", {"app": "web"}, namespace="team-a")) == ["n2"]
    assert fits(w, apod("web-b", {"app": "web"}, namespace="team-b")) == ["n1", "n2"]


def test_match_label_keys_and_mismatch_label_keys_merge_the_pods_own_values() -> None:
    w = world(hnode("n1"), hnode("n2"), hnode("n3"))
    w.add_pods(apod("v1-a", {"app": "web", "rev": "1"}, node="n1", scheduler="other"))
    w.add_pods(apod("v2-a", {"app": "web", "rev": "2"}, node="n2", scheduler="other"))
    same_rev = apod(
        "v2-b", {"app": "web", "rev": "2"}, anti=[term({"app": "web"}, matchLabelKeys=["rev"])]
    )
    assert fits(w, same_rev) == ["n1", "n3"]  # only the rev-2 pod repels it
    other_rev = apod(
        "v2-c", {"app": "web", "rev": "2"}, anti=[term({"app": "web"}, mismatchLabelKeys=["rev"])]
    )
    assert fits(w, other_rev) == ["n2", "n3"]  # only the other revisions repel it


@pytest.mark.parametrize(
    ("aff", "message"),
    [
        pytest.param(
            {"anti": [term(expressions=[{"key": "app", "operator": "in", "values": ["x"]}])]},
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            '.labelSelector.matchExpressions[0]: "in" is not a valid label selector operator',
            id="operator",
        ),
        pytest.param(
            {"required": [term({"app": "x"}), term({"app": "x"}, "")]},
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1]"
            ".topologyKey: Required value: can not be empty",
            id="topology-key",
        ),
        pytest.param(
            {"preferred": [{"weight": 0, "podAffinityTerm": term({"a": "b"})}]},
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
            ".weight: Invalid value: 0: must be in the range 1-100",
            id="weight",
        ),
        pytest.param(
            {
                "anti": [
                    term(
                        {"a": "b"},
                        namespace_selector={"matchExpressions": [{"key": "env", "operator": "In"}]},
                    )
                ]
            },
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".namespaceSelector.matchExpressions[0]: values: Invalid value: null: "
            "for 'in', 'notin' operators, values set can't be empty",
            id="namespace-selector",
        ),
    ],
)
def test_a_bad_term_makes_the_pod_unresolvable_naming_the_field(
    aff: dict[str, Any], message: str
) -> None:
    w = world(hnode("n1"))
    pre, _, _ = run_filter(w, apod("bad", {"app": "x"}, **aff))
    assert pre.status.code == PodCode.UNRESOLVABLE
    assert pre.status.message == message


def test_a_bad_term_through_the_engine_is_reported_and_the_engine_goes_on() -> None:
    w = world(hnode("n1"))
    bad = apod("bad", anti=[term(expressions=[{"key": "k", "operator": "Nope"}])])
    good = apod("good", {"app": "x"}, anti=[term({"app": "x"})])
    w.add_pods(bad, good)
    w.run()
    assert placed(w) == {"bad": None, "good": "n1"}
    status = w.pods["default/bad"].status
    assert status is not None
    [cond] = [c for c in status.conditions or [] if c["type"] == "PodScheduled"]
    assert '"Nope" is not a valid label selector operator' in cond["message"]


def test_pods_waiting_for_affinity_retry_when_a_pod_or_a_namespace_changes() -> None:
    """The plugin's event handler: an assigned pod counted, or a Namespace relabelled, sends
    the pods it rejected back to be tried (kube's cluster events for InterPodAffinity)."""
    w = world(hnode("n1"), hnode("n2"), namespaces=[namespace("x")])
    in_team_a = {"matchLabels": {"team": "a"}}
    web = apod(
        "web", {"app": "web"}, required=[term({"app": "store"}, namespace_selector=in_team_a)]
    )
    w.add_pods(web)
    w.run(until=T0 + timedelta(seconds=30))
    assert placed(w) == {"web": None}
    # A store pod appears in namespace x, which the term does not select yet.
    w.add_pods(apod("store", {"app": "store"}, node="n2", namespace="x", scheduler="other"))
    w.run(until=T0 + timedelta(seconds=60))
    assert placed(w)["web"] is None
    w.now = T0 + timedelta(seconds=61)
    w.engine.handle(ObjectEvent("Modified", namespace("x", team="a")), w.now)
    w.run(until=w.now + timedelta(seconds=30))
    assert placed(w)["web"] == "n2"
