"""The spot/on-demand rules (docs/spot-webhook.md, 'What it decides'): workload resolution,
the annotation, the decision, and the JSON patch, applied with an RFC 6902 implementation
(jsonpatch) to check the pod that results. Each of the seed's defects D1–D5 (docs/spot-webhook.md,
'Where it differs from the webhook it follows') has a test whose expected result differs from
what the seed produces (said in each test)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from placement.spot.mutation import (
    DELETION_COST,
    DESIRED_CAPACITY,
    RESERVATION,
    Capacity,
    MutationConfig,
    Workload,
    WorkloadRef,
    decide,
    escape,
    is_on_demand_alive,
    min_available,
    patch,
    statefulset_ordinal,
    workload_of,
)

CFG = MutationConfig()
CAP = "node.kubernetes.io/capacity"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
OD_EXPR = {"key": CAP, "operator": "In", "values": ["on-demand"]}
SP_EXPR = {"key": CAP, "operator": "In", "values": ["spot"]}
OD_REQ = {REQ: {"nodeSelectorTerms": [{"matchExpressions": [OD_EXPR]}]}}
SP_PREF = [{"weight": 100, "preference": {"matchExpressions": [SP_EXPR]}}]
LBL = "/metadata/labels/distributed-scheduling~1desired-capacity"


def rs_owner(name: str = "web-5d8f9c") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": name,
        "uid": "u1",
        "controller": True,
    }


def pod(
    name: str = "web-5d8f9c-abcde",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    spec: dict[str, Any] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", **meta}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec if spec is not None else {"containers": [{"name": "c", "image": "x"}]},
    }


def deployment(m: str | None = "3", replicas: int = 10) -> Workload:
    annotations = {} if m is None else {"distributed-scheduling/min-available": m}
    return Workload(WorkloadRef("Deployment", "ns", "web"), replicas, annotations)


def statefulset(m: str = "2", replicas: int = 5) -> Workload:
    annotations = {"distributed-scheduling/min-available": m}
    return Workload(WorkloadRef("StatefulSet", "ns", "db"), replicas, annotations)


def applied(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(doc), ops)
    return result


def deployment_owner(ns: str, name: str) -> dict[str, Any] | None:
    if name == "web-5d8f9c":
        return {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}
    if name == "bare-rs":
        return None
    return None


# --- workload resolution ---------------------------------------------------------------------


def test_replicaset_pod_resolves_to_its_deployment() -> None:
    assert workload_of(pod(owners=[rs_owner()]), deployment_owner) == WorkloadRef(
        "Deployment", "ns", "web"
    )


def test_statefulset_pod_resolves_to_its_statefulset() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": True}
    assert workload_of(pod("db-0", owners=[owner]), deployment_owner) == WorkloadRef(
        "StatefulSet", "ns", "db"
    )


@pytest.mark.parametrize(
    "owners",
    [
        pytest.param(None, id="standalone"),
        pytest.param(
            [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "controller": True}], id="job"
        ),
        pytest.param([rs_owner("bare-rs")], id="replicaset-without-deployment"),
        pytest.param(
            [{"apiVersion": "example.com/v1", "kind": "StatefulSet", "name": "x"}],
            id="foreign-group",
        ),
    ],
)
def test_other_owners_are_not_workloads(owners: list[dict[str, Any]] | None) -> None:
    assert workload_of(pod(owners=owners), deployment_owner) is None


def test_unknown_replicaset_resolves_by_its_template_hash_name() -> None:
    p = pod(owners=[rs_owner("api-7f6b")], labels={"pod-template-hash": "7f6b"})
    assert workload_of(p, lambda ns, name: None) == WorkloadRef("Deployment", "ns", "api")


def test_unknown_replicaset_without_matching_hash_is_not_resolved() -> None:
    p = pod(owners=[rs_owner("api-7f6b")], labels={"pod-template-hash": "zzzz"})
    assert workload_of(p, lambda ns, name: None) is None


def test_controller_owner_is_preferred_over_the_first_owner() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"}
    assert workload_of(pod(owners=[other, rs_owner()]), deployment_owner) is not None


@pytest.mark.parametrize(
    ("name", "ordinal"),
    [
        ("db-0", 0),
        ("db-12", 12),
        ("db-", None),
        ("db-01", None),
        ("db-x", None),
        ("dbx-1", None),
        ("db-1-2", None),
    ],
)
def test_statefulset_ordinal(name: str, ordinal: int | None) -> None:
    assert statefulset_ordinal(name, "db") == ordinal


# --- the annotation (D3) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("0", 0),
        ("3", 3),
        (" 4 ", 4),
        ("-1", None),
        ("x", None),
        ("1.5", None),
        ("٣", None),
    ],
)
def test_min_available_parses_non_negative_integers(raw: str, value: int | None) -> None:
    got, problem = min_available(deployment(raw), CFG)
    assert got == value
    assert (problem is None) == (value is not None)


def test_d3_invalid_annotation_allows_unchanged_with_a_warning() -> None:
    # The seed answers an error with no uid and allowed=false (the API server then applies the
    # failure policy); here: allowed, no patch, a warning naming the annotation and the value.
    verdict = decide(pod(labels={}), deployment("three"), 0, CFG)
    assert verdict.capacity is None
    assert len(verdict.warnings) == 1
    assert "min-available='three'" in verdict.warnings[0]


def test_missing_annotation_allows_unchanged_silently() -> None:
    verdict = decide(pod(labels={}), deployment(None), 0, CFG)
    assert verdict.capacity is None
    assert verdict.warnings == ()


def test_d4_standalone_pod_is_untouched() -> None:
    # The seed's "standalone" vs "Standalone" mismatch sent an empty patch `[]`; the verdict
    # here is "no capacity", for which the webhook sends no patch field at all.
    verdict = decide(pod(), None, 0, CFG)
    assert verdict.capacity is None
    assert verdict.warnings == ()


# --- the decision ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alive", "capacity"),
    [
        pytest.param(0, Capacity.ON_DEMAND, id="none-yet"),
        pytest.param(2, Capacity.ON_DEMAND, id="one-short"),
        pytest.param(3, Capacity.SPOT, id="full"),
        pytest.param(7, Capacity.SPOT, id="over"),
    ],
)
def test_deployment_is_on_demand_while_fewer_than_m_are(alive: int, capacity: Capacity) -> None:
    verdict = decide(pod(labels={}), deployment("3"), alive, CFG)
    assert verdict.capacity is capacity
    assert verdict.counted == (capacity is Capacity.ON_DEMAND)


def test_m_zero_sends_every_pod_of_a_deployment_to_spot() -> None:
    assert decide(pod(labels={}), deployment("0"), 0, CFG).capacity is Capacity.SPOT


@pytest.mark.parametrize(
    ("name", "capacity"),
    [
        ("db-0", Capacity.ON_DEMAND),
        ("db-1", Capacity.ON_DEMAND),
        ("db-2", Capacity.SPOT),
        ("db-4", Capacity.SPOT),
    ],
)
def test_statefulset_ordinals_below_m_are_on_demand(name: str, capacity: Capacity) -> None:
    verdict = decide(pod(name), statefulset("2"), 99, CFG)  # the count is not read
    assert verdict.capacity is capacity
    assert not verdict.counted


def test_statefulset_pod_without_ordinal_is_untouched_with_a_warning() -> None:
    verdict = decide(pod("db-x"), statefulset("2"), 0, CFG)
    assert verdict.capacity is None
    assert verdict.warnings


@pytest.mark.parametrize("workload", [deployment("0", replicas=1), statefulset("0", replicas=1)])
def test_one_replica_workload_always_goes_on_demand(workload: Workload) -> None:
    verdict = decide(pod("db-3"), workload, 5, CFG)
    assert verdict.capacity is Capacity.ON_DEMAND
    assert not verdict.counted


@pytest.mark.parametrize("label", ["on-demand", "spot"])
def test_a_pod_already_labelled_keeps_its_decision(label: str) -> None:
    verdict = decide(pod(labels={DESIRED_CAPACITY: label}), deployment("3"), 0, CFG)
    assert verdict.capacity == Capacity(label)
    assert not verdict.counted  # a reinvocation reserves nothing again


# --- D1: what counts -----------------------------------------------------------------------


def running(label: str | None, **meta: Any) -> dict[str, Any]:
    doc = pod(labels={} if label is None else {DESIRED_CAPACITY: label}, **meta)
    doc["status"] = {"phase": "Running"}
    return doc


def test_d1_only_labelled_non_terminating_pods_count() -> None:
    # The seed counted every pod of the Deployment (its on-demand selector was discarded):
    # 2 spot pods + 1 on-demand pod with M=2 gave 3 >= 2, spot. Here 1 < 2: on-demand.
    pods = [running("spot"), running("spot"), running("on-demand")]
    alive = sum(is_on_demand_alive(p, CFG) for p in pods)
    assert alive == 1
    assert decide(pod(labels={}), deployment("2"), alive, CFG).capacity is Capacity.ON_DEMAND


@pytest.mark.parametrize(
    ("doc", "counts"),
    [
        pytest.param(running("on-demand"), True, id="running"),
        pytest.param(
            running("on-demand", deletionTimestamp="2026-01-01T00:00:00Z"), False, id="terminating"
        ),
        pytest.param({**running("on-demand"), "status": {"phase": "Failed"}}, False, id="evicted"),
        pytest.param({**running("on-demand"), "status": {"phase": "Succeeded"}}, False, id="done"),
        pytest.param(running("spot"), False, id="spot"),
        pytest.param(running(None), False, id="unlabelled"),
    ],
)
def test_is_on_demand_alive(doc: dict[str, Any], counts: bool) -> None:
    assert is_on_demand_alive(doc, CFG) is counts


# --- the patch: worked examples, on a bare pod and on pods with affinity ---------------------


def test_vector_on_demand_bare_pod() -> None:
    # ODreq, DC and LBL(on-demand), on a pod with labels and no annotations or affinity.
    p = pod(labels={"app": "web"})
    ops = patch(p, Capacity.ON_DEMAND, CFG)
    assert ops == [
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": OD_REQ}},
        {"op": "add", "path": "/metadata/annotations", "value": {DELETION_COST: "1"}},
        {"op": "add", "path": LBL, "value": "on-demand"},
    ]
    out = applied(p, ops)
    assert out["metadata"]["labels"] == {"app": "web", DESIRED_CAPACITY: "on-demand"}


def test_vector_spot_bare_pod() -> None:
    p = pod(labels={"app": "web"})
    ops = patch(p, Capacity.SPOT, CFG)
    assert ops == [
        {
            "op": "add",
            "path": "/spec/affinity",
            "value": {"nodeAffinity": {PREF: SP_PREF}},
        },
        {"op": "add", "path": LBL, "value": "spot"},
    ]
    assert DELETION_COST not in (applied(p, ops)["metadata"].get("annotations") or {})


def test_on_demand_merges_the_deletion_cost_into_existing_annotations() -> None:
    p = pod(labels={}, annotations={"a": "b"})
    out = applied(p, patch(p, Capacity.ON_DEMAND, CFG))
    assert out["metadata"]["annotations"] == {"a": "b", DELETION_COST: "1"}


def test_rfc6901_escaping_of_annotation_and_label_keys() -> None:
    assert escape("controller.kubernetes.io/pod-deletion-cost") == (
        "controller.kubernetes.io~1pod-deletion-cost"
    )
    assert escape("a~b/c") == "a~0b~1c"
    cfg = MutationConfig(desired_label="x~y/z")
    p = pod(labels={}, annotations={})
    ops = patch(p, Capacity.ON_DEMAND, cfg, reservation="t1")
    paths = {op["path"] for op in ops}
    assert "/metadata/labels/x~0y~1z" in paths
    assert "/metadata/annotations/controller.kubernetes.io~1pod-deletion-cost" in paths
    out = applied(p, ops)
    assert out["metadata"]["labels"] == {"x~y/z": "on-demand"}
    assert out["metadata"]["annotations"] == {DELETION_COST: "1", RESERVATION: "t1"}


def test_d5_missing_labels_and_annotations_maps_are_created() -> None:
    # The seed's `add /metadata/labels/...` fails on a pod with no labels map.
    p = pod()  # no labels, no annotations
    out = applied(p, patch(p, Capacity.ON_DEMAND, CFG))
    assert out["metadata"]["labels"] == {DESIRED_CAPACITY: "on-demand"}
    assert out["metadata"]["annotations"] == {DELETION_COST: "1"}


def test_d2_on_demand_is_anded_into_every_existing_required_term() -> None:
    # The seed appends a third term: (zone=a) OR (gpu) OR (on-demand), which lets the pod onto
    # any spot node in zone a. Here each term gets the on-demand requirement.
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    gpu = {"key": "gpu", "operator": "Exists"}
    name = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
    spec = {
        "containers": [],
        "affinity": {
            "nodeAffinity": {
                REQ: {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [zone]},
                        {"matchExpressions": [gpu]},
                        {"matchFields": [name]},
                    ]
                }
            },
            "podAntiAffinity": {"keep": "me"},
        },
    }
    p = pod(labels={}, spec=spec)
    out = applied(p, patch(p, Capacity.ON_DEMAND, CFG))
    terms = out["spec"]["affinity"]["nodeAffinity"][REQ]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [zone, OD_EXPR]},
        {"matchExpressions": [gpu, OD_EXPR]},
        {"matchFields": [name], "matchExpressions": [OD_EXPR]},
    ]
    assert out["spec"]["affinity"]["podAntiAffinity"] == {"keep": "me"}


def test_on_demand_with_affinity_but_no_node_affinity_adds_only_node_affinity() -> None:
    p = pod(labels={}, spec={"containers": [], "affinity": {"podAffinity": {"x": 1}}})
    ops = patch(p, Capacity.ON_DEMAND, CFG)
    assert ops[0]["path"] == "/spec/affinity/nodeAffinity"
    out = applied(p, ops)
    assert out["spec"]["affinity"] == {"podAffinity": {"x": 1}, "nodeAffinity": OD_REQ}


def test_spot_appends_to_existing_preferred_terms() -> None:
    mine = {"weight": 5, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}
    spec = {"containers": [], "affinity": {"nodeAffinity": {PREF: [mine]}}}
    p = pod(labels={}, spec=spec)
    out = applied(p, patch(p, Capacity.SPOT, CFG))
    prefs = out["spec"]["affinity"]["nodeAffinity"][PREF]
    assert prefs == [mine, *SP_PREF]


def test_spot_gets_the_configured_tolerations_once() -> None:
    tol = {"key": "cloud/spot", "operator": "Exists", "effect": "NoSchedule"}
    cfg = MutationConfig(spot_tolerations=(tol,))
    p = pod(labels={})
    out = applied(p, patch(p, Capacity.SPOT, cfg))
    assert out["spec"]["tolerations"] == [tol]
    other = {"key": "x", "operator": "Exists"}
    p2 = pod(labels={}, spec={"containers": [], "tolerations": [other]})
    out2 = applied(p2, patch(p2, Capacity.SPOT, cfg))
    assert out2["spec"]["tolerations"] == [other, tol]
    assert patch(out2, Capacity.SPOT, cfg) == []


def test_on_demand_gets_no_spot_tolerations() -> None:
    cfg = MutationConfig(spot_tolerations=({"key": "s", "operator": "Exists"},))
    out = applied(pod(labels={}), patch(pod(labels={}), Capacity.ON_DEMAND, cfg))
    assert "tolerations" not in out["spec"]


@pytest.mark.parametrize("capacity", list(Capacity))
def test_patch_is_idempotent_under_reinvocation(capacity: Capacity) -> None:
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    spec = {
        "containers": [],
        "affinity": {"nodeAffinity": {REQ: {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}}},
    }
    p = pod(spec=spec)
    once = applied(p, patch(p, capacity, CFG, reservation="t"))
    assert patch(once, capacity, CFG, reservation="t") == []
    # and the decision of a reinvoked pod is the one already made
    assert decide(once, deployment("3"), 0, CFG).capacity is capacity


@pytest.mark.parametrize(
    ("cfg", "key", "od", "sp"),
    [
        pytest.param(
            MutationConfig(
                capacity_label="eks.amazonaws.com/capacityType",
                on_demand_value="ON_DEMAND",
                spot_value="SPOT",
            ),
            "eks.amazonaws.com/capacityType",
            "ON_DEMAND",
            "SPOT",
            id="eks",
        ),
        pytest.param(
            MutationConfig(capacity_label="karpenter.sh/capacity-type"),
            "karpenter.sh/capacity-type",
            "on-demand",
            "spot",
            id="karpenter",
        ),
    ],
)
def test_capacity_label_key_and_values_are_configurable(
    cfg: MutationConfig, key: str, od: str, sp: str
) -> None:
    od_out = applied(pod(), patch(pod(), Capacity.ON_DEMAND, cfg))
    req = od_out["spec"]["affinity"]["nodeAffinity"][REQ]
    assert req["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": key, "operator": "In", "values": [od]}
    ]
    sp_out = applied(pod(), patch(pod(), Capacity.SPOT, cfg))
    pref = sp_out["spec"]["affinity"]["nodeAffinity"][PREF]
    assert pref[0]["preference"]["matchExpressions"] == [
        {"key": key, "operator": "In", "values": [sp]}
    ]
    # the pod label keeps the project's own values: the count reads it
    assert od_out["metadata"]["labels"][DESIRED_CAPACITY] == "on-demand"


def test_annotation_name_is_configurable() -> None:
    cfg = MutationConfig(min_available_annotation="example.com/on-demand-min")
    workload = Workload(WorkloadRef("Deployment", "ns", "w"), 4, {"example.com/on-demand-min": "1"})
    assert decide(pod(labels={}), workload, 0, cfg).capacity is Capacity.ON_DEMAND
    assert decide(pod(labels={}), deployment("1"), 0, cfg).capacity is None
