"""PodTopologySpread's vectorized Filter and Score against a plain transcription of kube's
algorithm (a loop over nodes and pods per constraint, as filtering.go and scoring.go read), on
random clusters: nodes with and without zone labels, taints, a disk label the pod may select;
pods in two namespaces, some terminating; constraints on zone and hostname with random skews,
minDomains and node inclusion policies."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.core import Node
from apis.meta import KubeObject
from placement.pods.cluster.overlay import PodOverlay
from placement.pods.framework.interface import PodInfo
from plugins.pods.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS,
    ERR_REASON_LABEL,
    PodTopologySpread,
)
from tests.plugins.pods.builders import all_rows, everything, names, node
from tests.plugins.pods.spread_harness import HOST, ZONE, labelled, world

KEYS = {"zone": ZONE, "host": HOST}


def _matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) in values for k, values in selector.items())


def _included(c: dict[str, Any], n: dict[str, Any], pod: dict[str, Any]) -> bool:
    honor_affinity = c.get("nodeAffinityPolicy", "Honor") == "Honor"
    if honor_affinity and pod["disk"] is not None and n["labels"].get("disk") != pod["disk"]:
        return False
    honor_taints = c.get("nodeTaintsPolicy", "Ignore") == "Honor"
    return not (honor_taints and n["tainted"] and not pod["tolerates"])


def _count_on(name: str, c: dict[str, Any], pods: list[dict[str, Any]]) -> int:
    return sum(
        1
        for p in pods
        if p["node"] == name
        and p["ns"] == "default"
        and not p["deleting"]
        and _matches(c["selector"], p["labels"])
    )


def reference_filter(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], pod: dict[str, Any]
) -> dict[str, str]:
    """Node name -> "ok", "missing" or "skew", as kube's PreFilter and Filter decide."""
    hard = [c for c in pod["constraints"] if c["hard"]]
    counts: list[dict[str, int]] = [defaultdict(int) for _ in hard]
    for n in nodes:
        if not all(c["key"] in n["labels"] for c in hard):
            continue
        for i, c in enumerate(hard):
            if _included(c, n, pod):
                counts[i][n["labels"][c["key"]]] += _count_on(n["name"], c, pods)
    verdict = {}
    for n in nodes:
        verdict[n["name"]] = "ok"
        for i, c in enumerate(hard):
            if c["key"] not in n["labels"]:
                verdict[n["name"]] = "missing"
                break
            least = min(counts[i].values()) if len(counts[i]) >= c.get("minDomains", 1) else 0
            mine = counts[i].get(n["labels"][c["key"]], 0)
            if mine + int(_matches(c["selector"], pod["labels"])) - least > c["maxSkew"]:
                verdict[n["name"]] = "skew"
                break
    return verdict


def reference_score(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    pod: dict[str, Any],
    require_all: bool = True,
    feasible: list[str] | None = None,
) -> dict[str, int]:
    """kube's PreScore, Score and NormalizeScore over every node as the feasible ones
    (`require_all` False: the system defaults, where a node missing a key is still scored
    and its missing value is the domain "")."""
    soft = [c for c in pod["constraints"] if not c["hard"]]
    chosen = [n for n in nodes if feasible is None or n["name"] in feasible]
    if not soft:
        return {n["name"]: 0 for n in chosen}

    def has_keys(n: dict[str, Any]) -> bool:
        return not require_all or all(c["key"] in n["labels"] for c in soft)

    keyed = [n for n in chosen if has_keys(n)]
    ignored = {n["name"] for n in chosen} - {n["name"] for n in keyed}
    weights, per_domain = [], []
    for c in soft:
        domains = {n["labels"].get(c["key"], "") for n in keyed}
        size = len(keyed) if c["key"] == HOST else len(domains)
        weights.append(math.log(size + 2))
        found: dict[str, int] = {}
        for n in nodes:  # every node counts, the feasible ones name the domains
            value = n["labels"].get(c["key"], "")
            if c["key"] != HOST and has_keys(n) and value in domains and _included(c, n, pod):
                found[value] = found.get(value, 0) + _count_on(n["name"], c, pods)
        per_domain.append(found)
    raw = {}
    for n in keyed:
        total = 0.0
        for i, c in enumerate(soft):
            if c["key"] not in n["labels"]:
                continue
            value = n["labels"][c["key"]]
            cnt = _count_on(n["name"], c, pods) if c["key"] == HOST else per_domain[i].get(value, 0)
            total += cnt * weights[i] + (c["maxSkew"] - 1)
        raw[n["name"]] = math.floor(total + 0.5)
    out = {}
    low = min(raw.values(), default=0)
    top = max(raw.values(), default=0)
    for n in chosen:
        name = n["name"]
        if name in ignored:
            out[name] = 0
        elif top == 0:
            out[name] = 100
        else:
            out[name] = 100 * (top + low - raw[name]) // top
    return out


# --- random clusters -------------------------------------------------------------------------

nodes_st = st.lists(
    st.fixed_dictionaries(
        {
            "zone": st.sampled_from(["z0", "z1", "z2", None]),
            "host": st.booleans(),
            "disk": st.sampled_from(["ssd", "hdd"]),
            "tainted": st.booleans(),
        }
    ),
    min_size=1,
    max_size=7,
)
selector_st = st.sampled_from([{"app": ["a"]}, {"app": ["a", "b"]}, {"app": ["b"]}])
constraint_st = st.fixed_dictionaries(
    {
        "key": st.sampled_from([ZONE, HOST]),
        "hard": st.booleans(),
        "maxSkew": st.sampled_from([1, 1, 1, 2, 3]),
        "selector": selector_st,
    },
    optional={
        "minDomains": st.integers(1, 3),
        "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore"]),
        "nodeTaintsPolicy": st.sampled_from(["Honor", "Ignore"]),
    },
)


def _unique(constraints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen, out = set(), []
    for c in constraints:
        if (c["key"], c["hard"]) not in seen:
            seen.add((c["key"], c["hard"]))
            if not c["hard"]:
                c.pop("minDomains", None)
            out.append(c)
    return out


def _wire(c: dict[str, Any]) -> dict[str, Any]:
    values = c["selector"]["app"]
    wire = {
        "maxSkew": c["maxSkew"],
        "topologyKey": c["key"],
        "whenUnsatisfiable": "DoNotSchedule" if c["hard"] else "ScheduleAnyway",
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": values}]},
    }
    for extra in ("minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy"):
        if extra in c:
            wire[extra] = c[extra]
    return wire


def _build(raw_nodes: list[dict[str, Any]], data: Any) -> tuple[Any, ...]:
    nodes = []
    for i, n in enumerate(raw_nodes):
        labels = {"disk": n["disk"]}
        if n["zone"] is not None:
            labels[ZONE] = n["zone"]
        if n["host"]:
            labels[HOST] = f"n{i}"
        nodes.append({"name": f"n{i}", "labels": labels, "tainted": n["tainted"]})
    pods = data.draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "node": st.sampled_from([n["name"] for n in nodes]),
                    "labels": st.sampled_from([{"app": "a"}, {"app": "a"}, {"app": "b"}, {}]),
                    "ns": st.sampled_from(["default", "default", "other"]),
                    "deleting": st.booleans(),
                }
            ),
            max_size=24,
        )
    )
    pod = {
        "labels": data.draw(st.sampled_from([{"app": "a"}, {"app": "b"}])),
        "constraints": _unique(data.draw(st.lists(constraint_st, min_size=1, max_size=3))),
        "disk": data.draw(st.sampled_from([None, "ssd"])),
        "tolerates": data.draw(st.booleans()),
    }
    return nodes, pods, pod


def _objects(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], pod: dict[str, Any]
) -> tuple[list[Node], list[tuple[PodInfo, str]], PodInfo]:
    taint = [{"key": "t", "value": "", "effect": "NoSchedule"}]
    made = [
        node(n["name"], labels=n["labels"], taints=taint if n["tainted"] else None) for n in nodes
    ]
    placed = [
        (labelled(f"p{i}", p["labels"], namespace=p["ns"], deleting=p["deleting"]), p["node"])
        for i, p in enumerate(pods)
    ]
    spec: dict[str, Any] = {}
    if pod["disk"] is not None:
        spec["nodeSelector"] = {"disk": pod["disk"]}
    if pod["tolerates"]:
        spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
    incoming = labelled(
        "incoming", pod["labels"], spread=[_wire(c) for c in pod["constraints"]], **spec
    )
    return made, placed, incoming


@settings(max_examples=300, deadline=None)
@given(raw_nodes=nodes_st, data=st.data())
def test_filter_and_score_agree_with_kube_transcribed(raw_nodes: list[Any], data: Any) -> None:
    nodes, pods, pod = _build(raw_nodes, data)
    made, placed, incoming = _objects(nodes, pods, pod)
    cycle, snapshot = world(made, placed)
    plugin = PodTopologySpread()
    expected = reference_filter(nodes, pods, pod)
    status = plugin.pre_filter(cycle, incoming, snapshot).status
    if status.code.name == "SKIP":
        assert set(expected.values()) == {"ok"}
    else:
        result = plugin.filter(cycle, incoming, snapshot, everything(snapshot))
        got = dict.fromkeys(names(snapshot, result.mask), "ok")
        for reason in result.all_reasons():
            kind = {ERR_REASON_LABEL: "missing", ERR_REASON_CONSTRAINTS: "skew"}[reason.message]
            got.update(dict.fromkeys(names(snapshot, reason.rows), kind))
        assert got == expected
    rows = _feasible(snapshot, data)
    scores = plugin.score(cycle, incoming, snapshot, rows)
    scored = {snapshot.names[r]: int(v) for r, v in zip(rows, scores, strict=True)}
    feasible = [snapshot.names[r] for r in rows]
    assert scored == reference_score(nodes, pods, pod, feasible=feasible)


@settings(max_examples=150, deadline=None)
@given(raw_nodes=nodes_st, data=st.data())
def test_filter_on_a_hypothetical_cluster_agrees_with_kube_transcribed(
    raw_nodes: list[Any], data: Any
) -> None:
    """Preemption's view: some counted pods gone (by key, or every pod below a priority on
    some nodes) and nominated pods added; kube's RemovePod/AddPod amount to running the
    transcription on the cluster as it would be."""
    nodes, pods, pod = _build(raw_nodes, data)
    for i, p in enumerate(pods):
        p["priority"] = data.draw(st.integers(0, 2), label=f"priority {i}")
    made, placed, incoming = _objects(nodes, pods, pod)
    placed = [
        (replace_priority(info, p["priority"]), where)
        for (info, where), p in zip(placed, pods, strict=True)
    ]
    cycle, snapshot = world(made, placed)
    gone = data.draw(st.sets(st.integers(0, max(len(pods) - 1, 0))) if pods else st.just(set()))
    below = {n["name"]: data.draw(st.sampled_from([None, 1, 2])) for n in nodes}
    extra = data.draw(
        st.lists(
            st.tuples(st.sampled_from([n["name"] for n in nodes]), st.sampled_from(["a", "b"])),
            max_size=3,
        )
    )
    floor = np.full(snapshot.size, np.iinfo(np.int64).min, dtype=np.int64)
    for name, value in below.items():
        if value is not None:
            floor[snapshot.row_of(name)] = value
    added = [
        (snapshot.row_of(where), labelled(f"x{i}", {"app": app}))
        for i, (where, app) in enumerate(extra)
    ]
    overlay = (
        PodOverlay()
        .removing(f"default/p{i}" if pods[i]["ns"] == "default" else f"other/p{i}" for i in gone)
        .below_priority(floor)
        .adding((row, info) for row, info in added if row is not None)
    )
    hypothetical = replace(snapshot, overlay=overlay)
    remaining = [
        p
        for i, p in enumerate(pods)
        if i not in gone and not (below[p["node"]] is not None and p["priority"] < below[p["node"]])
    ]
    remaining += [
        {"node": where, "labels": {"app": app}, "ns": "default", "deleting": False}
        for where, app in extra
    ]
    expected = reference_filter(nodes, remaining, pod)
    plugin = PodTopologySpread()
    status = plugin.pre_filter(cycle, incoming, snapshot).status
    if status.code.name == "SKIP":
        return
    result = plugin.filter(cycle, incoming, hypothetical, everything(snapshot))
    got = dict.fromkeys(names(snapshot, result.mask), "ok")
    for reason in result.all_reasons():
        kind = {ERR_REASON_LABEL: "missing", ERR_REASON_CONSTRAINTS: "skew"}[reason.message]
        got.update(dict.fromkeys(names(snapshot, reason.rows), kind))
    assert got == expected


def replace_priority(info: PodInfo, priority: int) -> PodInfo:
    return PodInfo.of(info.pod, priority=priority)


OWNER = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "name": "rs",
    "uid": "u",
    "controller": True,
}


@settings(max_examples=150, deadline=None)
@given(raw_nodes=nodes_st, data=st.data())
def test_system_default_scores_agree_with_kube_transcribed(raw_nodes: list[Any], data: Any) -> None:
    """A pod of a ReplicaSet without constraints of its own: kube's system defaults
    (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) with the ReplicaSet's selector,
    nodes missing a key still scored."""
    nodes, pods, pod = _build(raw_nodes, data)
    app = pod["labels"]["app"]
    pod["constraints"] = [
        {"key": HOST, "hard": False, "maxSkew": 3, "selector": {"app": [app]}},
        {"key": ZONE, "hard": False, "maxSkew": 5, "selector": {"app": [app]}},
    ]
    made, placed, _ = _objects(nodes, pods, {**pod, "constraints": []})
    spec: dict[str, Any] = {"nodeSelector": {"disk": pod["disk"]}} if pod["disk"] else {}
    incoming = labelled("incoming", pod["labels"], owner=OWNER, **spec)
    rs = KubeObject.model_validate(
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
         "spec": {"selector": {"matchLabels": {"app": app}}}}
    )  # fmt: skip
    cycle, snapshot = world(made, placed, {"ReplicaSet": {"default/rs": rs}})
    rows = _feasible(snapshot, data)
    scored = PodTopologySpread().score(cycle, incoming, snapshot, rows)
    got = {snapshot.names[r]: int(v) for r, v in zip(rows, scored, strict=True)}
    feasible = [snapshot.names[r] for r in rows]
    assert got == reference_score(nodes, pods, pod, require_all=False, feasible=feasible)


def _feasible(snapshot: Any, data: Any) -> Any:
    """Every row (the engine's usual call) or an ascending subset, as the filters leave."""
    rows = all_rows(snapshot)
    if data.draw(st.booleans(), label="subset"):
        kept = data.draw(st.sets(st.sampled_from(list(rows)), min_size=1), label="rows")
        rows = np.array(sorted(kept), dtype=np.intp)
    return rows
