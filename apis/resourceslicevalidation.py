"""kube-apiserver's validation of a `resource.k8s.io/v1` ResourceSlice, worded and ordered as
kube v1.36 words and orders it (pkg/apis/resource/validation):

* `spec.driver` a driver name (as a CSI driver's: set, at most 63 bytes, a DNS subdomain);
* `spec.pool`: a name (DNS subdomains separated by slashes, at most 253 bytes), a
  `resourceSliceCount` above zero, a `generation` not negative;
* exactly one of `nodeName`, `nodeSelector` (exactly one term), `allNodes` (true) or
  `perDeviceNodeSelection` (true), each device then choosing its own nodes the same way;
* not both `sharedCounters` and `devices`; at most 128 devices (64 when a device has taints,
  consumes counters or lists attribute values), names DNS labels and unique;
* per device: at most 32 attributes and capacities together; attribute and capacity names
  qualified names (`apis.resourcevalidation.qualified_name_problems`, reported on the map);
  exactly one value per attribute, strings and versions at most 64 bytes, versions semver;
  taints (key, value, effect); the counter sets it consumes (at most 2, named, with 1 to 32
  counters, each set once);
  binding conditions and binding failure conditions together;
* `spec.sharedCounters`: at most 8, named by DNS labels, with 1 to 32 counters, each name once.

Attributes and capacities are Go maps in kube, checked in no fixed order: here their values in
the document's order, then their names.
"""

from __future__ import annotations

import re
from typing import Any

from apis.csivalidation import driver_name_problems
from apis.errors import FieldProblem
from apis.fielderrors import label_key_problems, label_value_problems
from apis.fieldrules import as_dict, as_int, as_list, duplicate, forbidden, invalid, required
from apis.fieldrules import not_supported as _not_supported
from apis.names import dns1123_label_problems, dns1123_subdomain_problems
from apis.podspecvalidation import node_selector_problems
from apis.resourcevalidation import TAINT_EFFECTS, qualified_name_problems, too_many

__all__ = [
    "MAX_DEVICES",
    "MAX_DEVICES_WITH_ADVANCED_FEATURES",
    "pool_name_problems",
    "selector_problems",
    "slice_problems",
]

MAX_DEVICES = 128
MAX_DEVICES_WITH_ADVANCED_FEATURES = 64
_MAX_POOL_NAME = 253
_MAX_ATTRIBUTES_AND_CAPACITIES = 32
_MAX_VALUE = 64
_MAX_COUNTER_SETS = 8
_MAX_CONSUMED_SETS = 2
_MAX_COUNTERS = 32
_MAX_KEY_SHOWN = 63 + 1 + 32  # a domain, a slash and an identifier
_NODE_CHOICES = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"
_DEVICE_CHOICES = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)
_SINGLE_VALUES = ("int", "bool", "string", "version")
_LIST_VALUES = ("ints", "bools", "strings", "versions")
_GO_ATTRIBUTE_FIELDS = (
    *("IntValue", "BoolValue", "StringValue", "VersionValue"),
    *("IntValues", "BoolValues", "StringValues", "VersionValues"),
)
_NUMERIC = r"(0|[1-9]\d*)"
_PRERELEASE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
_SEMVER = re.compile(
    rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRERELEASE}(\.{_PRERELEASE})*)?"
    rf"(\+{_BUILD}(\.{_BUILD})*)?"
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _too_long(path: str, limit: int) -> FieldProblem:
    return FieldProblem(path, f"Too long: may not be more than {limit} bytes")


def pool_name_problems(name: str, path: str) -> list[FieldProblem]:
    """A pool's name: set, at most 253 bytes, DNS subdomains separated by slashes."""
    if not name:
        return [required(path)]
    problems = []
    if len(name) > _MAX_POOL_NAME:
        problems.append(_too_long(path, _MAX_POOL_NAME))
    for part in name.split("/"):
        problems += [invalid(path, part, m) for m in dns1123_subdomain_problems(part)]
    return problems


def _pool_problems(pool: dict[str, Any]) -> list[FieldProblem]:
    problems = pool_name_problems(_text(pool.get("name")), "spec.pool.name")
    count = as_int(pool.get("resourceSliceCount")) or 0
    if count <= 0:
        problems.append(invalid("spec.pool.resourceSliceCount", count, "must be greater than zero"))
    generation = as_int(pool.get("generation")) or 0
    if generation < 0:
        detail = "must be greater than or equal to zero"
        problems.append(invalid("spec.pool.generation", generation, detail))
    return problems


def _go_terms(terms: Any) -> Any:
    """Node selector terms as Go prints the internal structs (`{"MatchExpressions":...}`)."""
    if not isinstance(terms, list):
        return None

    def requirements(raw: Any) -> Any:
        if not isinstance(raw, list):
            return None
        return [
            {"Key": r.get("key", ""), "Operator": r.get("operator", ""), "Values": r.get("values")}
            for r in map(as_dict, raw)
        ]

    return [
        {
            "MatchExpressions": requirements(t.get("matchExpressions")),
            "MatchFields": requirements(t.get("matchFields")),
        }
        for t in map(as_dict, terms)
    ]


def _field_requirement_problems(rq: dict[str, Any], path: str) -> list[FieldProblem]:
    """A `matchFields` requirement: only `metadata.name`, In or NotIn one value."""
    operator, problems = rq.get("operator"), []
    if operator in ("In", "NotIn"):
        if len(as_list(rq.get("values"))) != 1:
            detail = (
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            )
            problems.append(required(f"{path}.values", detail))
    else:
        problems.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    if rq.get("key") != "metadata.name":
        problems.append(invalid(f"{path}.key", rq.get("key"), "not a valid field selector key"))
    return problems


def selector_problems(selector: dict[str, Any], path: str) -> list[FieldProblem]:
    """A node selector (kube's ValidateNodeSelector): its terms' expressions and fields."""
    problems = node_selector_problems(selector, path)
    for i, term in enumerate(as_list(selector.get("nodeSelectorTerms"))):
        for j, rq in enumerate(as_list(as_dict(term).get("matchFields"))):
            at = f"{path}.nodeSelectorTerms[{i}].matchFields[{j}]"
            problems += _field_requirement_problems(as_dict(rq), at)
    return problems


def _node_name_problems(name: str, path: str) -> list[FieldProblem]:
    return [invalid(path, name, m) for m in dns1123_subdomain_problems(name)]


def _flag(doc: dict[str, Any], field: str, path: str, chosen: list[str]) -> list[FieldProblem]:
    """`allNodes` or `perDeviceNodeSelection`: unset, or true (chosen)."""
    value = doc.get(field)
    if value is None:
        return []
    if value is True:
        chosen.append(f"`{field}`")
        return []
    return [invalid(f"{path}.{field}", value, "must be either unset or set to true")]


def _node_choice_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    problems: list[FieldProblem] = []
    chosen: list[str] = []
    node = spec.get("nodeName")
    if isinstance(node, str):
        if node:
            chosen.append("`nodeName`")
            problems += _node_name_problems(node, "spec.nodeName")
        else:
            detail = "must be either unset or set to a non-empty string"
            problems.append(invalid("spec.nodeName", "", detail))
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        chosen.append("`nodeSelector`")
        problems += selector_problems(selector, "spec.nodeSelector")
        terms = selector.get("nodeSelectorTerms")
        if len(as_list(terms)) != 1:
            detail = "must have exactly one node selector term"
            at = "spec.nodeSelector.nodeSelectorTerms"
            problems.append(invalid(at, _go_terms(terms), detail))
    problems += _flag(spec, "allNodes", "spec", chosen)
    problems += _flag(spec, "perDeviceNodeSelection", "spec", chosen)
    if not chosen:
        problems.append(required("spec", f"{_NODE_CHOICES} is required"))
    elif len(chosen) > 1:
        detail = f"{_NODE_CHOICES} is required, but multiple fields are set"
        problems.append(invalid("spec", "{" + ", ".join(chosen) + "}", detail))
    return problems


def _key_shown(key: str) -> str:
    """A map key in a field path, cut in the middle when long (as kube does)."""
    if len(key) <= _MAX_KEY_SHOWN:
        return key
    remaining = _MAX_KEY_SHOWN - 3
    return key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2 :]


def _attribute_problems(attribute: dict[str, Any], path: str) -> list[FieldProblem]:
    problems, found = [], 0
    for field in (*_SINGLE_VALUES, *_LIST_VALUES):
        value = attribute.get(field)
        if value is None:
            continue
        found += 1
        if field in _LIST_VALUES and not value:
            problems.append(invalid(f"{path}.{field}", value, "must not be empty if specified"))
        if field == "version" and isinstance(value, str) and not _SEMVER.fullmatch(value):
            detail = "must be a string compatible with semver.org spec 2.0.0"
            problems.append(invalid(f"{path}.version", value, detail))
        if field in ("string", "version") and len(_text(value).encode()) > _MAX_VALUE:
            problems.append(_too_long(f"{path}.{field}", _MAX_VALUE))
    if found == 0:
        problems.append(invalid(path, "", "exactly one value must be specified"))
    elif found > 1:
        fields = (*_SINGLE_VALUES, *_LIST_VALUES)
        shown = {go: attribute.get(f) for go, f in zip(_GO_ATTRIBUTE_FIELDS, fields, strict=True)}
        problems.append(invalid(path, shown, "exactly one value must be specified"))
    return problems


def _taint_problems(taint: dict[str, Any], path: str) -> list[FieldProblem]:
    key, value = _text(taint.get("key")), _text(taint.get("value"))
    problems = [invalid(f"{path}.key", key, m) for m in label_key_problems(key)]
    if value:
        problems += [invalid(f"{path}.value", value, m) for m in label_value_problems(value)]
    effect = _text(taint.get("effect"))
    if not effect:
        problems.append(required(f"{path}.effect"))
    elif effect not in TAINT_EFFECTS:
        problems.append(_not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return problems


def _binding_problems(device: dict[str, Any], path: str) -> list[FieldProblem]:
    conditions = device.get("bindingConditions")
    failures = device.get("bindingFailureConditions")
    problems = []
    for field, items in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        for i, item in enumerate(as_list(items)):
            at = f"{path}.{field}[{i}]"
            problems += [invalid(at, item, m) for m in label_key_problems(_text(item))]
    if not conditions and failures:
        detail = "bindingConditions are required to use bindingFailureConditions"
        problems.append(invalid(f"{path}.bindingConditions", conditions, detail))
    if not failures and conditions:
        detail = "bindingFailureConditions are required to use bindingConditions"
        problems.append(invalid(f"{path}.bindingFailureConditions", failures, detail))
    return problems


def _device_nodes_problems(
    device: dict[str, Any], path: str, per_device: bool
) -> list[FieldProblem]:
    if not per_device:
        if any(device.get(f) is not None for f in ("nodeName", "nodeSelector", "allNodes")):
            detail = (
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
            )
            return [invalid(path, None, detail)]
        return []
    problems: list[FieldProblem] = []
    chosen: list[str] = []
    node = device.get("nodeName")
    if isinstance(node, str):
        if node:
            chosen.append("`nodeName`")
            problems += _node_name_problems(node, f"{path}.nodeName")
        else:
            problems.append(invalid(f"{path}.nodeName", "", "must not be empty"))
    selector = device.get("nodeSelector")
    if isinstance(selector, dict):
        chosen.append("`nodeSelector`")
        problems += selector_problems(selector, f"{path}.nodeSelector")
    problems += _flag(device, "allNodes", path, chosen)
    if not chosen:
        problems.append(required(path, _DEVICE_CHOICES))
    elif len(chosen) > 1:
        problems.append(invalid(path, "{" + ", ".join(chosen) + "}", _DEVICE_CHOICES))
    return problems


def _device_problems(device: dict[str, Any], path: str, per_device: bool) -> list[FieldProblem]:
    name = _text(device.get("name"))
    problems = [invalid(f"{path}.name", name, m) for m in dns1123_label_problems(name)]
    attributes, capacity = as_dict(device.get("attributes")), as_dict(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > _MAX_ATTRIBUTES_AND_CAPACITIES:
        limit = _MAX_ATTRIBUTES_AND_CAPACITIES
        detail = f"the total number of attributes and capacities must not exceed {limit}"
        problems.append(invalid(path, total, detail))
    for key, attribute in attributes.items():
        problems += _attribute_problems(as_dict(attribute), f"{path}.attributes[{_key_shown(key)}]")
    for key in attributes:
        problems += qualified_name_problems(str(key), f"{path}.attributes")
    multiple = device.get("allowMultipleAllocations") is True
    for key, value in capacity.items():
        problems += qualified_name_problems(str(key), f"{path}.capacity")
        if not multiple and as_dict(value).get("requestPolicy") is not None:
            at = f"{path}.capacity[{_key_shown(key)}].requestPolicy"
            problems.append(forbidden(at, "allowMultipleAllocations must be true"))
    for i, taint in enumerate(as_list(device.get("taints"))):
        problems += _taint_problems(as_dict(taint), f"{path}.taints[{i}]")
    consumed = as_list(device.get("consumesCounters"))
    at = f"{path}.consumesCounters"
    problems += _counters_problems(consumed, at, "counterSet", _MAX_CONSUMED_SETS)
    problems += _device_nodes_problems(device, path, per_device)
    return problems + _binding_problems(device, path)


def _counters_problems(sets: list[Any], path: str, field: str, limit: int) -> list[FieldProblem]:
    """A slice's `sharedCounters` (each named by `name`) or a device's `consumesCounters`
    (each naming a `counterSet`): at most `limit`, the name a DNS label, 1 to 32 counters
    named by DNS labels, no name twice."""
    if len(sets) > limit:
        return [too_many(path, len(sets), limit)]
    problems: list[FieldProblem] = []
    for i, raw in enumerate(sets):
        entry, at = as_dict(raw), f"{path}[{i}]"
        name = _text(entry.get(field))
        if not name:
            problems.append(required(f"{at}.{field}"))
        else:
            problems += [invalid(f"{at}.{field}", name, m) for m in dns1123_label_problems(name)]
        counters = as_dict(entry.get("counters"))
        if not counters:
            problems.append(required(f"{at}.counters"))
        elif len(counters) > _MAX_COUNTERS:
            problems.append(too_many(f"{at}.counters", len(counters), _MAX_COUNTERS))
            continue
        for key in counters:
            messages = dns1123_label_problems(str(key))
            problems += [invalid(f"{at}.counters", key, m) for m in messages]
    seen: set[str] = set()
    for i, raw in enumerate(sets):
        name = _text(as_dict(raw).get(field))
        if name in seen:
            problems.append(duplicate(f"{path}[{i}]", name))
        seen.add(name)
    return problems


def _advanced(devices: list[Any]) -> bool:
    """Whether a device uses taints, counters or list attributes (a lower device limit)."""
    for raw in devices:
        device = as_dict(raw)
        if device.get("taints") or device.get("consumesCounters"):
            return True
        for attribute in as_dict(device.get("attributes")).values():
            if any(as_dict(attribute).get(f) is not None for f in _LIST_VALUES):
                return True
    return False


def slice_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    """A ResourceSlice's `spec` (see the module docstring)."""
    problems = driver_name_problems(_text(spec.get("driver")), "spec.driver")
    problems += _pool_problems(as_dict(spec.get("pool")))
    problems += _node_choice_problems(spec)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        detail = "only one of `sharedCounters` or `devices` is allowed"
        problems.append(invalid("spec", "", detail))
    devices = as_list(spec.get("devices"))
    limit = MAX_DEVICES_WITH_ADVANCED_FEATURES if _advanced(devices) else MAX_DEVICES
    if len(devices) > limit:
        return [*problems, too_many("spec.devices", len(devices), limit)]
    per_device = spec.get("perDeviceNodeSelection") is True
    for i, device in enumerate(devices):
        problems += _device_problems(as_dict(device), f"spec.devices[{i}]", per_device)
    seen: set[str] = set()
    for i, device in enumerate(devices):
        name = _text(as_dict(device).get("name"))
        if name in seen:
            problems.append(duplicate(f"spec.devices[{i}]", name))
        seen.add(name)
    shared = as_list(spec.get("sharedCounters"))
    return problems + _counters_problems(shared, "spec.sharedCounters", "name", _MAX_COUNTER_SETS)
