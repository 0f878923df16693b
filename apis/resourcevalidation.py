"""kube-apiserver's validation of dynamic resource allocation's kinds (`resource.k8s.io/v1`),
worded and ordered as kube v1.36 words and orders it (pkg/apis/resource/validation), on a
decoded document after the API server's defaults (an `exactly` request's allocationMode is
ExactCount and its count 1 when not given; a toleration's operator is Equal):

* DeviceClass: each selector has `cel` (`spec.selectors[0].cel: Required value`), each config
  an `opaque` with a driver and JSON object parameters, `extendedResourceName` an extended
  resource name; at most 32 selectors and 32 configs;
* ResourceClaim (and the claim of a ResourceClaimTemplate, under `spec.spec`, after the
  template's `spec.metadata`: labels, annotations' keys, no other field): at most 32 requests,
  each named by a DNS label, unique, with exactly one of `exactly` or `firstAvailable` (at most
  8 subrequests, unique names); a device class name (required, a DNS subdomain);
  allocationMode ExactCount (count above zero) or All (no count); tolerations; constraints
  naming requests of the claim (`req` or `req/sub`)
  and a fully qualified `matchAttribute` (`domain/name`); configs naming requests;
* ResourceSlice: `apis.resourceslicevalidation`.

CEL compile errors of the selectors are not checked here (they need the CEL environment of
`placement.cel.devices`), nor `adminAccess`, which kube-apiserver allows only in a namespace
labelled `resource.kubernetes.io/admin-access: "true"` (no namespace is at hand here). Each
problem is a FieldProblem as `apis.fieldrules` builds them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from apis.csivalidation import driver_name_problems
from apis.errors import FieldProblem
from apis.fielderrors import label_key_problems, label_value_problems
from apis.fieldrules import (
    as_dict,
    as_int,
    as_list,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from apis.names import dns1123_label_problems, dns1123_subdomain_problems

__all__ = [
    "MAX_REQUESTS",
    "TAINT_EFFECTS",
    "claim_spec_problems",
    "device_class_problems",
    "qualified_name_problems",
    "reference_problems",
    "request_names",
    "resource_problems",
    "toleration_problems",
    "too_many",
]

MAX_REQUESTS = 32
"""DeviceRequestsMaxSize: requests of a claim, and the request names of a constraint or config."""
_MAX_SELECTORS = 32
_MAX_CONSTRAINTS = 32
_MAX_CONFIGS = 32
_MAX_SUBREQUESTS = 8
_MAX_ID = 32
_MAX_PARAMETERS = 10 * 1024
_MODES = ("All", "ExactCount")
_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
    "validation is '[A-Za-z_][A-Za-z0-9_]*')"
)
_REQUEST_REF = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)


def too_many(path: str, count: int, limit: int) -> FieldProblem:
    return FieldProblem(path, f"Too many: {count}: must have at most {limit} items")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _label(value: str, path: str) -> list[FieldProblem]:
    return [invalid(path, value, m) for m in dns1123_label_problems(value)]


def _identifier_problems(name: str, path: str) -> list[FieldProblem]:
    problems = []
    if len(name) > _MAX_ID:
        problems.append(FieldProblem(path, f"Too long: may not be more than {_MAX_ID} bytes"))
    if not _C_IDENTIFIER.fullmatch(name):
        problems.append(invalid(path, name, _C_IDENTIFIER_MSG))
    return problems


def qualified_name_problems(name: str, path: str) -> list[FieldProblem]:
    """An attribute or capacity name: a C identifier, or `domain/identifier` (the domain as a
    driver name). As kube v1.36, a name with more than one slash is not refused."""
    parts = name.split("/")
    if len(parts) == 1:
        return _identifier_problems(name, path)
    if len(parts) != 2:
        return []
    domain, ident = parts
    if domain:
        problems = driver_name_problems(domain, path)
    else:
        problems = [invalid(path, "", "the domain must not be empty")]
    if ident:
        return problems + _identifier_problems(ident, path)
    return [*problems, invalid(path, "", "the name must not be empty")]


def _fully_qualified_problems(name: str, path: str) -> list[FieldProblem]:
    problems = qualified_name_problems(name, path)
    if "/" not in name:
        detail = "a fully qualified name must be a domain and a name separated by a slash"
        problems.append(invalid(path, name, detail))
    return problems


def toleration_problems(toleration: dict[str, Any], path: str) -> list[FieldProblem]:
    """A request's toleration of device taints."""
    problems = []
    key = _text(toleration.get("key"))
    if key:
        problems += [invalid(f"{path}.key", key, m) for m in label_key_problems(key)]
    operator = _text(toleration.get("operator")) or "Equal"  # kube's default
    value = _text(toleration.get("value"))
    if operator == "Exists":
        if value:
            problems.append(invalid(f"{path}.value", value, "must be empty for operator `Exists`"))
    elif operator == "Equal":
        problems += [invalid(f"{path}.value", value, m) for m in label_value_problems(value)]
    else:
        problems.append(not_supported(f"{path}.operator", operator, _OPERATORS))
    effect = _text(toleration.get("effect"))
    if effect and effect not in TAINT_EFFECTS:
        problems.append(not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return problems


def _selectors_problems(selectors: list[Any], path: str) -> list[FieldProblem]:
    if len(selectors) > _MAX_SELECTORS:
        return [too_many(path, len(selectors), _MAX_SELECTORS)]
    return [
        required(f"{path}[{i}].cel")
        for i, selector in enumerate(selectors)
        if not isinstance(as_dict(selector).get("cel"), dict)
    ]


def _class_name_problems(name: str, path: str) -> list[FieldProblem]:
    if not name:
        return [required(path)]
    return [invalid(path, name, m) for m in dns1123_subdomain_problems(name)]


def _device_request_problems(request: dict[str, Any], path: str) -> list[FieldProblem]:
    """What `exactly` and a subrequest share: class, selectors, mode and count, tolerations."""
    problems = _class_name_problems(
        _text(request.get("deviceClassName")), f"{path}.deviceClassName"
    )
    problems += _selectors_problems(as_list(request.get("selectors")), f"{path}.selectors")
    mode = _text(request.get("allocationMode")) or "ExactCount"  # kube's default
    count = as_int(request.get("count")) or 0
    if mode == "All":
        if count != 0:
            detail = "must not be specified when allocationMode is 'All'"
            problems.append(invalid(f"{path}.count", count, detail))
    elif mode == "ExactCount":
        if count < 0:  # unset (0) is defaulted to 1
            problems.append(invalid(f"{path}.count", count, "must be greater than zero"))
    else:
        problems.append(not_supported(f"{path}.allocationMode", mode, _MODES))
    for i, toleration in enumerate(as_list(request.get("tolerations"))):
        problems += toleration_problems(as_dict(toleration), f"{path}.tolerations[{i}]")
    return problems


def _duplicates(names: list[str], path: str) -> list[FieldProblem]:
    seen: set[str] = set()
    problems = []
    for i, name in enumerate(names):
        if name in seen:
            problems.append(duplicate(f"{path}[{i}]", name))
        seen.add(name)
    return problems


def _request_problems(request: dict[str, Any], path: str) -> list[FieldProblem]:
    problems = _label(_text(request.get("name")), f"{path}.name")
    first = as_list(request.get("firstAvailable"))
    exactly = request.get("exactly")
    if first and isinstance(exactly, dict):
        detail = (
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
        )
        problems.append(invalid(path, None, detail))
    elif first:
        at = f"{path}.firstAvailable"
        if len(first) > _MAX_SUBREQUESTS:
            return [*problems, too_many(at, len(first), _MAX_SUBREQUESTS)]
        for i, raw in enumerate(first):
            sub = as_dict(raw)
            problems += _label(_text(sub.get("name")), f"{at}[{i}].name")
            problems += _device_request_problems(sub, f"{at}[{i}]")
        problems += _duplicates([_text(as_dict(s).get("name")) for s in first], at)
    elif isinstance(exactly, dict):
        problems += _device_request_problems(exactly, f"{path}.exactly")
    else:
        detail = "exactly one of `exactly` or `firstAvailable` is required"
        problems.append(required(path, detail))
    return problems


def request_names(requests: list[Any]) -> dict[str, set[str]]:
    """A claim's request names, each with the names of its subrequests."""
    names: dict[str, set[str]] = {}
    for raw in requests:
        request = as_dict(raw)
        subs = as_list(request.get("firstAvailable"))
        names[_text(request.get("name"))] = {_text(as_dict(s).get("name")) for s in subs}
    return names


def reference_problems(ref: str, path: str, names: dict[str, set[str]]) -> list[FieldProblem]:
    """One request name a constraint, config or allocation result gives: `request` or
    `request/subrequest` of the claim (`names`: `request_names`)."""
    segments = ref.split("/")
    if len(segments) > 2:
        return [invalid(path, ref, _REQUEST_REF)]
    problems = []
    for segment in segments:
        problems += _label(segment, path)
    request, _, sub = ref.partition("/")
    if request not in names or (sub and sub not in names[request]):
        problems.append(invalid(path, ref, _REQUEST_REF))
    return problems


def _references_problems(
    refs: list[Any], path: str, names: dict[str, set[str]]
) -> list[FieldProblem]:
    if len(refs) > MAX_REQUESTS:
        return [too_many(path, len(refs), MAX_REQUESTS)]
    problems = []
    for i, raw in enumerate(refs):
        problems += reference_problems(_text(raw), f"{path}[{i}]", names)
    return problems + _duplicates([_text(r) for r in refs], path)


def _parameters_problems(config: dict[str, Any], path: str) -> list[FieldProblem]:
    if "parameters" not in config or config["parameters"] is None:
        return [required(path)]
    raw = json.dumps(config["parameters"], separators=(",", ":"))
    if len(raw) > _MAX_PARAMETERS:
        return [FieldProblem(path, f"Too long: may not be more than {_MAX_PARAMETERS} bytes")]
    if not isinstance(config["parameters"], dict):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def _config_problems(config: dict[str, Any], path: str) -> list[FieldProblem]:
    opaque = config.get("opaque")
    if not isinstance(opaque, dict):
        return [required(f"{path}.opaque")]
    problems = driver_name_problems(_text(opaque.get("driver")), f"{path}.opaque.driver")
    return problems + _parameters_problems(opaque, f"{path}.opaque.parameters")


def _configs_problems(
    configs: list[Any], path: str, names: dict[str, set[str]] | None
) -> list[FieldProblem]:
    if len(configs) > _MAX_CONFIGS:
        return [too_many(path, len(configs), _MAX_CONFIGS)]
    problems = []
    for i, raw in enumerate(configs):
        config, at = as_dict(raw), f"{path}[{i}]"
        if names is not None:
            problems += _references_problems(
                as_list(config.get("requests")), f"{at}.requests", names
            )
        problems += _config_problems(config, at)
    return problems


def _constraint_problems(
    constraint: dict[str, Any], path: str, names: dict[str, set[str]]
) -> list[FieldProblem]:
    problems = _references_problems(as_list(constraint.get("requests")), f"{path}.requests", names)
    for field in ("matchAttribute", "distinctAttribute"):
        if isinstance(constraint.get(field), str):
            return problems + _fully_qualified_problems(constraint[field], f"{path}.{field}")
    detail = (
        'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields '
        "are set"
    )
    return [*problems, required(path, detail)]


def claim_spec_problems(spec: dict[str, Any], path: str) -> list[FieldProblem]:
    """A ResourceClaimSpec under `path` (`spec`, or `spec.spec` in a template)."""
    devices = as_dict(spec.get("devices"))
    at = f"{path}.devices"
    requests = as_list(devices.get("requests"))
    names = request_names(requests)
    problems: list[FieldProblem] = []
    if len(requests) > MAX_REQUESTS:
        problems.append(too_many(f"{at}.requests", len(requests), MAX_REQUESTS))
    else:
        for i, request in enumerate(requests):
            problems += _request_problems(as_dict(request), f"{at}.requests[{i}]")
        listed = [_text(as_dict(r).get("name")) for r in requests]
        problems += _duplicates(listed, f"{at}.requests")
    constraints = as_list(devices.get("constraints"))
    if len(constraints) > _MAX_CONSTRAINTS:
        problems.append(too_many(f"{at}.constraints", len(constraints), _MAX_CONSTRAINTS))
    else:
        for i, constraint in enumerate(constraints):
            problems += _constraint_problems(as_dict(constraint), f"{at}.constraints[{i}]", names)
    return problems + _configs_problems(as_list(devices.get("config")), f"{at}.config", names)


def _is_extended_resource_name(name: str) -> bool:
    domain, slash, _ = name.partition("/")
    if not slash or domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return False  # a native resource
    return not name.startswith("requests.") and not label_key_problems("requests." + name)


def device_class_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    """A DeviceClass's `spec`."""
    problems = _selectors_problems(as_list(spec.get("selectors")), "spec.selectors")
    problems += _configs_problems(as_list(spec.get("config")), "spec.config", None)
    name = spec.get("extendedResourceName")
    if isinstance(name, str) and not _is_extended_resource_name(name):
        detail = "must be a valid extended resource name"
        problems.append(invalid("spec.extendedResourceName", name, detail))
    return problems


_TEMPLATE_META_FORBIDDEN = (
    *("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion"),
    *("generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"),
    *("ownerReferences", "finalizers", "managedFields"),
)


def _template_meta_problems(meta: dict[str, Any], path: str) -> list[FieldProblem]:
    """The metadata of the claims a template makes (kube's ValidateTemplateObjectMeta): its
    annotations' keys, its labels, and no other field (`Forbidden: cannot be set`)."""
    problems = []
    for key in as_dict(meta.get("annotations")):
        messages = label_key_problems(str(key).lower())
        problems += [invalid(f"{path}.annotations", key, m) for m in messages]
    for key, value in as_dict(meta.get("labels")).items():
        problems += [invalid(f"{path}.labels", key, m) for m in label_key_problems(str(key))]
        messages = label_value_problems(_text(value))
        problems += [invalid(f"{path}.labels", value, m) for m in messages]
    for field in _TEMPLATE_META_FORBIDDEN:
        if meta.get(field) not in (None, "", [], {}, 0):
            problems.append(forbidden(f"{path}.{field}", "cannot be set"))
    return problems


def resource_problems(doc: dict[str, Any]) -> list[FieldProblem]:
    """What kube-apiserver refuses in a decoded DeviceClass, ResourceClaim or
    ResourceClaimTemplate, in kube's order (a ResourceSlice: `apis.resourceslicevalidation`)."""
    kind, spec = doc.get("kind"), as_dict(doc.get("spec"))
    if kind == "DeviceClass":
        return device_class_problems(spec)
    if kind == "ResourceClaim":
        return claim_spec_problems(spec, "spec")
    if kind == "ResourceClaimTemplate":
        problems = _template_meta_problems(as_dict(spec.get("metadata")), "spec.metadata")
        return problems + claim_spec_problems(as_dict(spec.get("spec")), "spec.spec")
    return []
