"""The scheduler's gateway reads a pod seen on both pod watches once: a binding's DELETED on the
pending pods' watch and ADDED on the assigned pods' carry the same object."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from apis.core import Pod
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
    assert gateway.pods_parsed == 2


def test_the_second_line_is_not_decoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    gateway = _gateway()
    bound = _pod("8", node="n1")
    first = gateway._event(Pod, _line("DELETED", bound))
    decoded: list[bytes] = []

    def loads(data: bytes) -> Any:
        decoded.append(data)
        return json.loads(data)

    monkeypatch.setattr(gateway_module, "json", SimpleNamespace(loads=loads))
    second = gateway._event(Pod, _line("ADDED", bound))
    assert second.object is first.object and not decoded
    gateway._event(Pod, _line("ADDED", _pod("9", node="n2")))  # another object: decoded
    assert len(decoded) == 1
