"""kube-apiserver's validation of a `storage.k8s.io/v1` CSINode, worded and ordered as kube
v1.36 words and orders it (pkg/apis/storage/validation), per driver of `spec.drivers`: the name
set, at most 63 bytes and a DNS subdomain once lower-cased, and not listed twice; `nodeID` set
and at most 256 characters; `allocatable.count` not negative; each topology key set, a
qualified name and not listed twice (these reported on the driver itself, as kube does).
"""

from __future__ import annotations

from typing import Any

from apis.errors import FieldProblem
from apis.fielderrors import label_key_problems
from apis.fieldrules import as_dict, as_int, as_list, duplicate, invalid, required
from apis.names import dns1123_subdomain_problems

__all__ = ["csinode_problems", "driver_name_problems"]

_DRIVER_NAME_MAX = 63
_NODE_ID_MAX = 256


def driver_name_problems(name: str, at: str) -> list[FieldProblem]:
    if not name:
        return [required(at)]
    problems = []
    if len(name) > _DRIVER_NAME_MAX:
        problems.append(
            FieldProblem(at, f"Too long: may not be more than {_DRIVER_NAME_MAX} bytes")
        )
    problems += [invalid(at, name, m) for m in dns1123_subdomain_problems(name.lower())]
    return problems


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def csinode_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    """A CSINode's `spec` (see the module docstring)."""
    problems: list[FieldProblem] = []
    names: set[str] = set()
    for i, raw in enumerate(as_list(spec.get("drivers"))):
        at = f"spec.drivers[{i}]"
        driver = as_dict(raw)
        name = _text(driver.get("name"))
        problems += driver_name_problems(name, f"{at}.name")
        node_id = _text(driver.get("nodeID"))
        if not node_id:
            problems.append(required(f"{at}.nodeID"))
        if len(node_id) > _NODE_ID_MAX:
            message = f"must be {_NODE_ID_MAX} characters or less"
            problems.append(invalid(f"{at}.nodeID", node_id, message))
        count = as_int(as_dict(driver.get("allocatable")).get("count"))
        if count is not None and count < 0:
            problems.append(
                invalid(f"{at}.allocatable.count", count, "must be greater than or equal to 0")
            )
        if name in names:
            problems.append(duplicate(f"{at}.name", name))
        names.add(name)
        keys: set[str] = set()
        for raw_key in as_list(driver.get("topologyKeys")):
            key = _text(raw_key)
            if not key:
                problems.append(required(at))
            if key in keys:
                problems.append(duplicate(at, key))
            keys.add(key)
            problems += [invalid(at, key, m) for m in label_key_problems(key)]
    return problems
