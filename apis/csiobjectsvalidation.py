"""kube-apiserver's validation of the `storage.k8s.io/v1` CSIDriver, CSIStorageCapacity and
VolumeAttachment, worded and ordered as kube v1.36 words and orders it (the object's name is
checked with every object's metadata, elsewhere).

* CSIDriver (`spec`, after the API server's defaults, so the fields it defaults are never
  missing): `fsGroupPolicy` one of `File`, `None`, `ReadWriteOnceWithFSType`; per token request
  an audience not listed twice and `expirationSeconds` between 10 minutes and 2^32 seconds;
  `volumeLifecycleModes` of `Persistent` and `Ephemeral`; `nodeAllocatableUpdatePeriodSeconds`
  at least 10.
* CSIStorageCapacity (its fields at the top level): `nodeTopology` a label selector,
  `storageClassName` a DNS subdomain (so not empty), `capacity` not negative
  (`maximumVolumeSize` is not checked, as in kube).
* VolumeAttachment (`spec`): `attacher` set and a CSI driver name; `source` naming exactly one of
  `persistentVolumeName` and `inlineVolumeSpec`; `nodeName` a DNS subdomain; the volume's name a
  DNS subdomain. The contents of an inline volume spec are not checked here.
"""

from __future__ import annotations

from typing import Any

from apis.csivalidation import driver_name_problems
from apis.errors import FieldProblem
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
from apis.names import dns1123_subdomain_problems
from apis.podspecvalidation import label_selector_problems
from apis.quantity import Quantity, QuantityError

__all__ = ["capacity_problems", "csidriver_problems", "volume_attachment_problems"]

_FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
_LIFECYCLE_MODES = ("Persistent", "Ephemeral")
_MIN_EXPIRATION = 600
_MAX_EXPIRATION = 1 << 32
_MIN_UPDATE_PERIOD = 10
_EXACTLY_ONE = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"


def _subdomain(value: Any, path: str) -> list[FieldProblem]:
    text = value if isinstance(value, str) else ""
    return [invalid(path, text, m) for m in dns1123_subdomain_problems(text)]


def _token_problems(requests: list[Any]) -> list[FieldProblem]:
    problems: list[FieldProblem] = []
    audiences: set[str] = set()
    for i, raw in enumerate(requests):
        request, at = as_dict(raw), f"spec.tokenRequests[{i}]"
        audience = str(request.get("audience") or "")
        if audience in audiences:
            problems.append(duplicate(f"{at}.audience", audience))
            continue
        audiences.add(audience)
        seconds = as_int(request.get("expirationSeconds"))
        if seconds is None:
            continue
        if seconds < _MIN_EXPIRATION:
            detail = "may not specify a duration less than 10 minutes"
            problems.append(invalid(f"{at}.expirationSeconds", seconds, detail))
        if seconds > _MAX_EXPIRATION:
            detail = "may not specify a duration larger than 2^32 seconds"
            problems.append(invalid(f"{at}.expirationSeconds", seconds, detail))
    return problems


def csidriver_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    """A CSIDriver's `spec` (see the module docstring)."""
    problems: list[FieldProblem] = []
    policy = spec.get("fsGroupPolicy")
    if isinstance(policy, str) and policy not in _FS_GROUP_POLICIES:
        problems.append(not_supported("spec.fsGroupPolicy", policy, _FS_GROUP_POLICIES))
    problems += _token_problems(as_list(spec.get("tokenRequests")))
    for mode in as_list(spec.get("volumeLifecycleModes")):
        if mode not in _LIFECYCLE_MODES:
            problems.append(not_supported("spec.volumeLifecycleModes", mode, _LIFECYCLE_MODES))
    period = as_int(spec.get("nodeAllocatableUpdatePeriodSeconds"))
    if period is not None and period < _MIN_UPDATE_PERIOD:
        detail = "must be greater than or equal to 10 seconds"
        problems.append(invalid("spec.nodeAllocatableUpdatePeriodSeconds", period, detail))
    return problems


def capacity_problems(doc: dict[str, Any]) -> list[FieldProblem]:
    """A CSIStorageCapacity (see the module docstring)."""
    problems = label_selector_problems(doc.get("nodeTopology"), "nodeTopology")
    problems += _subdomain(doc.get("storageClassName"), "storageClassName")
    raw = doc.get("capacity")
    try:
        capacity = Quantity.parse(raw) if raw is not None else None
    except QuantityError:
        capacity = None  # the model reports it
    if capacity is not None and capacity.value < 0:
        detail = "must be greater than or equal to 0"
        problems.append(invalid("capacity", capacity.canonical(), detail))
    return problems


def volume_attachment_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    """A VolumeAttachment's `spec` (see the module docstring)."""
    attacher = spec.get("attacher")
    problems = (
        driver_name_problems(attacher, "spec.attacher")
        if isinstance(attacher, str) and attacher
        else [required("spec.attacher")]
    )
    source = as_dict(spec.get("source"))
    volume, inline = source.get("persistentVolumeName"), source.get("inlineVolumeSpec")
    if volume is None and inline is None:
        problems.append(required("spec.source", _EXACTLY_ONE))
    elif volume is not None and inline is not None:
        problems.append(forbidden("spec.source", _EXACTLY_ONE))
    problems += _subdomain(spec.get("nodeName"), "spec.nodeName")
    if volume is not None and inline is None:
        problems += _subdomain(volume, "spec.source.persistentVolumeName")
    return problems
