"""`apis.resourcevalidation`, `apis.resourceslicevalidation` and `apis.podclaimvalidation`
through `kube_problems`, and `apis.claimstatusvalidation` (a status write): the rules beyond
the entry-point corpus (tests/data/kube-validation), each answer as kube-apiserver v1.36.2 gave
it to the same object (a dry-run create or status write), what kube lets through after its
defaults, the limits, and no crash on any shape."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apis.claimstatusvalidation import claim_status_problems
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


def status_lines(status: dict[str, Any]) -> list[str]:
    requests = [
        exactly(),
        {"name": "nic", "firstAvailable": [{"name": "fast", "deviceClassName": "n"}]},
    ]
    obj = {**claim(*requests), "status": status}
    return [str(p) for p in claim_status_problems(obj)]


RESULT = {"request": "gpu", "driver": "d.example.com", "pool": "p", "device": "dev-0"}


def test_a_claims_status_as_kube_checks_a_status_write() -> None:
    consumer = {"resource": "pods", "name": "p", "uid": "1"}
    assert status_lines({"reservedFor": [consumer]}) == [
        "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"
    ]
    reserved = [{"name": "p"}, {**consumer, "uid": "2"}, {**consumer, "name": "r", "uid": "2"}]
    allocation = {"devices": {"results": [RESULT]}}
    assert status_lines({"allocation": allocation, "reservedFor": reserved}) == [
        "status.reservedFor[0].resource: Required value",
        "status.reservedFor[0].uid: Required value",
        'status.reservedFor[2]: Duplicate value: "2"',
    ]
    assert status_lines({"allocation": {}}) == []
    fast = {**RESULT, "request": "nic/fast", "device": "dev-1"}
    assert status_lines({"allocation": {"devices": {"results": [RESULT, fast]}}}) == []


def test_an_allocation_names_requests_and_devices_as_kube_does() -> None:
    results = [
        {"request": "tpu", "driver": "D_Bad", "pool": "P/x", "device": "Dev_0"},
        {**RESULT, "request": "nic/slow"},
        {"request": "nic/fast", "driver": "", "pool": "", "device": ""},
    ]
    one_node = {"key": "metadata.name", "operator": "In", "values": ["a", "b"]}
    selector = {"nodeSelectorTerms": [{"matchFields": [one_node]}]}
    at = "status.allocation.devices.results"
    ref = (
        "must be the name of a request in the claim or the name of a request and a subrequest "
        "separated by '/'"
    )
    label = (
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    )
    subdomain = (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
        "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    assert status_lines(
        {"allocation": {"devices": {"results": results}, "nodeSelector": selector}}
    ) == [
        f'{at}[0].request: Invalid value: "tpu": {ref}',
        f'{at}[0].driver: Invalid value: "D_Bad": {subdomain}',
        f'{at}[0].pool: Invalid value: "P": {subdomain}',
        f'{at}[0].device: Invalid value: "Dev_0": {label}',
        f'{at}[1].request: Invalid value: "nic/slow": {ref}',
        f"{at}[2].driver: Required value",
        f"{at}[2].pool: Required value",
        f'{at}[2].device: Invalid value: "": {label}',
        "status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0].values: Required "
        "value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
    ]
