"""Unknown-field detection (`apis.unknown_fields`): full wire paths through nested models, lists
and maps, suggestions for near misses, free-form maps that accept anything, and the models still
keeping every unknown field of an object read from a server."""

from __future__ import annotations

import copy
from typing import Any, get_args

import pytest

from apis import KINDS, KubeModel, Placement, UnknownField, parse_object, unknown_fields
from apis.core import Pod
from apis.fields import unknown_fields_of
from placement.testing import (
    binding,
    builtin,
    cluster,
    cluster_set,
    decision,
    predicate,
    score,
    taint,
    toleration,
)
from placement.testing import placement as placement_of


def placement(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "web", "namespace": "ns1"},
        "spec": spec,
    }


def paths(doc: Any) -> list[str]:
    return [u.path for u in unknown_fields(doc)]


def test_a_misspelt_top_level_spec_field_is_found_with_a_suggestion() -> None:
    found = unknown_fields(placement(numberOfCluster=2))
    assert found == [UnknownField("spec.numberOfCluster", "numberOfClusters")]
    assert str(found[0]) == 'unknown field "spec.numberOfCluster"'
    assert str(found[0].problem()) == (
        'spec.numberOfCluster: unknown field, did you mean "numberOfClusters"?'
    )


def test_paths_go_through_lists_with_their_index() -> None:
    doc = placement(
        predicates=[
            {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"a": "b"}}}},
            {"requiredClusterSelector": {"labelSelector": {"matchLabel": {"a": "b"}}}},
        ]
    )
    assert unknown_fields(doc) == [
        UnknownField(
            "spec.predicates[1].requiredClusterSelector.labelSelector.matchLabel", "matchLabels"
        )
    ]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            placement(tolerations=[{"key": "a", "operator": "Exists", "tolerationSecond": 5}]),
            UnknownField("spec.tolerations[0].tolerationSecond", "tolerationSeconds"),
            id="toleration",
        ),
        pytest.param(
            placement(
                prioritizerPolicy={
                    "configurations": [{"scoreCoordinate": {"type": "AddOn", "addon": {}}}]
                }
            ),
            UnknownField("spec.prioritizerPolicy.configurations[0].scoreCoordinate.addon", "addOn"),
            id="case-only",
        ),
        pytest.param(
            placement(spreadPolicy={"spreadConstraints": [{"topologyKey": "z", "maxSkw": 1}]}),
            UnknownField("spec.spreadPolicy.spreadConstraints[0].maxSkw", "maxSkew"),
            id="spread-term",
        ),
        pytest.param(
            placement(number_of_clusters=1),
            UnknownField("spec.number_of_clusters", "numberOfClusters"),
            id="python-spelling",
        ),
        pytest.param(
            placement(replicas=3), UnknownField("spec.replicas", None), id="nothing-close"
        ),
        pytest.param(
            {**placement(), "metadata": {"name": "web", "lables": {"a": "b"}}},
            UnknownField("metadata.lables", "labels"),
            id="object-meta",
        ),
        pytest.param(
            {
                **placement(),
                "status": {"conditions": [{"type": "T", "status": "True", "reasn": "x"}]},
            },
            UnknownField("status.conditions[0].reasn", "reason"),
            id="condition-in-status",
        ),
        pytest.param(
            {**placement(), "spek": {}},
            UnknownField("spek", "spec"),
            id="top-level",
        ),
    ],
)
def test_unknown_fields_are_named_by_their_full_wire_path(
    doc: dict[str, Any], expected: UnknownField
) -> None:
    assert unknown_fields(doc) == [expected]


def test_every_unknown_field_is_reported_in_document_order() -> None:
    doc = placement(numberOfCluster=1, clusterSet=["a"], predicates=[{"required": {}}])
    doc["metadata"]["lables"] = {}
    assert paths(doc) == [
        "metadata.lables",
        "spec.numberOfCluster",
        "spec.clusterSet",
        "spec.predicates[0].required",
    ]


def test_free_form_maps_accept_any_key() -> None:
    doc = placement(
        predicates=[{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"x": "y"}}}}]
    )
    doc["metadata"].update(
        labels={"anything.example.com/key": "v"},
        annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        managedFields=[{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        finalizers=["x"],
    )
    cluster = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "c1"},
        "spec": {"managedClusterClientConfigs": [{"url": "https://c1", "anything": 1}]},
        "status": {"allocatable": {"cpu": "4", "nvidia.com/gpu": "1"}, "version": {"k": "v"}},
    }
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ns1"},
        "spec": {"finalizers": ["kubernetes"], "whatever": True},
    }
    assert paths(doc) == [] and paths(cluster) == [] and paths(namespace) == []


def test_values_of_the_wrong_type_are_left_to_validation() -> None:
    # An object where a list belongs, a string where a list belongs, scalars in a list of
    # objects: nothing to look into (the model reports the types).
    doc = placement(predicates={"requiredClusterSelector": {"x": 1}}, clusterSets="x")
    assert paths(doc) == []
    assert paths(placement(tolerations="none", prioritizerPolicy=[{"mode": "x", "y": 1}])) == []
    assert paths(placement(predicates=[1, "x", None, {"requiredClusterSelector": {"z": 1}}])) == [
        "spec.predicates[3].requiredClusterSelector.z"
    ]


def test_documents_of_no_known_kind_have_no_unknown_fields() -> None:
    assert unknown_fields({"apiVersion": "v9", "kind": "Nope", "spec": {"x": 1}}) == []
    assert unknown_fields(["not", "a", "mapping"]) == []
    assert unknown_fields({"apiVersion": ["x"], "kind": {"y": 1}}) == []


def test_the_model_can_be_given_instead_of_read_from_the_document() -> None:
    # The API server knows the kind from the URL; the body may omit apiVersion and kind.
    body = {"metadata": {"name": "web"}, "spec": {"numberOfCluster": 1}}
    assert [u.path for u in unknown_fields(body, Placement)] == ["spec.numberOfCluster"]


def test_partial_core_models_accept_the_fields_they_do_not_type() -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [
                {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}], "env": []}
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "restartPolicy": "Always",
            "affinity": {"podAntiAffinity": {}},
        },
        "status": {"phase": "Running", "podIP": "10.0.0.1", "anythingNewer": 1},
    }
    assert paths(pod) == []
    pod["spec"]["nodeSelecter"] = {"a": "b"}
    pod["spec"]["containers"][0]["imagePullPolicie"] = "Always"
    assert unknown_fields_of(Pod, pod) == [
        UnknownField("spec.containers[0].imagePullPolicie", "imagePullPolicy"),
        UnknownField("spec.nodeSelecter", "nodeSelector"),
    ]


def test_untyped_fields_never_shadow_typed_ones() -> None:
    # A name in UNTYPED_FIELDS that is also a typed field would stop its contents being checked.
    seen: set[type[KubeModel]] = set()
    todo: list[type[KubeModel]] = list(KINDS.values())
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        wire = {info.alias or name for name, info in cls.model_fields.items()}
        assert not wire & cls.UNTYPED_FIELDS, cls.__name__
        todo.extend(_nested_models(cls))
    assert len(seen) > 40


def _nested_models(cls: type[KubeModel]) -> list[type[KubeModel]]:
    out: list[type[KubeModel]] = []
    stack: list[Any] = [info.annotation for info in cls.model_fields.values()]
    while stack:
        annotation = stack.pop()
        if isinstance(annotation, type) and issubclass(annotation, KubeModel):
            out.append(annotation)
        stack.extend(get_args(annotation))
    return out


def test_objects_read_from_a_server_keep_their_unknown_fields() -> None:
    # The check is separate: parsing still keeps what a newer OCM may have added.
    doc = placement(numberOfClusters=2, futureField={"nested": [1]})
    doc["spec"]["predicates"] = [{"requiredClusterSelector": {"newSelector": {"x": 1}}}]
    original = copy.deepcopy(doc)
    assert parse_object(doc).to_wire() == original
    assert paths(doc) == [
        "spec.futureField",
        "spec.predicates[0].requiredClusterSelector.newSelector",
    ]


def test_objects_built_in_code_write_only_known_fields() -> None:
    objects = [
        cluster(
            "c1", labels={"env": "prod"}, claims={"region": "eu"}, cpu="4", taints=[taint("k")]
        ),
        placement_of(
            "ns1",
            "web",
            numberOfClusters=2,
            predicates=[
                predicate({"env": "prod"}, claims=[{"key": "region", "operator": "Exists"}])
            ],
            tolerations=[toleration("k")],
            prioritizerPolicy={"mode": "Exact", "configurations": [builtin("Balance").to_wire()]},
        ),
        decision("ns1", "web", ["c1"]),
        binding("ns1", "global"),
        cluster_set("global", {}),
        score("c1", "usage", {"cpu": 5}),
    ]
    assert [unknown_fields(o.to_wire()) for o in objects] == [[]] * len(objects)
