"""Pods with inter-pod terms, and an engine world to run them in, for the InterPodAffinity tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from apis.core import Namespace, Node, Pod
from placement.pods.framework.events import ObjectEvent
from placement.pods.framework.interface import PodCycle, PodInfo, WaitingPods
from placement.pods.framework.results import FilterResult, PreFilterResult
from plugins.pods.interpodaffinity.plugin import InterPodAffinity
from tests.placement.pods.test_engine import T0, World, default_profile, make_node, make_pod

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def term(
    labels: dict[str, str] | None = None,
    key: str = HOST,
    *,
    expressions: list[dict[str, Any]] | None = None,
    namespaces: list[str] | None = None,
    namespace_selector: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if labels is not None:
        selector["matchLabels"] = labels
    if expressions is not None:
        selector["matchExpressions"] = expressions
    out: dict[str, Any] = {"labelSelector": selector, "topologyKey": key, **extra}
    if namespaces is not None:
        out["namespaces"] = namespaces
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    return out


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    *,
    required: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    preferred: Sequence[dict[str, Any]] = (),
    preferred_anti: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    if required or preferred:
        out["podAffinity"] = {req: list(required), pref: list(preferred)}
    if anti or preferred_anti:
        out["podAntiAffinity"] = {req: list(anti), pref: list(preferred_anti)}
    return out


def apod(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    node: str | None = None,
    cpu: int | str = "100m",
    namespace: str = "default",
    priority: int | None = None,
    scheduler: str | None = None,
    **aff: Any,
) -> Pod:
    """A pod with labels and inter-pod terms (keyword args of `affinity`)."""
    spec: dict[str, Any] = {}
    if aff:
        spec["affinity"] = affinity(**aff)
    extra: dict[str, Any] = {}
    if scheduler is not None:
        extra["scheduler"] = scheduler
    pod = make_pod(name, cpu, node=node, namespace=namespace, priority=priority, **extra, **spec)
    meta = pod.metadata.model_copy(update={"labels": labels or {}})
    return pod.model_copy(update={"metadata": meta})


def hnode(name: str, zone: str | None = None, cpu: int = 4, **labels: str) -> Node:
    """A node labelled with its hostname (and zone)."""
    all_labels = {HOST: name, **labels}
    if zone is not None:
        all_labels[ZONE] = zone
    return make_node(name, cpu=cpu, labels=all_labels)


def namespace(name: str, **labels: str) -> Namespace:
    return Namespace.model_validate({"metadata": {"name": name, "labels": labels}})


def world(
    *nodes: Node,
    namespaces: Sequence[Namespace] = (),
    args: dict[str, Any] | None = None,
    **options: Any,
) -> World:
    """An engine world with these nodes and Namespaces; `args`: InterPodAffinity's."""
    profile = None
    if args is not None:
        profile = default_profile(pluginArgs={"InterPodAffinity": args})
    w = World.of(profile, **options)
    for ns in namespaces:
        w.engine.handle(ObjectEvent("Added", ns), T0)
    w.add_nodes(*nodes)
    return w


def plugin_of(w: World) -> InterPodAffinity:
    [found] = [p for p, _ in w.engine.profile.scores if isinstance(p, InterPodAffinity)]
    return found


def cycle_of(w: World) -> PodCycle:
    return PodCycle(now=w.now, cluster=w.engine.cluster, waiting=cast(WaitingPods, None))


def info_of(pod: Pod) -> PodInfo:
    return PodInfo.of(pod)


def run_filter(w: World, pod: Pod) -> tuple[PreFilterResult, FilterResult | None, PodCycle]:
    """PreFilter then (unless it skipped or failed) Filter over every node."""
    plugin, cycle, info = plugin_of(w), cycle_of(w), info_of(pod)
    nodes = w.engine.nodes()
    pre = plugin.pre_filter(cycle, info, nodes)
    if not pre.status.ok or pre.status.code != 0:
        return pre, None, cycle
    return pre, plugin.filter(cycle, info, nodes, np.ones(nodes.size, dtype=bool)), cycle


def fits(w: World, pod: Pod) -> list[str]:
    """The nodes the plugin lets the pod on."""
    pre, result, _ = run_filter(w, pod)
    nodes = w.engine.nodes()
    if result is None:
        return list(nodes.names) if pre.status.ok else []
    return [nodes.names[i] for i in np.flatnonzero(result.mask)]


def reasons(w: World, pod: Pod) -> dict[str, tuple[str, bool]]:
    """node -> (reason, resolvable) for the nodes the plugin rejects."""
    _, result, _ = run_filter(w, pod)
    assert result is not None
    nodes = w.engine.nodes()
    out: dict[str, tuple[str, bool]] = {}
    for reason in result.all_reasons():
        for row in np.flatnonzero(reason.rows):
            out[nodes.names[row]] = (reason.message, reason.resolvable)
    return out


def scores(w: World, pod: Pod) -> dict[str, int]:
    plugin, cycle, info = plugin_of(w), cycle_of(w), info_of(pod)
    nodes = w.engine.nodes()
    rows = np.arange(nodes.size, dtype=np.intp)
    got = plugin.score(cycle, info, nodes, rows)
    return {nodes.names[r]: int(s) for r, s in zip(rows, got, strict=True)}


def placed(w: World) -> dict[str, str | None]:
    """pod name -> node (None while pending)."""
    return {key.split("/")[1]: p.spec.node_name for key, p in w.pods.items()}
