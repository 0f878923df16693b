"""`apis.kubevalidation` alone: the rules beyond the entry-point corpus
(tests/controllers/test_kube_validation.py), what kube lets through, and no crash on any shape."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.kubevalidation import cause_reason, kube_problems


def pod(**spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "app", "image": "nginx"}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def lines(doc: Any) -> list[str]:
    return [str(p) for p in kube_problems(doc)]


def test_a_valid_pod_and_node_have_no_problem() -> None:
    assert lines(pod(tolerations=[{"operator": "Exists"}], nodeSelector={"zone": "a"})) == []
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    assert lines({**node, "status": {"allocatable": {"cpu": "0", "memory": "1Gi"}}}) == []


def test_a_gt_value_that_is_no_integer_is_let_through_as_kube_does() -> None:
    term = {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["many"]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    assert lines(pod(affinity=affinity)) == []


def test_toleration_rules_beyond_the_operator() -> None:
    tolerations = [
        {"key": "a", "operator": "Exists", "value": "v"},
        {"operator": "Equal", "value": "v"},
        {"key": "b", "effect": "Sometimes"},
        {"key": "c", "effect": "NoSchedule", "tolerationSeconds": 5},
    ]
    assert lines(pod(tolerations=tolerations)) == [
        'spec.tolerations[0].operator: Invalid value: {"key":"a","operator":"Exists",'
        '"value":"v"}: value must be empty when `operator` is \'Exists\'',
        'spec.tolerations[1].operator: Invalid value: "Equal": operator must be Exists when '
        '`key` is empty, which means "match all values and all keys"',
        'spec.tolerations[2].effect: Unsupported value: "Sometimes": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        "spec.tolerations[3].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
        "when `tolerationSeconds` is set",
    ]


def test_init_containers_limits_and_exists_with_values() -> None:
    init = [{"name": "i", "image": "x", "resources": {"limits": {"memory": "-1Gi"}}}]
    term = {"matchExpressions": [{"key": "z", "operator": "Exists", "values": ["a"]}]}
    preferred = [{"weight": 1, "preference": term}]
    doc = pod(
        initContainers=init,
        affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}},
    )
    assert lines(doc) == [
        'spec.initContainers[0].resources.limits[memory]: Invalid value: "-1Gi": must be '
        "greater than or equal to 0",
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]."
        "preference.matchExpressions[0].values: Forbidden: may not be specified when "
        "`operator` is 'Exists' or 'DoesNotExist'",
    ]


def test_the_system_classes_keep_their_values() -> None:
    doc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-node-critical"},
        "value": 2_000_001_000,
    }
    assert lines(doc) == []
    assert lines({**doc, "value": 7}) == [
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for "
        "system use only. error: value of system-node-critical PriorityClass must be 2000001000"
    ]


def test_cause_reasons() -> None:
    assert cause_reason("Required value") == "FieldValueRequired"
    assert cause_reason('Unsupported value: "x"') == "FieldValueNotSupported"
    assert cause_reason("Too long: must have at most 1 bytes") == "FieldValueTooLong"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_fields = st.sampled_from(
    [
        *("containers", "initContainers", "nodeSelector", "affinity", "tolerations"),
        *("resources", "topologySpreadConstraints", "accessModes", "capacity", "local"),
        *("nodeAffinity", "selector", "storageClassName", "volumeMode"),
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(
        [
            *(("v1", "Pod"), ("v1", "Node"), ("scheduling.k8s.io/v1", "PriorityClass")),
            *(("v1", "PersistentVolumeClaim"), ("v1", "PersistentVolume")),
            ("storage.k8s.io/v1", "StorageClass"),
        ]
    ),
    spec=st.dictionaries(_fields, _json, max_size=4),
    status=_json,
    meta=_json,
)
def test_any_shape_gives_problems_never_an_exception(
    kind: tuple[str, str], spec: dict[str, Any], status: Any, meta: Any
) -> None:
    doc = {
        "apiVersion": kind[0],
        "kind": kind[1],
        "metadata": meta,
        "spec": spec,
        "status": status,
        "value": status,
    }
    for problem in kube_problems(doc):
        assert problem.path and problem.message


def resources(requests: dict[str, str], limits: dict[str, str] | None = None) -> dict[str, Any]:
    given_ = {"requests": requests, **({"limits": limits} if limits is not None else {})}
    return pod(containers=[{"name": "c", "image": "x", "resources": given_}])


def test_extended_resources_and_hugepages_need_a_limit_equal_to_the_request() -> None:
    # each message as kube-apiserver v1.36 answers the same pod
    path = "spec.containers[0].resources"
    assert lines(resources({"nvidia.com/gpu": "1"})) == [
        f"{path}.limits: Required value: Limit must be set for non overcommitable resources"
    ]
    assert lines(resources({"hugepages-2Mi": "2Mi", "cpu": "1"})) == [
        f"{path}.limits: Required value: Limit must be set for non overcommitable resources"
    ]
    assert lines(resources({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"})) == [
        f'{path}.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'
    ]
    assert lines(resources({"example.com/foo": "3", "cpu": "1"}, {"example.com/foo": "1"})) == [
        f'{path}.requests: Invalid value: "3": must be equal to example.com/foo limit of 1'
    ]


def test_native_resources_may_request_below_their_limit_or_set_no_limit() -> None:
    assert lines(resources({"cpu": "1", "memory": "1Gi"})) == []
    assert lines(resources({"cpu": "1"}, {"cpu": "2"})) == []
    assert lines(resources({"ephemeral-storage": "1Gi"})) == []
    assert lines(resources({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"})) == []
    assert lines(resources({}, {"nvidia.com/gpu": "2"})) == []  # the request defaults to it


_CORPUS = list(
    yaml.safe_load_all((Path(__file__).parents[1] / "data/kube-validation/corpus.yaml").read_text())
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, (*path, i))
    return found


@settings(max_examples=300, deadline=None)
@given(data=st.data(), replacement=_json)
def test_any_value_anywhere_in_a_refused_object_gives_problems_never_an_exception(
    data: st.DataObject, replacement: Any
) -> None:
    """Each object of the kube corpus with one value (at any depth) replaced by any JSON."""
    doc = copy.deepcopy(data.draw(st.sampled_from(_CORPUS)))
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = replacement
    for problem in kube_problems(doc):
        assert problem.path and problem.message
