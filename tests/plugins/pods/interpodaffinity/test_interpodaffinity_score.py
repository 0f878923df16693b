"""InterPodAffinity's score, checked by hand against kube's arithmetic: per topology domain,
the weights of matching pods' domains summed (anti-affinity negative), existing pods' required
affinity times hardPodAffinityWeight and their preferred terms, then 100 * (s - min) / (max -
min) over the feasible nodes, truncated."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.placement.pods.test_engine import World
from tests.plugins.pods.affinity_harness import (
    ZONE,
    apod,
    cycle_of,
    fits,
    hnode,
    info_of,
    plugin_of,
    scores,
    term,
    weighted,
    world,
)

INCOMING_TERMS: dict[str, Any] = {
    "preferred": [weighted(5, term({"app": "db"}, ZONE))],
    "preferred_anti": [weighted(3, term({"app": "cache"}))],
}


def cluster(args: dict[str, object] | None = None, *, existing_terms: bool = False) -> World:
    """n1, n2 in zone a, n3 in zone b, n4 without a zone; two dbs (n1, n3), a cache (n3)."""
    w = world(hnode("n1", "a"), hnode("n2", "a"), hnode("n3", "b"), hnode("n4"), args=args)
    w.add_pods(
        apod("db-1", {"app": "db"}, node="n1", scheduler="other"),
        apod("db-2", {"app": "db"}, node="n3", scheduler="other"),
        apod("cache", {"app": "cache"}, node="n3", scheduler="other"),
    )
    if existing_terms:
        # Wants web pods on its node (required: hard weight); dislikes them in its zone.
        w.add_pods(apod("fan", node="n4", scheduler="other", required=[term({"app": "web"})]))
        w.add_pods(
            apod(
                "hater",
                node="n2",
                scheduler="other",
                preferred_anti=[weighted(7, term({"app": "web"}, ZONE))],
            )
        )
    return w


def test_incoming_preferred_terms() -> None:
    # zone a +5 (db-1), zone b +5 (db-2), host n3 -3 (cache): raw n1 5, n2 5, n3 2, n4 0.
    w = cluster()
    got = scores(w, apod("web", {"app": "web"}, **INCOMING_TERMS))
    assert got == {"n1": 100, "n2": 100, "n3": 40, "n4": 0}


def test_existing_pods_required_affinity_and_preferred_terms_count() -> None:
    # + host n4 +1 (fan's required term, hard weight 1), zone a -7 (hater):
    # raw n1 -2, n2 -2, n3 2, n4 1; min -2, max 2: 0, 0, 100, 75.
    w = cluster(existing_terms=True)
    got = scores(w, apod("web", {"app": "web"}, **INCOMING_TERMS))
    assert got == {"n1": 0, "n2": 0, "n3": 100, "n4": 75}


def test_hard_pod_affinity_weight_scales_existing_required_terms() -> None:
    # fan's term weighs 10: raw n1 -2, n2 -2, n3 2, n4 10; (2 + 2) / 12 -> 33.
    w = cluster({"hardPodAffinityWeight": 10}, existing_terms=True)
    got = scores(w, apod("web", {"app": "web"}, **INCOMING_TERMS))
    assert got == {"n1": 0, "n2": 0, "n3": 33, "n4": 100}
    # Weight 0: existing pods' required terms do not score at all.
    w = cluster({"hardPodAffinityWeight": 0}, existing_terms=True)
    got = scores(w, apod("web", {"app": "web"}))
    assert got == {"n1": 0, "n2": 0, "n3": 100, "n4": 100}  # only hater's -7 on zone a


def test_ignore_preferred_terms_of_existing_pods() -> None:
    # hater's preferred term ignored: raw n1 5, n2 5, n3 2, n4 1; min 1, max 5: 100, 100, 25, 0.
    w = cluster({"ignorePreferredTermsOfExistingPods": True}, existing_terms=True)
    got = scores(w, apod("web", {"app": "web"}, **INCOMING_TERMS))
    assert got == {"n1": 100, "n2": 100, "n3": 25, "n4": 0}
    # kube skips the score altogether for a pod without preferred terms of its own, even
    # though fan's required term matches it.
    assert set(scores(w, apod("web2", {"app": "web"})).values()) == {0}


def test_normalization_is_over_the_feasible_nodes_only() -> None:
    w = cluster()
    plugin, cycle = plugin_of(w), cycle_of(w)
    nodes = w.engine.nodes()
    rows = np.array([nodes.row_of("n3"), nodes.row_of("n4")], dtype=np.intp)
    got = plugin.score(cycle, info_of(apod("web", {"app": "web"}, **INCOMING_TERMS)), nodes, rows)
    assert got.tolist() == [100, 0]  # raw 2 and 0


def test_no_terms_anywhere_scores_zero() -> None:
    w = cluster()
    assert set(scores(w, apod("plain", {"app": "plain"})).values()) == {0}


def test_the_engine_places_by_the_score() -> None:
    # Everything else equal, the web pod goes where the score is highest (n1 or n2; n1 first
    # by name on a tie).
    w = cluster()
    w.add_pods(apod("web", {"app": "web"}, **INCOMING_TERMS))
    w.run()
    assert w.node_of("default/web") in {"n1", "n2"}


def test_kube_docs_security_zone_example() -> None:
    """kube's "inter-pod affinity" example: required affinity to `security In (S1)` in the
    zone, preferred anti-affinity (weight 100) to `security In (S2)` in the zone. Zones a and
    b hold S1 pods, zone a also an S2 pod, zone c nothing: only zones a and b fit, and zone b is
    preferred."""
    w = world(hnode("a1", "a"), hnode("a2", "a"), hnode("b1", "b"), hnode("c1", "c"))
    w.add_pods(
        apod("s1-a", {"security": "S1"}, node="a1", scheduler="other"),
        apod("s1-b", {"security": "S1"}, node="b1", scheduler="other"),
        apod("s2-a", {"security": "S2"}, node="a2", scheduler="other"),
    )

    def security(value: str) -> dict[str, Any]:
        return term(
            expressions=[{"key": "security", "operator": "In", "values": [value]}], key=ZONE
        )

    docs_pod = apod(
        "with-pod-affinity",
        required=[security("S1")],
        preferred_anti=[weighted(100, security("S2"))],
    )
    assert fits(w, docs_pod) == ["a1", "a2", "b1"]
    assert scores(w, docs_pod) == {"a1": 0, "a2": 0, "b1": 100, "c1": 100}
    w.add_pods(docs_pod)
    w.run()
    assert w.node_of("default/with-pod-affinity") == "b1"
