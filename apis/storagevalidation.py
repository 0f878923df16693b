"""kube-apiserver's validation of the storage kinds the pod scheduler reads, worded and ordered
as kube v1.36 words and orders them (pkg/apis/core/validation for PersistentVolumeClaim and
PersistentVolume, pkg/apis/storage/validation for StorageClass):

* PersistentVolumeClaim: at least one access mode, each of ReadWriteOnce, ReadOnlyMany,
  ReadWriteMany, ReadWriteOncePod (the last alone), the selector, `resources.requests.storage`
  set and above zero, `storageClassName` a DNS subdomain, `volumeMode` Block or Filesystem;
* PersistentVolume: access modes as a claim's, `capacity` holding `storage` only and above zero,
  one volume source exactly (a local volume needs a node affinity, and a node affinity needs
  `required` with at least one term), the reclaim policy Delete, Recycle or Retain,
  `storageClassName` and `volumeMode` as a claim's;
* StorageClass: `provisioner` set and a qualified name, `reclaimPolicy` Delete or Retain,
  `volumeBindingMode` Immediate or WaitForFirstConsumer, each allowed topology term's values.
"""

from __future__ import annotations

import math
from typing import Any

from apis.errors import FieldProblem
from apis.fielderrors import label_key_problems
from apis.fieldrules import as_dict, as_list, forbidden, invalid, not_supported, required
from apis.names import dns1123_subdomain_problems
from apis.podspecvalidation import label_selector_problems, node_selector_problems
from apis.quantity import Quantity, QuantityError

__all__ = ["claim_problems", "storage_class_problems", "volume_problems"]

_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_VOLUME_MODES = ("Block", "Filesystem")
_ABOVE_ZERO = "must be greater than zero"
# The volume sources of a PersistentVolumeSpec, in the order kube checks "more than 1".
_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs",
    "rbd", "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile",
    "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local",
    "storageos", "csi",
)  # fmt: skip


def _quantity(raw: Any) -> Quantity | None:
    try:
        return Quantity.parse(raw) if raw is not None else None
    except QuantityError:
        return None  # the model reports it


def _access_mode_problems(modes: list[Any], path: str) -> list[FieldProblem]:
    problems = []
    once_pod = others = False
    for mode in modes:
        if mode not in _ACCESS_MODES:
            problems.append(not_supported(path, mode, _ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            others = True
    if once_pod and others:
        problems.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return problems


def _class_and_mode_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    problems = []
    class_name = spec.get("storageClassName")
    if isinstance(class_name, str) and class_name:
        problems += [
            invalid("spec.storageClassName", class_name, m)
            for m in dns1123_subdomain_problems(class_name)
        ]
    mode = spec.get("volumeMode")
    if isinstance(mode, str) and mode not in _VOLUME_MODES:
        problems.append(not_supported("spec.volumeMode", mode, _VOLUME_MODES))
    return problems


def claim_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    """A PersistentVolumeClaim's spec."""
    modes = as_list(spec.get("accessModes"))
    problems = []
    if not modes:
        problems.append(required("spec.accessModes", "at least 1 access mode is required"))
    problems += label_selector_problems(spec.get("selector"), "spec.selector")
    problems += _access_mode_problems(modes, "spec.accessModes")
    requests = as_dict(as_dict(spec.get("resources")).get("requests"))
    if "storage" not in requests:
        problems.append(required("spec.resources[storage]"))
    else:
        storage = _quantity(requests["storage"])
        if storage is not None and storage.value <= 0:
            problems.append(invalid("spec.resources[storage]", storage.canonical(), _ABOVE_ZERO))
    return problems + _class_and_mode_problems(spec)


def _go_value_of(quantity: Quantity) -> int:
    """Go's Quantity.Value(): rounded up, away from zero."""
    value = quantity.value
    return int(math.copysign(math.ceil(abs(value)), value))


def volume_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    """A PersistentVolume's spec."""
    modes = as_list(spec.get("accessModes"))
    problems = [] if modes else [required("spec.accessModes")]
    problems += _access_mode_problems(modes, "spec.accessModes")
    problems += _capacity_problems(spec.get("capacity"))
    policy = spec.get("persistentVolumeReclaimPolicy")
    policies = ("Delete", "Recycle", "Retain")
    if isinstance(policy, str) and policy and policy not in policies:
        problems.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, policies))
    affinity = spec.get("nodeAffinity")
    if isinstance(affinity, dict):
        selector = affinity.get("required")
        if isinstance(selector, dict):
            problems += node_selector_problems(selector, "spec.nodeAffinity.required")
        else:
            detail = "must specify required node constraints"
            problems.append(required("spec.nodeAffinity.required", detail))
    sources = [name for name in _SOURCES if isinstance(spec.get(name), dict)]
    for name in sources[1:]:
        if name != "flexVolume":
            problems.append(forbidden(f"spec.{name}", "may not specify more than 1 volume type"))
    if sources[:1] == ["local"] and not isinstance(affinity, dict):
        problems.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    if not sources:
        problems.append(required("spec", "must specify a volume type"))
    return problems + _class_and_mode_problems(spec)


def _capacity_problems(raw: Any) -> list[FieldProblem]:
    capacity = raw if isinstance(raw, dict) else None
    problems = [] if capacity else [required("spec.capacity")]
    quantities = {name: _quantity(value) for name, value in (capacity or {}).items()}
    if "storage" not in quantities or len(quantities) > 1:
        shown = (
            None
            if capacity is None
            else {
                name: quantity.canonical() if quantity else capacity[name]
                for name, quantity in sorted(quantities.items())
            }
        )  # Go prints a map with its keys sorted
        problems.append(not_supported("spec.capacity", shown, ("storage",)))
    for name in sorted(quantities):
        quantity = quantities[name]
        if quantity is None:
            continue
        at = f"spec.capacity[{name}]"
        if quantity.value < 0:
            value = _go_value_of(quantity)
            problems.append(invalid(at, value, "must be a valid resource quantity"))
        if quantity.value <= 0:
            problems.append(invalid(at, quantity.canonical(), _ABOVE_ZERO))
    return problems


def storage_class_problems(doc: dict[str, Any]) -> list[FieldProblem]:
    """A StorageClass (its fields are at the top level)."""
    problems = []
    provisioner = doc.get("provisioner")
    if not provisioner:
        problems.append(required("provisioner"))
    elif isinstance(provisioner, str):
        problems += [
            invalid("provisioner", provisioner, m) for m in label_key_problems(provisioner.lower())
        ]
    policy = doc.get("reclaimPolicy")
    if isinstance(policy, str) and policy and policy not in ("Delete", "Retain"):
        problems.append(not_supported("reclaimPolicy", policy, ("Delete", "Retain")))
    mode = doc.get("volumeBindingMode")
    modes = ("Immediate", "WaitForFirstConsumer")
    if isinstance(mode, str) and mode not in modes:
        problems.append(not_supported("volumeBindingMode", mode, modes))
    for i, term in enumerate(as_list(doc.get("allowedTopologies"))):
        for j, raw in enumerate(as_list(as_dict(term).get("matchLabelExpressions"))):
            at = f"allowedTopologies[{i}].matchLabelExpressions[{j}]"
            expression = as_dict(raw)
            key = expression.get("key")
            key = key if isinstance(key, str) else ""
            problems += [invalid(f"{at}.key", key, m) for m in label_key_problems(key)]
            if not as_list(expression.get("values")):
                problems.append(required(f"{at}.values"))
    return problems
