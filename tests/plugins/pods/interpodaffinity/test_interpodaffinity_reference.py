"""InterPodAffinity against a plain reference written from kube's algorithm (per node, per pod,
per term, with topology pairs in dicts, no vectors, no kept counts): random clusters of pods
carrying every kind of term, in two namespaces with namespace selectors, give the same
feasible nodes, the same reason per node and the same scores."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apis.core import Pod
from apis.podaffinity import PodAffinityTerm
from plugins.pods.interpodaffinity.plugin import (
    ERR_REASON_AFFINITY,
    ERR_REASON_ANTI_AFFINITY,
    ERR_REASON_EXISTING,
)
from tests.plugins.pods.affinity_harness import (
    HOST,
    ZONE,
    apod,
    hnode,
    namespace,
    reasons,
    run_filter,
    scores,
    term,
    weighted,
    world,
)

NAMESPACES = {"default": {"team": "b"}, "ns1": {"team": "a"}}  # Namespace objects' labels
COLORS = ("red", "blue")

terms = st.builds(
    lambda color, key, spaces, selector: term(
        {"color": color} if color else {},
        key,
        namespaces=spaces,
        namespace_selector=selector,
    ),
    st.sampled_from((*COLORS, None)),
    st.sampled_from((HOST, ZONE)),
    st.sampled_from((None, ["ns1"], ["default", "ns1"])),
    st.sampled_from((None, {}, {"matchLabels": {"team": "a"}})),
)
weighted_terms = st.builds(weighted, st.integers(min_value=1, max_value=100), terms)
affinities = st.fixed_dictionaries(
    {
        "required": st.lists(terms, max_size=2),
        "anti": st.lists(terms, max_size=2),
        "preferred": st.lists(weighted_terms, max_size=2),
        "preferred_anti": st.lists(weighted_terms, max_size=2),
    }
)
existing = st.lists(
    st.tuples(
        st.sampled_from(COLORS),
        st.sampled_from(tuple(NAMESPACES)),
        st.integers(min_value=0, max_value=3),
        affinities,
    ),
    max_size=6,
)


# --- the reference -----------------------------------------------------------------------------


def node_labels(i: int) -> dict[str, str]:
    labels = {HOST: f"n{i}"}
    if i != 3:  # n3 has no zone
        labels[ZONE] = f"z{i % 2}"
    return labels


def selects(selector: Any, labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in (selector.match_labels or {}).items())


def term_matches(t: PodAffinityTerm, owner: Pod, target: Pod) -> bool:
    """kube's AffinityTerm.Matches with the target's namespace labels."""
    default = [] if t.namespace_selector is not None else [owner.metadata.namespace]
    named = t.namespaces or default
    ns = target.metadata.namespace or ""
    in_scope = ns in named or (
        t.namespace_selector is not None and selects(t.namespace_selector, NAMESPACES.get(ns, {}))
    )
    return (
        in_scope
        and t.label_selector is not None
        and selects(t.label_selector, target.metadata.labels or {})
    )


def kinds(p: Pod) -> dict[str, list[Any]]:
    a = p.spec.affinity
    aff = a.pod_affinity if a else None
    anti = a.pod_anti_affinity if a else None
    return {
        "required": (aff.required_during_scheduling_ignored_during_execution or []) if aff else [],
        "anti": (anti.required_during_scheduling_ignored_during_execution or []) if anti else [],
        "preferred": (aff.preferred_during_scheduling_ignored_during_execution or [])
        if aff
        else [],
        "preferred_anti": (anti.preferred_during_scheduling_ignored_during_execution or [])
        if anti
        else [],
    }


def reference_filter(pod: Pod, placed: list[tuple[Pod, int]], nodes: int) -> dict[str, str]:
    """node -> kube's reason, for the nodes that fail."""
    own = kinds(pod)
    affinity: dict[tuple[str, str], int] = defaultdict(int)
    anti: dict[tuple[str, str], int] = defaultdict(int)
    existing: dict[tuple[str, str], int] = defaultdict(int)
    for q, where in placed:
        labels = node_labels(where)
        if own["required"] and all(term_matches(t, pod, q) for t in own["required"]):
            for t in own["required"]:
                if t.topology_key in labels:
                    affinity[(t.topology_key, labels[t.topology_key])] += 1
        for t in own["anti"]:
            if term_matches(t, pod, q) and t.topology_key in labels:
                anti[(t.topology_key, labels[t.topology_key])] += 1
        for t in kinds(q)["anti"]:
            if term_matches(t, q, pod) and t.topology_key in labels:
                existing[(t.topology_key, labels[t.topology_key])] += 1
    out = {}
    for i in range(nodes):
        labels = node_labels(i)
        ok = all(t.topology_key in labels for t in own["required"])
        if ok and not all(
            affinity[(t.topology_key, labels[t.topology_key])] > 0 for t in own["required"]
        ):
            itself = bool(own["required"]) and all(
                term_matches(t, pod, pod) for t in own["required"]
            )
            ok = not any(v > 0 for v in affinity.values()) and itself
        if not ok:
            out[f"n{i}"] = ERR_REASON_AFFINITY
        elif any(
            t.topology_key in labels and anti[(t.topology_key, labels[t.topology_key])] > 0
            for t in own["anti"]
        ):
            out[f"n{i}"] = ERR_REASON_ANTI_AFFINITY
        elif any(existing[(k, v)] > 0 for k, v in labels.items()):
            out[f"n{i}"] = ERR_REASON_EXISTING
    return out


def reference_scores(
    pod: Pod, placed: list[tuple[Pod, int]], nodes: int, hard: int, ignore: bool
) -> dict[str, int]:
    own = kinds(pod)
    if ignore and not (own["preferred"] or own["preferred_anti"]):
        return {f"n{i}": 0 for i in range(nodes)}
    topology: dict[tuple[str, str], int] = defaultdict(int)

    def add(t: PodAffinityTerm, labels: Mapping[str, str], weight: int) -> None:
        if t.topology_key in labels:
            topology[(t.topology_key, labels[t.topology_key])] += weight

    for q, where in placed:
        labels = node_labels(where)
        theirs = kinds(q)
        for sign, kind in ((1, "preferred"), (-1, "preferred_anti")):
            for w in own[kind]:
                if term_matches(w.pod_affinity_term, pod, q):
                    add(w.pod_affinity_term, labels, sign * w.weight)
        if hard > 0:
            for t in theirs["required"]:
                if term_matches(t, q, pod):
                    add(t, labels, hard)
        if not ignore:
            for sign, kind in ((1, "preferred"), (-1, "preferred_anti")):
                for w in theirs[kind]:
                    if term_matches(w.pod_affinity_term, q, pod):
                        add(w.pod_affinity_term, labels, sign * w.weight)
    raw = [
        sum(v for (k, value), v in topology.items() if node_labels(i).get(k) == value)
        for i in range(nodes)
    ]
    low, high = min(raw), max(raw)
    return {
        f"n{i}": int(100.0 * ((raw[i] - low) / (high - low))) if high > low else 0
        for i in range(nodes)
    }


# --- the comparison ----------------------------------------------------------------------------


def cluster(pods: list[tuple[str, str, int, dict[str, Any]]], args: dict[str, Any]) -> Any:
    w = world(
        *(hnode(f"n{i}", node_labels(i).get(ZONE)) for i in range(4)),
        namespaces=[namespace(n, **labels) for n, labels in NAMESPACES.items()],
        args=args,
    )
    placed = []
    for i, (color, ns, where, aff) in enumerate(pods):
        q = apod(f"q{i}", {"color": color}, node=f"n{where}", namespace=ns, scheduler="x", **aff)
        w.add_pods(q)
        placed.append((q, where))
    return w, placed


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pods=existing,
    incoming=affinities,
    color=st.sampled_from(COLORS),
    ns=st.sampled_from(tuple(NAMESPACES)),
)
def test_filter_matches_the_reference(
    pods: list[tuple[str, str, int, dict[str, Any]]], incoming: dict[str, Any], color: str, ns: str
) -> None:
    w, placed = cluster(pods, {})
    pod = apod("p", {"color": color}, namespace=ns, **incoming)
    wanted = reference_filter(pod, placed, 4)
    pre, result, _ = run_filter(w, pod)
    if result is None:  # skipped: nothing to check on any node
        assert pre.status.ok and wanted == {}
        return
    assert {n: r for n, (r, _) in reasons(w, pod).items()} == wanted


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pods=existing,
    incoming=affinities,
    color=st.sampled_from(COLORS),
    ns=st.sampled_from(tuple(NAMESPACES)),
    hard=st.sampled_from((0, 1, 7)),
    ignore=st.booleans(),
)
def test_scores_match_the_reference(
    pods: list[tuple[str, str, int, dict[str, Any]]],
    incoming: dict[str, Any],
    color: str,
    ns: str,
    hard: int,
    ignore: bool,
) -> None:
    args = {"hardPodAffinityWeight": hard, "ignorePreferredTermsOfExistingPods": ignore}
    w, placed = cluster(pods, args)
    pod = apod("p", {"color": color}, namespace=ns, **incoming)
    assert scores(w, pod) == reference_scores(pod, placed, 4, hard, ignore)
