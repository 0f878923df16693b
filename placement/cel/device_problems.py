"""kube-apiserver's checks of the CEL device selectors in DeviceClasses, ResourceClaims and
ResourceClaimTemplates: each expression at most 10 KiB (`Too long: may not be more than 10240
bytes`, not compiled then), compiling in the DRA environment (`Invalid value: "<expr>":
compilation failed: ...`) and not "too complex" (kube's cost estimate over its runtime limit;
ours is a floor of it: nested comprehensions over the attribute maps), under kube's field
paths. The entry points that validate objects
(`placement validate`, `scheduler simulate`, the embedded API server) add these problems to
kube's other validation of the kinds."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from apis.errors import FieldProblem
from apis.fieldrules import as_dict, as_list, forbidden, invalid
from apis.meta import KubeObject
from apis.resource import RESOURCE_GROUP
from placement.cel.device_text import estimated_cost
from placement.cel.devices import (
    MAX_COST,
    MAX_EXPRESSION_BYTES,
    DeviceSelectorError,
    DeviceSelectors,
)

__all__ = ["selector_problems"]

_SELECTORS = DeviceSelectors()  # compiles each distinct expression once per process


def selector_problems(obj: KubeObject | Mapping[str, Any]) -> list[FieldProblem]:
    """The problems of the object's selectors (none for another kind)."""
    if isinstance(obj, KubeObject):
        doc: Mapping[str, Any] = {
            **obj.to_wire(),
            "apiVersion": f"{obj.GROUP}/{obj.VERSION}",
            "kind": obj.KIND,
        }
    else:
        doc = obj
    group = str(doc.get("apiVersion", "")).partition("/")[0]
    if group != RESOURCE_GROUP:
        return []
    spec = as_dict(doc.get("spec"))
    kind = doc.get("kind")
    if kind == "DeviceClass":
        found = _selectors(spec, "spec")
    elif kind == "ResourceClaim":
        found = _claim(spec, "spec")
    elif kind == "ResourceClaimTemplate":
        found = _claim(as_dict(spec.get("spec")), "spec.spec")
    else:
        return []
    return [problem for path, expression in found if (problem := _check(path, expression))]


def _claim(spec: Mapping[str, Any], path: str) -> Iterator[tuple[str, str]]:
    requests = as_list(as_dict(spec.get("devices")).get("requests"))
    for i, request in enumerate(requests):
        request = as_dict(request)
        at = f"{path}.devices.requests[{i}]"
        if "exactly" in request:
            yield from _selectors(as_dict(request["exactly"]), f"{at}.exactly")
        else:  # v1beta1: the request's own fields
            yield from _selectors(request, at)
        for k, sub in enumerate(as_list(request.get("firstAvailable"))):
            yield from _selectors(as_dict(sub), f"{at}.firstAvailable[{k}]")


def _selectors(holder: Mapping[str, Any], path: str) -> Iterator[tuple[str, str]]:
    for i, selector in enumerate(as_list(holder.get("selectors"))):
        expression = as_dict(as_dict(selector).get("cel")).get("expression")
        if isinstance(expression, str) and expression:
            yield f"{path}.selectors[{i}].cel.expression", expression


def _check(path: str, expression: str) -> FieldProblem | None:
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        return FieldProblem(path, f"Too long: may not be more than {MAX_EXPRESSION_BYTES} bytes")
    try:
        _SELECTORS.program(expression)
    except DeviceSelectorError as exc:
        return invalid(path, expression, str(exc))
    if estimated_cost(expression) > MAX_COST:
        return forbidden(path, "too complex, exceeds cost limit")
    return None
