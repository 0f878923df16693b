"""The default spreading selector, as kube v1.36's DefaultSelector derives it from the
Services, ReplicationController, ReplicaSet or StatefulSet selecting the pod, and what the
system default constraints do with it: bare pods behind a Service are spread, a ReplicaSet's
other pods are counted, a pod nothing selects gets no default constraint."""

from __future__ import annotations

from typing import Any

from apis.meta import KubeObject, LabelSelector, LabelSelectorRequirement
from placement.pods.framework.events import ObjectEvent
from plugins.pods.podtopologyspread.default_selector import DefaultSelectors, default_selector
from plugins.pods.podtopologyspread.plugin import PodTopologySpread
from tests.plugins.pods.podtopologyspread.test_podtopologyspread_score import scores
from tests.plugins.pods.spread_harness import Cluster, fresh, labelled, world, zoned

WEB = {"app": "web"}


def obj(kind: str, name: str, spec: dict[str, Any], namespace: str = "default") -> KubeObject:
    api = "apps/v1" if kind in ("ReplicaSet", "StatefulSet") else "v1"
    meta = {"name": name, "namespace": namespace}
    return KubeObject.model_validate(
        {"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec}
    )


def owner(kind: str, name: str) -> dict[str, Any]:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "name": name, "uid": "u", "controller": True}


def objects(*found: KubeObject) -> dict[str, dict[str, KubeObject]]:
    out: dict[str, dict[str, KubeObject]] = {}
    for o in found:
        out.setdefault(o.kind or "", {})[o.key] = o
    return out


def selector_of(pod: Any, *found: KubeObject) -> LabelSelector | None:
    return default_selector(pod, Cluster((), objects(*found)))  # type: ignore[arg-type]


def three_nodes() -> list[Any]:
    return [zoned("n0", "z1"), zoned("n1", "z1"), zoned("n2", "z2")]


def test_a_service_selecting_bare_pods_spreads_them() -> None:
    """Two pods of the Service on n0 already: the next one scores n0 lowest (system defaults:
    hostname maxSkew 3, zone maxSkew 5); without the Service the plugin scores nothing."""
    svc = obj("Service", "web", {"selector": WEB})
    placed = [(labelled("w1", WEB), "n0"), (labelled("w2", WEB), "n0")]
    pod = labelled("w3", WEB)
    assert selector_of(pod, svc) == LabelSelector(match_labels=WEB)
    cycle, nodes = world(three_nodes(), placed, objects(svc))
    got = scores(PodTopologySpread(), cycle, pod, nodes)
    assert got["n0"] < got["n1"] <= got["n2"] == 100
    cycle, nodes = world(three_nodes(), placed)
    assert set(scores(PodTopologySpread(), cycle, pod, nodes).values()) == {0}


def test_a_replica_sets_other_pods_are_counted() -> None:
    """The ReplicaSet selects `tier: fe`: pods with that label and another app count too (the
    pod's own labels would not select them)."""
    rs = obj("ReplicaSet", "fe-1", {"selector": {"matchLabels": {"tier": "fe"}}})
    mine = {"app": "web", "tier": "fe", "pod-template-hash": "1"}
    placed = [
        (labelled("a", {"app": "old", "tier": "fe"}), "n0"),
        (labelled("b", {"app": "old", "tier": "fe"}), "n0"),
    ]
    pod = labelled("p", mine, owner=owner("ReplicaSet", "fe-1"))
    assert selector_of(pod, rs) == LabelSelector(
        match_expressions=[LabelSelectorRequirement(key="tier", operator="In", values=["fe"])]
    )
    cycle, nodes = world(three_nodes(), placed, objects(rs))
    got = scores(PodTopologySpread(), cycle, pod, nodes)
    assert got["n0"] < got["n1"]


def test_services_merge_and_each_controller_kind_adds_its_selector() -> None:
    labels = {"app": "web", "tier": "fe", "track": "stable"}
    services = [
        obj("Service", "web", {"selector": {"app": "web"}}),
        obj("Service", "fe", {"selector": {"tier": "fe"}}),
        obj("Service", "all", {"selector": {}}),  # selects every pod, adds nothing
        obj("Service", "none", {}),  # no selector: selects nothing
        obj("Service", "db", {"selector": {"app": "db"}}),  # does not select the pod
        obj("Service", "there", {"selector": {"track": "stable"}}, namespace="other"),
    ]
    pod = labelled("p", labels)
    assert selector_of(pod, *services) == LabelSelector(match_labels={"app": "web", "tier": "fe"})
    # A ReplicationController's map is merged in (its value wins, as kube's labels.Merge).
    rc = obj("ReplicationController", "rc", {"selector": {"track": "canary", "tier": "fe"}})
    pod = labelled("p", labels, owner=owner("ReplicationController", "rc"))
    assert selector_of(pod, services[0], rc) == LabelSelector(
        match_labels={"app": "web", "track": "canary", "tier": "fe"}
    )
    # A StatefulSet's requirements are added to the Services' labels.
    sts = obj(
        "StatefulSet",
        "db",
        {"selector": {"matchExpressions": [{"key": "track", "operator": "Exists"}]}},
    )
    pod = labelled("p", labels, owner=owner("StatefulSet", "db"))
    assert selector_of(pod, services[0], sts) == LabelSelector(
        match_labels={"app": "web"},
        match_expressions=[LabelSelectorRequirement(key="track", operator="Exists")],
    )


def test_no_selecting_object_skips_the_default_constraints() -> None:
    pod = labelled("p", WEB, owner=owner("ReplicaSet", "gone"))
    assert selector_of(pod) is None  # a controller the scheduler does not know adds nothing
    bad = obj("ReplicaSet", "gone", {"selector": {"matchExpressions": [{"key": "a"}]}})
    assert selector_of(pod, bad) is None  # an invalid selector adds nothing
    empty = obj("ReplicaSet", "gone", {"selector": {}})
    assert selector_of(pod, empty) is None  # nor does one selecting everything
    deployment = {**owner("ReplicaSet", "web"), "kind": "Deployment"}
    assert selector_of(labelled("p", WEB, owner=deployment)) is None  # not a selecting kind
    assert selector_of(labelled("p", WEB), obj("Service", "s", {"selector": WEB}, "x")) is None
    cycle, nodes = world(three_nodes(), [(labelled("w1", WEB), "n0")], objects(bad))
    plugin = PodTopologySpread()
    assert set(scores(plugin, cycle, pod, nodes).values()) == {0}
    # A DoNotSchedule default (List) is skipped too: PreFilter says Skip.
    listed = PodTopologySpread.from_args(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                 "whenUnsatisfiable": "DoNotSchedule"}
            ],
        }
    )  # fmt: skip
    assert listed.pre_filter(cycle, pod, nodes).status.code.name == "SKIP"


def test_selectors_are_kept_per_pod_shape_and_derived_again_when_a_service_changes() -> None:
    placed = [(labelled("w1", WEB), "n0"), (labelled("w2", WEB), "n0")]
    cycle, nodes = world(three_nodes(), placed)
    plugin = PodTopologySpread()
    pod = labelled("w3", WEB)
    assert set(scores(plugin, cycle, pod, nodes).values()) == {0}
    svc = obj("Service", "web", {"selector": WEB})
    cluster = cycle.cluster
    assert isinstance(cluster, Cluster)
    cluster._objects["Service"] = {svc.key: svc}
    assert plugin.on_event(ObjectEvent("Added", svc), cluster) is False  # kube retries nothing
    got = scores(plugin, fresh(cycle), pod, nodes)  # the next cycle
    assert got["n0"] < got["n1"]
    selectors = DefaultSelectors()
    first = selectors.of(pod, cluster)
    assert selectors.of(labelled("w4", WEB), cluster) is first  # same namespace and labels
    # A watch event that leaves the selector as it was (a status update) keeps the answers.
    selectors.changed(svc, deleted=False)
    assert selectors.of(pod, cluster) is not first  # first sight of the Service: derived again
    kept = selectors.of(pod, cluster)
    selectors.changed(svc.model_copy(update={"status": {"loadBalancer": {}}}), deleted=False)
    assert selectors.of(pod, cluster) is kept
    cluster._objects["Service"] = {}
    selectors.changed(svc, deleted=True)
    assert selectors.of(pod, cluster) is None
