"""The fast paths of admission pinned to the slow ones they skip: `apis.fields`' compiled check
(`_clean`) says "no unknown field" exactly when the annotated walk finds none, on documents
built from every kind's own fields with wrong types and unknown keys mixed in; and
`Quantity.parse`'s shared parses are the quantities a fresh parse builds, errors included."""

from __future__ import annotations

import copy
import types
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apis import KINDS, KubeModel, KubeObject, unknown_fields
from apis.core import Pod
from apis.fields import UnknownField, _clean, _walk_model, _wire_fields
from apis.quantity import Quantity, QuantityError

_SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab-_.", max_size=4)
_JUNK_KEYS = st.sampled_from(["x", "namee", "Name", "spec_", "matchLabel", "nodeSelectr"])


def _slow(cls: type[KubeModel], doc: dict[str, Any]) -> list[UnknownField]:
    found: list[UnknownField] = []
    _walk_model(cls, doc, "", found)
    return found


def _any_json(depth: int) -> st.SearchStrategy[Any]:
    if depth <= 0:
        return _SCALARS
    inner = _any_json(depth - 1)
    return _SCALARS | st.lists(inner, max_size=2) | st.dictionaries(_JUNK_KEYS, inner, max_size=2)


@cache
def _shaped(annotation: Any, depth: int) -> st.SearchStrategy[Any]:
    """Values of the annotation's shape, often of another shape (what validation refuses but
    the unknown-field check still sees)."""
    wrong = _any_json(min(depth, 1))
    if depth <= 0:
        return wrong
    origin = get_origin(annotation)
    if origin is Annotated:
        return _shaped(get_args(annotation)[0], depth)
    if origin is Union or origin is types.UnionType:
        arms = [arm for arm in get_args(annotation) if arm is not type(None)]  # `wrong` has null
        return st.one_of([_shaped(arm, depth) for arm in arms or get_args(annotation)])
    if isinstance(annotation, type) and issubclass(annotation, KubeModel):
        document = _document(annotation, depth)
        return st.one_of(document, document, document, wrong)
    if origin is list:
        items = st.lists(_shaped(get_args(annotation)[0], depth - 1), min_size=1, max_size=2)
        return st.one_of(items, items, wrong)
    if origin is dict:
        item = _shaped(get_args(annotation)[1], depth - 1)
        entries = st.dictionaries(st.text("abc", max_size=3), item, min_size=1, max_size=2)
        return st.one_of(entries, entries, wrong)
    return wrong


def _document(cls: type[KubeModel], depth: int) -> st.SearchStrategy[dict[str, Any]]:
    """A document of `cls`: one to four of its fields (typed or untyped), so that documents
    often go deep."""
    fields = {key: _shaped(a, depth - 1) for key, a in _wire_fields(cls).items()}
    for key in sorted(cls.UNTYPED_FIELDS):
        fields.setdefault(key, _any_json(1))
    if not fields:
        return st.just({})
    chosen = st.sets(st.sampled_from(sorted(fields)), min_size=1, max_size=4)
    return chosen.flatmap(lambda keys: st.fixed_dictionaries({k: fields[k] for k in keys}))


def _objects(value: Any) -> list[dict[str, Any]]:
    """Every JSON object in `value`, outermost first."""
    if isinstance(value, dict):
        return [value] + [o for item in value.values() for o in _objects(item)]
    if isinstance(value, list):
        return [o for item in value for o in _objects(item)]
    return []


def _with_junk(data: st.DataObject, kind: type[KubeModel], depth: int) -> dict[str, Any]:
    """A document of `kind`, and in up to two of its objects (at any depth, models or free-form
    maps alike) a key none of them names, or a key of another object."""
    doc = data.draw(_document(kind, depth))
    for _ in range(data.draw(st.integers(0, 2))):
        target = data.draw(st.sampled_from(_objects(doc)))
        target[data.draw(_JUNK_KEYS)] = data.draw(_any_json(1))
    return doc


_ALL_KINDS: list[type[KubeObject]] = sorted(KINDS.values(), key=lambda kind: kind.__name__)


@pytest.mark.parametrize("kind", _ALL_KINDS, ids=[kind.__name__ for kind in _ALL_KINDS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_check_agrees_with_the_walk_on_every_kind(
    kind: type[KubeObject], data: st.DataObject
) -> None:
    doc = _with_junk(data, kind, 6)
    found = _slow(kind, doc)
    assert _clean(kind, doc) == (not found)
    assert unknown_fields(doc, kind) == found


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_fast_check_agrees_with_the_walk_on_pods(data: st.DataObject) -> None:
    doc = _with_junk(data, Pod, 9)
    found = _slow(Pod, doc)
    assert _clean(Pod, doc) == (not found)
    assert unknown_fields(doc, Pod) == found


_SELECTOR = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In"}]}
_TERM = {"labelSelector": _SELECTOR, "namespaces": ["a"], "topologyKey": "zone"}
_NODE_TERM = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
_FULL_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"}},
    "spec": {
        "schedulerName": "s",
        "nodeSelector": {"zone": "a"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [_NODE_TERM]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": _NODE_TERM}
                ],
            },
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_TERM]},
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "podAffinityTerm": _TERM}
                ]
            },
        },
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "1Gi"}},
            }
        ],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "labelSelector": _SELECTOR}
        ],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}],
        "schedulingGates": [{"name": "g"}],
    },
    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled"}]},
}


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_the_fast_check_agrees_with_the_walk_on_a_full_pod_with_changes(
    data: st.DataObject,
) -> None:
    """A pod using every typed part of the model, with keys added to any of its objects, or
    any value of it replaced by another shape."""
    doc = copy.deepcopy(_FULL_POD)
    for _ in range(data.draw(st.integers(0, 3))):
        target = data.draw(st.sampled_from(_objects(doc)))
        if data.draw(st.booleans()) or not target:
            target[data.draw(_JUNK_KEYS)] = data.draw(_any_json(1))
        else:
            target[data.draw(st.sampled_from(sorted(target)))] = data.draw(_any_json(2))
    found = _slow(Pod, doc)
    assert _clean(Pod, doc) == (not found)
    assert unknown_fields(doc, Pod) == found


def test_the_full_pod_has_no_unknown_field() -> None:
    assert _slow(Pod, copy.deepcopy(_FULL_POD)) == []
    assert _clean(Pod, copy.deepcopy(_FULL_POD))


def test_a_key_that_is_no_string_goes_to_the_walk() -> None:
    doc = {"metadata": {"name": "p", 1: "x"}}
    assert not _clean(Pod, doc)
    assert unknown_fields(doc, Pod) == [UnknownField("metadata.1")]


def test_a_nesting_deeper_than_the_stack_goes_to_the_walk() -> None:
    deep: dict[str, Any] = {}
    for _ in range(5_000):
        deep = {"matchExpressions": [deep]}
    doc = {"spec": {"affinity": {"nodeAffinity": {"preferredDuringScheduling": deep}}}}
    assert not _clean(Pod, doc)
    assert [u.path for u in unknown_fields(doc, Pod)] == [
        "spec.affinity.nodeAffinity.preferredDuringScheduling"
    ]


_QUANTITY_TEXT = st.from_regex(
    r"\A[+-]?[0-9]{0,4}(\.[0-9]{0,3})?([KMGTPE]i|[numkMGTPE]|e-?[0-9])?\Z"
)


@settings(max_examples=400, deadline=None)
@given(raw=_QUANTITY_TEXT | st.integers(-(10**20), 10**20) | st.text(max_size=6))
def test_a_shared_parse_is_the_quantity_a_fresh_parse_builds(raw: str | int) -> None:
    try:
        fresh = Quantity(raw)
    except QuantityError as exc:
        message = str(exc)
    else:
        message = ""
    if message:
        with pytest.raises(QuantityError) as refused:
            Quantity.parse(raw)
        assert str(refused.value) == message
        return
    for shared in (Quantity.parse(raw), Quantity.parse(raw)):
        assert type(shared.raw) is type(raw) and shared.raw == raw
        assert shared.value == fresh.value and shared.amount == fresh.amount
        assert shared.canonical() == fresh.canonical() and str(shared) == str(fresh)
        assert shared.approximate() == fresh.approximate()


def test_a_number_and_its_text_stay_apart_and_floats_are_not_shared() -> None:
    assert Quantity.parse("1").raw == "1" and Quantity.parse(1).raw == 1
    assert type(Quantity.parse(1).raw) is int
    assert str(Quantity.parse(-0.0)) == "-0.0" and str(Quantity.parse(0.0)) == "0.0"
    with pytest.raises(QuantityError):
        Quantity.parse(True)
