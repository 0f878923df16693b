"""`apis.resourcevalidation`, `apis.resourceslicevalidation` and `apis.podclaimvalidation`
through `kube_problems`: the rules beyond the entry-point corpus (tests/data/kube-validation),
each answer as kube-apiserver v1.36.2 gave it to the same object (a dry-run create), what kube
lets through after its defaults, the limits, and no crash on any shape."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apis.kubevalidation import kube_problems

GROUP = "resource.k8s.io/v1"


def doc(kind: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": GROUP, "kind": kind, "metadata": {"name": "x"}, "spec": spec}


def lines(obj: Any) -> list[str]:
    return [str(p) for p in kube_problems(obj)]


def claim(*requests: dict[str, Any], **devices: Any) -> dict[str, Any]:
    return doc("ResourceClaim", {"devices": {"requests": list(requests), **devices}})


def exactly(name: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.example.com", **fields}}


def slice_of(**spec: Any) -> dict[str, Any]:
    base = {"driver": "gpu.example.com", "pool": {"name": "p", "resourceSliceCount": 1}}
    return doc("ResourceSlice", {**base, **spec})


def test_what_kubes_defaults_make_valid_is_accepted() -> None:
    # a count of 0 is unset and defaulted to 1; a toleration without operator is Equal
    assert lines(claim(exactly(count=0, tolerations=[{}]))) == []
    assert lines(doc("ResourceClaim", {})) == []
    assert lines(doc("ResourceClaimTemplate", {})) == []
    # a constraint with both attributes checks the first only
    both = {"matchAttribute": "example.com/a", "distinctAttribute": "x.com/b"}
    assert lines(claim(exactly(), constraints=[both])) == []


def test_an_attribute_name_with_two_slashes_is_let_through_as_kube_does() -> None:
    device = {"name": "d", "attributes": {"a/b/c": {"string": "x"}}}
    assert lines(slice_of(nodeName="n", devices=[device])) == []


def test_extended_resource_names_of_a_device_class() -> None:
    def problems(name: str) -> list[str]:
        return lines(doc("DeviceClass", {"extendedResourceName": name}))

    assert problems("example.com/gpu") == []
    for native in ("cpu", "kubernetes.io/gpu", "requests.example.com/gpu"):
        assert problems(native) == [
            f'spec.extendedResourceName: Invalid value: "{native}": must be a valid extended '
            "resource name"
        ]


def test_the_limits_of_a_claim() -> None:
    many = [{"name": f"s{i}", "deviceClassName": "c"} for i in range(9)]
    assert lines(claim({"name": "r", "firstAvailable": many})) == [
        "spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items"
    ]
    constraints = [{"matchAttribute": "a.com/b"}] * 33
    assert lines(claim(exactly(), constraints=constraints)) == [
        "spec.devices.constraints: Too many: 33: must have at most 32 items"
    ]
    selectors = [{"cel": {"expression": "true"}}] * 33
    assert lines(doc("DeviceClass", {"selectors": selectors})) == [
        "spec.selectors: Too many: 33: must have at most 32 items"
    ]


def test_a_slice_with_taints_holds_64_devices_not_128() -> None:
    taint = [{"key": "k", "effect": "NoSchedule"}]
    devices = [{"name": f"d{i}", "taints": taint} for i in range(65)]
    assert lines(slice_of(allNodes=True, devices=devices)) == [
        "spec.devices: Too many: 65: must have at most 64 items"
    ]
    assert lines(slice_of(allNodes=True, devices=devices[:64])) == []
    plain = [{"name": f"d{i}"} for i in range(128)]
    assert lines(slice_of(allNodes=True, devices=plain)) == []


def test_a_device_holds_32_attributes_and_capacities() -> None:
    attributes = {f"a{i}": {"int": i} for i in range(20)}
    capacity = {f"c{i}": {"value": "1"} for i in range(13)}
    device = {"name": "d", "attributes": attributes, "capacity": capacity}
    assert lines(slice_of(allNodes=True, devices=[device])) == [
        "spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must "
        "not exceed 32"
    ]


def test_long_names_in_a_slice() -> None:
    device = {
        "name": "x" * 64,
        "attributes": {"a" * 33: {"int": 1}, "d" * 64 + ".com/x": {"int": 1}},
    }
    spec = {"driver": "d" * 64 + ".com", "pool": {"name": "p" * 254, "resourceSliceCount": 1}}
    assert lines(doc("ResourceSlice", {**spec, "nodeName": "n", "devices": [device]})) == [
        "spec.driver: Too long: may not be more than 63 bytes",
        "spec.pool.name: Too long: may not be more than 253 bytes",
        f'spec.pool.name: Invalid value: "{"p" * 254}": must be no more than 253 characters',
        f'spec.devices[0].name: Invalid value: "{"x" * 64}": must be no more than 63 characters',
        "spec.devices[0].attributes: Too long: may not be more than 32 bytes",
        "spec.devices[0].attributes: Too long: may not be more than 63 bytes",
    ]


def test_a_slice_node_selector_needs_exactly_one_term() -> None:
    assert lines(slice_of(nodeSelector={"nodeSelectorTerms": []})) == [
        "spec.nodeSelector.nodeSelectorTerms: Required value: must have at least one node "
        "selector term",
        "spec.nodeSelector.nodeSelectorTerms: Invalid value: []: must have exactly one node "
        "selector term",
    ]


def test_shared_counters_and_devices_together() -> None:
    counters = [{"name": "c", "counters": {"m": {"value": "1"}}}]
    assert lines(slice_of(nodeName="n", devices=[{"name": "a"}], sharedCounters=counters)) == [
        'spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed'
    ]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "a", "A_b", "x/y"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "exactly",
                    "firstAvailable",
                    "devices",
                    "requests",
                    "nodeName",
                    "pool",
                    "attributes",
                    "allNodes",
                    "count",
                    "allocationMode",
                    "resourceClaims",
                    "claims",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(
        ["DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"]
    ),
    spec=_JSON,
)
def test_no_shape_of_a_resource_object_crashes_the_validation(kind: str, spec: Any) -> None:
    for problem in kube_problems(doc(kind, spec)):
        assert problem.path.startswith("spec")


@settings(max_examples=100, deadline=None)
@given(spec=_JSON)
def test_no_shape_of_a_pods_claims_crashes_the_validation(spec: Any) -> None:
    pod_spec = {
        "containers": [{"name": "c", "resources": {"claims": spec}}],
        "resourceClaims": spec,
    }
    kube_problems({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec})


def test_the_counter_limits_of_a_slice() -> None:
    def sets(count: int, counters: int = 1) -> list[dict[str, Any]]:
        per_set = {f"c{i}": {"value": "1"} for i in range(counters)}
        return [{"name": f"s{i}", "counters": per_set} for i in range(count)]

    assert lines(slice_of(nodeName="n", sharedCounters=sets(8, 32))) == []
    assert lines(slice_of(nodeName="n", sharedCounters=sets(9))) == [
        "spec.sharedCounters: Too many: 9: must have at most 8 items"
    ]
    assert lines(slice_of(nodeName="n", sharedCounters=sets(1, 33))) == [
        "spec.sharedCounters[0].counters: Too many: 33: must have at most 32 items"
    ]
    consumes = [{"counterSet": "s", "counters": {f"c{i}": {"value": "1"} for i in range(33)}}]
    device = {"name": "d", "consumesCounters": consumes}
    assert lines(slice_of(nodeName="n", devices=[device])) == [
        "spec.devices[0].consumesCounters[0].counters: Too many: 33: must have at most 32 items"
    ]


def test_a_template_sets_only_labels_and_annotations_of_its_claims() -> None:
    meta = {
        "name": "x",
        "namespace": "y",
        "generateName": "z-",
        "finalizers": ["a/b"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1"}],
        "labels": {"app": "web"},
        "annotations": {"example.com/ok": "v"},
    }
    assert lines(doc("ResourceClaimTemplate", {"metadata": meta, "spec": {}})) == [
        f"spec.metadata.{field}: Forbidden: cannot be set"
        for field in ("name", "generateName", "namespace", "ownerReferences", "finalizers")
    ]
