"""kube-apiserver's validation of the pod-level kinds, on the fields the pod scheduler and the
webhook read, worded as Kubernetes' `field.ErrorList` words it (pkg/apis/core/validation,
pkg/apis/scheduling/validation, apimachinery's ValidateAnnotations):

* every kind: `metadata.annotations: Too long: must have at most 262144 bytes` (keys and
  values together);
* Pod: `spec.containers: Required value`; each container's (and init container's) limits and
  requests at least 0 (`...resources.requests[cpu]: Invalid value: "-1": must be greater than
  or equal to 0`) and requests at most the limit (`...resources.requests: Invalid value: "2":
  must be less than or equal to cpu limit of 1`); an extended resource or hugepages needs a
  limit (`...resources.limits: Required value: Limit must be set for non overcommitable
  resources`) and a request equal to it (`must be equal to nvidia.com/gpu limit of 2`);
  `spec.nodeSelector` keys and values; node affinity requirements (values required by
  In/NotIn, forbidden by Exists/DoesNotExist, one for Gt/Lt; known operators; label keys);
  tolerations (operator, effect, key, value);
* Node: `status.capacity.<name>` and `status.allocatable.<name>` at least 0;
* PriorityClass: a value above HIGHEST_USER_PRIORITY, a `system-` name that is not one of the
  two built-in classes with their values;
* Lease: `spec.leaseDurationSeconds` above 0, `spec.leaseTransitions` at least 0;
* ConfigMap: the keys of `data` and `binaryData` (`data[a b]: Invalid value: "a b": a valid
  config key must consist of ...`), a key in both;
* CSINode: `apis.csivalidation` (driver names, node IDs, attach counts, topology keys);
* CSIDriver, CSIStorageCapacity, VolumeAttachment: `apis.csiobjectsvalidation`;
* Service and ReplicationController: `apis.services` (ports, selectors);
* PodDisruptionBudget: `apis.policyvalidation` (minAvailable / maxUnavailable, selector);
* DeviceClass, ResourceClaim, ResourceClaimTemplate: `apis.resourcevalidation`; ResourceSlice:
  `apis.resourceslicevalidation`.

As kube, a Gt/Lt value that is not an integer is not refused: such a requirement matches no
node. PodGroup and ElasticQuota are checked against their CRDs (`apis.crdvalidation`).

Each problem is a FieldProblem whose message is the error body (`Required value`, `Invalid
value: ...`); `cause_reason` gives the Status cause reason of a body.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from apis.csiobjectsvalidation import (
    capacity_problems,
    csidriver_problems,
    volume_attachment_problems,
)
from apis.csivalidation import csinode_problems
from apis.errors import FieldProblem
from apis.fielderrors import label_key_problems, label_value_problems
from apis.fieldrules import as_dict as _dict
from apis.fieldrules import as_list as _list
from apis.fieldrules import forbidden as _forbidden
from apis.fieldrules import invalid as _invalid
from apis.fieldrules import not_supported as _not_supported
from apis.fieldrules import required as _required
from apis.podclaimvalidation import container_claim_problems, pod_claim_names, pod_claim_problems
from apis.podspecvalidation import (
    host_port_problems,
    labels_problems,
    node_affinity_problems,
    pod_affinity_problems,
    port_problems,
    spread_problems,
)
from apis.policyvalidation import budget_problems
from apis.quantity import Quantity, QuantityError
from apis.resourceslicevalidation import slice_problems
from apis.resourcevalidation import resource_problems
from apis.services import replication_controller_problems, service_problems
from apis.storagevalidation import claim_problems, storage_class_problems, volume_problems

__all__ = [
    "HIGHEST_USER_PRIORITY",
    "MAX_OBJECT_BYTES",
    "SYSTEM_PRIORITY_CLASSES",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "cause_reason",
    "kube_problems",
    "node_affinity_problems",
]

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""apimachinery's TotalAnnotationSizeLimitB."""
MAX_OBJECT_BYTES = 1024 * 1024 * 3 // 2
"""etcd's default `--max-request-bytes`: a larger object is refused by storage (as a 500 with
etcd's `etcdserver: request is too large`), under kube-apiserver's 3 MiB body limit."""
HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}

_NEGATIVE = "must be greater than or equal to 0"
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_REASONS = {
    "Required value": "FieldValueRequired",
    "Forbidden": "FieldValueForbidden",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
    "Unsupported value": "FieldValueNotSupported",
    "Invalid value": "FieldValueInvalid",
}


def cause_reason(body: str) -> str:
    """The `details.causes[].reason` of an error body (`FieldValueRequired`...); a type error
    of a CRD's schema (`Invalid value: "string": x in body must be of type integer: "string"`)
    is FieldValueTypeInvalid."""
    if body.startswith("Invalid value") and " in body must be of type " in body:
        return "FieldValueTypeInvalid"
    for prefix, reason in _REASONS.items():
        if body.startswith(prefix):
            return reason
    return "FieldValueInvalid"


def kube_problems(doc: Any) -> list[FieldProblem]:
    """What kube-apiserver refuses in this decoded object of a pod-level kind (none for other
    kinds beyond the annotations' size), in the order kube lists them."""
    if not isinstance(doc, dict):
        return []
    problems = _annotation_problems(_dict(doc.get("metadata")))
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if api_version == "v1" and kind == "Pod":
        problems += _pod_problems(_dict(doc.get("spec")))
    elif api_version == "v1" and kind == "Node":
        problems += _node_problems(_dict(doc.get("status")))
    elif api_version == "scheduling.k8s.io/v1" and kind == "PriorityClass":
        problems += _priority_class_problems(doc)
    elif api_version == "v1" and kind == "ConfigMap":
        problems += _config_map_problems(doc)
    elif api_version == "coordination.k8s.io/v1" and kind == "Lease":
        problems += _lease_problems(_dict(doc.get("spec")))
    elif api_version == "v1" and kind == "PersistentVolumeClaim":
        problems += claim_problems(_dict(doc.get("spec")))
    elif api_version == "v1" and kind == "PersistentVolume":
        problems += volume_problems(_dict(doc.get("spec")))
    elif api_version == "storage.k8s.io/v1" and kind == "StorageClass":
        problems += storage_class_problems(doc)
    elif api_version == "storage.k8s.io/v1" and kind == "CSINode":
        problems += csinode_problems(_dict(doc.get("spec")))
    elif api_version == "storage.k8s.io/v1" and kind == "CSIDriver":
        problems += csidriver_problems(_dict(doc.get("spec")))
    elif api_version == "storage.k8s.io/v1" and kind == "CSIStorageCapacity":
        problems += capacity_problems(doc)
    elif api_version == "storage.k8s.io/v1" and kind == "VolumeAttachment":
        problems += volume_attachment_problems(_dict(doc.get("spec")))
    elif api_version == "policy/v1" and kind == "PodDisruptionBudget":
        problems += budget_problems(doc)
    elif api_version == "v1" and kind == "Service":
        problems += service_problems(_dict(doc.get("spec")))
    elif api_version == "v1" and kind == "ReplicationController":
        problems += replication_controller_problems(_dict(doc.get("spec")))
    elif api_version == "resource.k8s.io/v1" and kind == "ResourceSlice":
        problems += slice_problems(_dict(doc.get("spec")))
    elif api_version == "resource.k8s.io/v1":
        problems += resource_problems(doc)
    return problems


_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_CONFIG_KEY_WORDS = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)


def config_key_problems(key: str) -> list[str]:
    """Why `key` is no key of a ConfigMap's data (kube's IsConfigMapKey), in its words."""
    out = []
    if len(key) > 253:
        out.append("must be no more than 253 characters")
    if not _CONFIG_KEY.fullmatch(key):
        out.append(_CONFIG_KEY_WORDS)
    if key in (".", ".."):
        out.append(f"must not be '{key}'")
    elif key.startswith(".."):
        out.append("must not start with '..'")
    return out


def _config_map_problems(doc: dict[str, Any]) -> list[FieldProblem]:
    problems = []
    data, binary = _dict(doc.get("data")), _dict(doc.get("binaryData"))
    for field, keys in (("data", data), ("binaryData", binary)):
        for key in keys:
            path = f"{field}[{key}]"
            problems += [_invalid(path, key, msg) for msg in config_key_problems(str(key))]
            if field == "binaryData" and key in data:
                problems.append(_invalid(path, key, "duplicate of key present in data"))
    return problems


def _annotation_problems(meta: dict[str, Any]) -> list[FieldProblem]:
    total = sum(
        len(str(k).encode()) + len(str(v).encode())
        for k, v in _dict(meta.get("annotations")).items()
    )
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        detail = f"must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"
        return [FieldProblem("metadata.annotations", f"Too long: {detail}")]
    return []


def _quantity(raw: Any) -> Quantity | None:
    if raw is None:
        return None  # no limit set: what a parse of None would say, without raising
    try:
        return Quantity.parse(raw)
    except QuantityError:
        return None  # the model reports it


def _nonnegative(resources: Mapping[str, Any], path: str, keyed: bool) -> list[FieldProblem]:
    problems = []
    for name in sorted(resources):
        quantity = _quantity(resources[name])
        if quantity is not None and quantity.value.numerator < 0:  # an int compare
            where = f"{path}[{name}]" if keyed else f"{path}.{name}"
            problems.append(_invalid(where, quantity.canonical(), _NEGATIVE))
    return problems


def _resource_problems(resources: dict[str, Any], path: str) -> list[FieldProblem]:
    limits, requests = _dict(resources.get("limits")), _dict(resources.get("requests"))
    problems = _nonnegative(limits, f"{path}.limits", keyed=True)
    problems += _nonnegative(requests, f"{path}.requests", keyed=True)
    for name in sorted(requests):
        request, limit = _quantity(requests[name]), _quantity(limits.get(name))
        exact = not overcommit_allowed(name)
        if exact and name not in limits:
            problems.append(_required(f"{path}.limits", _NO_LIMIT))
        if request is None or limit is None:
            continue
        if exact and request.value != limit.value:
            detail = f"must be equal to {name} limit of {limit.canonical()}"
            problems.append(_invalid(f"{path}.requests", request.canonical(), detail))
        elif request.value > limit.value:
            detail = f"must be less than or equal to {name} limit of {limit.canonical()}"
            problems.append(_invalid(f"{path}.requests", request.canonical(), detail))
    return problems


_NO_LIMIT = "Limit must be set for non overcommitable resources"


def overcommit_allowed(name: str) -> bool:
    """Whether a container's request of resource `name` may be below its limit: kube's native
    resources (no domain, or a kubernetes.io one) but hugepages. Extended resources
    (`nvidia.com/gpu`) and hugepages need a limit, and a request equal to it."""
    domain, _, _ = name.rpartition("/")
    native = domain == "" or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    return native and not name.startswith("hugepages-")


def _pod_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    claims = _list(spec.get("resourceClaims"))
    problems = pod_claim_problems(claims)  # kube checks them before the containers
    names = pod_claim_names(claims)
    containers = _list(spec.get("containers"))
    if not containers:
        problems.append(_required("spec.containers"))
    for i, container in enumerate(containers):
        problems += _container_problems(_dict(container), f"spec.containers[{i}]", names)
    problems += host_port_problems(containers, "spec.containers")
    for i, container in enumerate(_list(spec.get("initContainers"))):
        problems += _container_problems(_dict(container), f"spec.initContainers[{i}]", names)
        # each init container on its own (they run one at a time), at kube's index 0
        problems += host_port_problems([container], "spec.initContainers")
    problems += labels_problems(_dict(spec.get("nodeSelector")), "spec.nodeSelector")
    affinity = _dict(spec.get("affinity"))
    node_affinity = _dict(affinity.get("nodeAffinity"))
    problems += node_affinity_problems(node_affinity, "spec.affinity.nodeAffinity", pod=True)
    for field in ("podAffinity", "podAntiAffinity"):
        problems += pod_affinity_problems(_dict(affinity.get(field)), f"spec.affinity.{field}")
    spread = _list(spec.get("topologySpreadConstraints"))
    problems += spread_problems(spread, "spec.topologySpreadConstraints")
    for i, toleration in enumerate(_list(spec.get("tolerations"))):
        problems += _toleration_problems(_dict(toleration), f"spec.tolerations[{i}]")
    return problems


def _container_problems(
    container: dict[str, Any], path: str, claims: set[str]
) -> list[FieldProblem]:
    problems = port_problems(_list(container.get("ports")), f"{path}.ports")
    resources = _dict(container.get("resources"))
    problems += _resource_problems(resources, f"{path}.resources")
    at = f"{path}.resources.claims"
    return problems + container_claim_problems(_list(resources.get("claims")), claims, at)


def _toleration_problems(toleration: dict[str, Any], path: str) -> list[FieldProblem]:
    problems = []
    key, operator = toleration.get("key") or "", toleration.get("operator") or ""
    value = toleration.get("value") or ""
    if key:
        problems += [_invalid(f"{path}.key", key, msg) for msg in label_key_problems(str(key))]
    elif operator != "Exists":
        detail = (
            'operator must be Exists when `key` is empty, which means "match all values and '
            'all keys"'
        )
        problems.append(_invalid(f"{path}.operator", operator, detail))
    effect = toleration.get("effect") or ""
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        detail = "effect must be 'NoExecute' when `tolerationSeconds` is set"
        problems.append(_invalid(f"{path}.effect", effect, detail))
    if operator in ("Equal", ""):
        messages = label_value_problems(str(value))
        if messages:
            problems.append(_invalid(f"{path}.operator", value, ";".join(messages)))
    elif operator == "Exists":
        if value:
            detail = "value must be empty when `operator` is 'Exists'"
            problems.append(_invalid(f"{path}.operator", toleration, detail))
    else:
        problems.append(_not_supported(f"{path}.operator", operator, ("Equal", "Exists")))
    if effect and effect not in _TAINT_EFFECTS:
        problems.append(_not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return problems


def _node_problems(status: dict[str, Any]) -> list[FieldProblem]:
    problems = _nonnegative(_dict(status.get("capacity")), "status.capacity", keyed=False)
    problems += _nonnegative(_dict(status.get("allocatable")), "status.allocatable", keyed=False)
    return problems


def _priority_class_problems(doc: dict[str, Any]) -> list[FieldProblem]:
    name = _dict(doc.get("metadata")).get("name")
    value = doc.get("value")
    if isinstance(name, str) and name.startswith("system-"):
        known = SYSTEM_PRIORITY_CLASSES.get(name)
        if known is None:
            why = f"{name} is not a known system priority class"
        elif value != known:
            why = f"value of {name} PriorityClass must be {known}"
        elif doc.get("globalDefault"):
            why = f"globalDefault of {name} PriorityClass must be false"
        else:
            return []
        detail = (
            "priority class names with 'system-' prefix are reserved for system use only. "
            f"error: {why}"
        )
        return [_forbidden("metadata.name", detail)]
    if isinstance(value, int) and value > HIGHEST_USER_PRIORITY:
        detail = f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"
        return [_forbidden("value", detail)]
    return []


def _lease_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    problems = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and not isinstance(duration, bool) and duration <= 0:
        problems.append(_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and not isinstance(transitions, bool) and transitions < 0:
        problems.append(_invalid("spec.leaseTransitions", transitions, _NEGATIVE))
    return problems
