"""The scheduler's gateway reads a pod seen on both pod watches once when a binding's DELETED on
the pending pods' watch and ADDED on the assigned pods' carry the same object (kube-apiserver's
DELETED carries the pod as it was: never taken for the bound one). A pod's next version
that differs only in what a binding or a status write changes is derived from the model before
(the same model a full parse gives), and quantities are parsed once per value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_core import from_json

from apis.core import Node, Pod
from controllers.addons import gateway as gateway_module
from controllers.addons.gateway import PodGateway
from controllers.kube.gateway import Gateway


def _pod(rv: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "app"}]}
    if node:
        spec["nodeName"] = node
    meta = {"name": "web", "namespace": "team", "uid": "u1", "resourceVersion": rv}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _line(kind: str, doc: dict[str, Any], separators: tuple[str, str] = (", ", ": ")) -> bytes:
    return json.dumps({"type": kind, "object": doc}, separators=separators).encode() + b"\n"


def _gateway() -> PodGateway:
    """A PodGateway without a connection: only its watch-line decoding is used."""
    return PodGateway.fenced(Gateway.__new__(Gateway), None)


def test_the_two_watch_lines_of_a_binding_are_one_model_parsed_once() -> None:
    gateway = _gateway()
    bound = _pod("8", node="n1")
    for separators in ((", ", ": "), (",", ":")):  # ours, and Go's encoding
        gone = gateway._event(Pod, _line("DELETED", bound, separators))
        came = gateway._event(Pod, _line("ADDED", bound, separators))
        assert (gone.type, came.type) == ("DELETED", "ADDED")
        assert came.object is gone.object
        assert came.object is not None and came.object.spec.node_name == "n1"
        assert came.resource_version == gone.resource_version == "8"
    assert gateway.pods_parsed == 1  # Go's line found the model by uid and resourceVersion
    later = gateway._event(Pod, _line("MODIFIED", _pod("9", node="n1")))
    assert later.object is not came.object and later.resource_version == "9"
    # Only its resourceVersion differs: derived from the model before, not parsed again.
    assert (gateway.pods_parsed, gateway.pods_derived) == (1, 1)


def test_the_second_line_is_not_decoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    gateway = _gateway()
    bound = _pod("8", node="n1")
    first = gateway._event(Pod, _line("DELETED", bound))
    decoded: list[bytes] = []

    def loads(data: bytes) -> Any:
        decoded.append(data)
        return json.loads(data)

    monkeypatch.setattr(gateway_module, "from_json", loads)
    second = gateway._event(Pod, _line("ADDED", bound))
    assert second.object is first.object and not decoded
    gateway._event(Pod, _line("ADDED", _pod("9", node="n2")))  # another object: decoded
    assert len(decoded) == 1


def _sized(name: str, resources: dict[str, Any], overhead: Any = None) -> dict[str, Any]:
    doc = _pod("1")
    doc["metadata"] |= {"name": name, "uid": f"uid-{name}"}
    doc["spec"]["containers"][0]["resources"] = resources
    doc["spec"]["initContainers"] = [{"name": "init", "resources": {"limits": {"cpu": "1"}}}]
    if overhead is not None:
        doc["spec"]["overhead"] = overhead
    return doc


def test_pods_read_share_one_parsed_quantity_per_value() -> None:
    gateway = _gateway()
    resources = {"requests": {"cpu": "100m", "memory": "500Mi"}, "limits": {"cpu": 2}}
    docs = [_sized(n, json.loads(json.dumps(resources)), {"cpu": "10m"}) for n in ("a", "b")]
    a, b = (gateway._event(Pod, _line("ADDED", d)).object for d in docs)
    assert a is not None and b is not None
    ra, rb = a.spec.containers[0].resources, b.spec.containers[0].resources
    assert ra is not None and rb is not None and ra.requests and rb.requests
    assert ra.requests["memory"] is rb.requests["memory"]
    assert ra.requests["memory"].milli() == 500 * 1024 * 1024 * 1000
    assert ra.limits is not None and ra.limits["cpu"].milli() == 2000
    assert a.spec.overhead is not None and b.spec.overhead is not None
    assert a.spec.overhead["cpu"] is b.spec.overhead["cpu"]
    init = a.spec.init_containers
    assert init is not None and init[0].resources is not None and init[0].resources.limits
    assert init[0].resources.limits["cpu"].milli() == 1000
    # What the model writes back is what the server sent: the text, and a number as a number.
    wire = a.to_wire()
    assert wire["spec"]["containers"][0]["resources"] == resources
    assert wire["spec"]["overhead"] == {"cpu": "10m"}


def test_numbers_share_a_quantity_only_with_the_same_number() -> None:
    gateway = _gateway()
    values = {"n1": 1, "n2": "1", "n3": 1.0, "n4": -0.0, "n5": 0.0}
    pods = {
        n: gateway._event(Pod, _line("ADDED", _sized(n, {"requests": {"cpu": v}}))).object
        for n, v in values.items()
    }
    written = {}
    for name, pod in pods.items():
        assert pod is not None
        wire = pod.to_wire()["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        written[name] = (type(wire), repr(wire))
    assert written == {n: (type(v), repr(v)) for n, v in values.items()}


def test_an_invalid_quantity_is_still_refused_by_the_model() -> None:
    gateway = _gateway()
    line = _line("ADDED", _sized("bad", {"requests": {"cpu": "lots"}}))
    with pytest.raises(Exception, match="quantity"):
        gateway._event(Pod, line)


def test_node_capacity_and_allocatable_are_shared_too() -> None:
    gateway = _gateway()

    def node(name: str) -> dict[str, Any]:
        status = {"capacity": {"cpu": "32", "pods": "110"}, "allocatable": {"cpu": "32"}}
        meta = {"name": name, "uid": name, "resourceVersion": "1"}
        return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": status}

    first, second = (gateway._typed(Node, node(n)) for n in ("n1", "n2"))
    assert first.status is not None and second.status is not None
    assert first.status.capacity is not None and second.status.allocatable is not None
    assert first.status.capacity["cpu"] is second.status.allocatable["cpu"]
    assert first.to_wire()["status"]["capacity"] == {"cpu": "32", "pods": "110"}


def _pending(rv: str) -> dict[str, Any]:
    doc = _sized("web", {"requests": {"cpu": "100m"}})
    doc["metadata"] |= {"resourceVersion": rv, "labels": {"app": "web"}}
    doc["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    return doc


def _bound(rv: str, node: str = "n1") -> dict[str, Any]:
    doc = _pending(rv)
    doc["spec"]["nodeName"] = node
    condition = {"type": "PodScheduled", "status": "True", "lastProbeTime": None}
    doc["status"]["conditions"] = [condition | {"lastTransitionTime": "2026-11-27T21:44:07Z"}]
    return doc


def _parsed_whole(doc: dict[str, Any]) -> Pod:
    pod = _gateway()._event(Pod, _line("ADDED", doc)).object
    assert pod is not None
    return pod


def test_the_bound_version_is_derived_and_is_the_model_a_full_parse_gives() -> None:
    gateway = _gateway()
    pending = gateway._event(Pod, _line("ADDED", _pending("5"))).object
    bound = gateway._event(Pod, _line("MODIFIED", _bound("6"))).object
    assert (gateway.pods_parsed, gateway.pods_derived) == (1, 1)
    assert pending is not None and bound is not None
    whole = _parsed_whole(_bound("6"))
    assert bound == whole and bound.to_wire() == whole.to_wire() == _bound("6")
    assert bound.spec.node_name == "n1" and bound.metadata.resource_version == "6"
    assert bound.status is not None and bound.status.conditions
    assert pending.spec.node_name is None and pending.metadata.resource_version == "5"
    assert pending.to_wire() == _pending("5")  # the model before is not changed


def test_a_version_with_the_status_unchanged_is_derived_as_set_as_before() -> None:
    gateway = _gateway()
    gateway._event(Pod, _line("ADDED", _bound("6")))
    again = gateway._event(Pod, _line("MODIFIED", _bound("7"))).object
    assert gateway.pods_derived == 1 and again is not None
    assert again.to_wire() == _bound("7") == _parsed_whole(_bound("7")).to_wire()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d["metadata"]["labels"].update(app="db"), id="label"),
        pytest.param(
            lambda d: d["metadata"].update(deletionTimestamp="2026-11-27T22:00:00Z"), id="deleted"
        ),
        pytest.param(lambda d: d["spec"].update(priority=7), id="spec"),
        pytest.param(lambda d: d["spec"].pop("nodeName"), id="unbound"),
        pytest.param(lambda d: d.update(extra={"a": 1}), id="top-level"),
    ],
)
def test_any_other_change_is_parsed_whole(change: Any) -> None:
    gateway = _gateway()
    gateway._event(Pod, _line("ADDED", _bound("6")))
    changed = _bound("7")
    change(changed)
    pod = gateway._event(Pod, _line("MODIFIED", changed)).object
    assert (gateway.pods_parsed, gateway.pods_derived) == (2, 0)
    assert pod is not None and pod.to_wire() == _parsed_whole(changed).to_wire()


def test_an_invalid_status_in_a_later_version_is_still_refused() -> None:
    gateway = _gateway()
    gateway._event(Pod, _line("ADDED", _pending("5")))
    broken = _bound("6")
    broken["status"]["conditions"] = "not a list"
    with pytest.raises(Exception, match="conditions"):
        gateway._event(Pod, _line("MODIFIED", broken))


def test_a_line_pydantic_cannot_decode_is_read_as_json_loads_reads_it() -> None:
    doc = _pending("5")
    doc["metadata"]["annotations"] = {"note": "\ud800"}  # a lone surrogate escape
    line = _line("ADDED", doc)
    assert b"\\ud800" in line
    gateway = _gateway()
    gateway.answers = None  # the plain gateway's reading, which it falls back to
    pod = gateway._event(Pod, line).object
    assert pod is not None and pod.metadata.annotations == {"note": "\ud800"}


def test_numbers_decode_as_json_loads_decodes_them() -> None:
    doc = _pending("5")
    doc["metadata"]["annotations"] = {"a": "é\n\u2028"}
    doc["status"]["podIP"] = "10.0.0.1"
    doc["spec"]["extraNumbers"] = [1, 1.0, -0.0, 1e300, 123456789012345678901234567890]
    line = _line("ADDED", doc)
    assert from_json(line) == json.loads(line)  # the parser the gateway reads lines with
    pod = _gateway()._event(Pod, line).object
    assert pod is not None and pod.to_wire() == doc
    numbers = pod.to_wire()["spec"]["extraNumbers"]
    assert [(type(n), repr(n)) for n in numbers] == [
        (type(n), repr(n)) for n in doc["spec"]["extraNumbers"]
    ]


@pytest.mark.parametrize(
    ("namespace", "name", "uid", "node"),
    [
        ("team", "web", "u1", "n1"),
        ("team", "web", "", "n1"),
        ("tëam", 'we"b\\', "u\n1", "nöde ✓ \U0001f600"),
    ],
)
def test_the_binding_body_is_what_json_dumps_writes(
    namespace: str, name: str, uid: str, node: str
) -> None:
    meta = {"name": name, "namespace": namespace} | ({"uid": uid} if uid else {})
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    assert gateway_module.binding_body(namespace, name, uid, node) == json.dumps(binding).encode()


def test_a_binding_seen_first_as_the_pending_pod_leaving_is_not_the_bound_pod() -> None:
    # kube-apiserver's DELETED on the pending pods' watch carries the pod as it was (no node)
    # at the binding's resourceVersion; the assigned pods' ADDED at that resourceVersion is
    # the pod as it is now, and must not be taken for the one before.
    gateway = _gateway()
    left = _pod("8")
    gone = gateway._event(Pod, _line("DELETED", left))
    came = gateway._event(Pod, _line("ADDED", _pod("8", node="n1")))
    assert gone.object is not None and gone.object.spec.node_name is None
    assert came.object is not None and came.object.spec.node_name == "n1"
    later = gateway._event(Pod, _line("MODIFIED", _pod("9", node="n1")))
    assert later.object is not None and later.object.spec.node_name == "n1"
