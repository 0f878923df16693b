"""kube-apiserver's validation of a ResourceClaim's `status` (pkg/apis/resource/validation,
v1.36), in kube's words and order, as a write to the status subresource meets it (kube resets
the status of a created claim, so `kube_problems`, which also reads manifests, leaves it out):

* `status.reservedFor`: at most 256 consumers, each with `resource`, `name` and `uid`, no uid
  twice (`status.reservedFor[2]: Duplicate value: "2"`), and none while the claim is not
  allocated (`Forbidden: may not be specified when `allocated` is not set`);
* `status.allocation`: at most 32 results, each naming a request of the claim (`request` or
  `request/subrequest`), a driver, a pool and a device by kube's name rules; its
  `nodeSelector` a valid node selector.

What needs the stored object (an allocation is immutable once set, no consumer added to a
claim being deleted) or the namespace (`adminAccess`) is not checked here.
"""

from __future__ import annotations

from typing import Any

from apis.csivalidation import driver_name_problems
from apis.errors import FieldProblem
from apis.fieldrules import as_dict, as_list, duplicate, forbidden, invalid, required
from apis.names import dns1123_label_problems
from apis.resourceslicevalidation import pool_name_problems, selector_problems
from apis.resourcevalidation import reference_problems, request_names, too_many

__all__ = ["claim_status_problems"]

_MAX_RESERVED = 256
_MAX_RESULTS = 32


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _consumers_problems(consumers: list[Any]) -> list[FieldProblem]:
    path = "status.reservedFor"
    if len(consumers) > _MAX_RESERVED:
        return [too_many(path, len(consumers), _MAX_RESERVED)]
    problems: list[FieldProblem] = []
    for i, raw in enumerate(consumers):
        consumer = as_dict(raw)
        for field in ("resource", "name", "uid"):
            if not _text(consumer.get(field)):
                problems.append(required(f"{path}[{i}].{field}"))
    seen: set[str] = set()
    for i, raw in enumerate(consumers):
        uid = _text(as_dict(raw).get("uid"))
        if uid in seen:
            problems.append(duplicate(f"{path}[{i}]", uid))
        seen.add(uid)
    return problems


def _result_problems(
    result: dict[str, Any], path: str, names: dict[str, set[str]]
) -> list[FieldProblem]:
    problems = reference_problems(_text(result.get("request")), f"{path}.request", names)
    problems += driver_name_problems(_text(result.get("driver")), f"{path}.driver")
    problems += pool_name_problems(_text(result.get("pool")), f"{path}.pool")
    device = _text(result.get("device"))
    return problems + [invalid(f"{path}.device", device, m) for m in dns1123_label_problems(device)]


def _allocation_problems(
    allocation: dict[str, Any], names: dict[str, set[str]]
) -> list[FieldProblem]:
    path = "status.allocation"
    results = as_list(as_dict(allocation.get("devices")).get("results"))
    problems: list[FieldProblem] = []
    if len(results) > _MAX_RESULTS:
        problems.append(too_many(f"{path}.devices.results", len(results), _MAX_RESULTS))
    else:
        for i, result in enumerate(results):
            at = f"{path}.devices.results[{i}]"
            problems += _result_problems(as_dict(result), at, names)
    selector = allocation.get("nodeSelector")
    if isinstance(selector, dict):
        problems += selector_problems(selector, f"{path}.nodeSelector")
    return problems


def claim_status_problems(doc: dict[str, Any]) -> list[FieldProblem]:
    """What kube refuses in a ResourceClaim's `status` (none when it has none)."""
    status = as_dict(doc.get("status"))
    if not status:
        return []
    requests = as_list(as_dict(as_dict(doc.get("spec")).get("devices")).get("requests"))
    consumers = as_list(status.get("reservedFor"))
    problems = _consumers_problems(consumers)
    allocation = status.get("allocation")
    if consumers and not isinstance(allocation, dict):
        detail = "may not be specified when `allocated` is not set"
        problems.append(forbidden("status.reservedFor", detail))
    if isinstance(allocation, dict):
        problems += _allocation_problems(allocation, request_names(requests))
    return problems
