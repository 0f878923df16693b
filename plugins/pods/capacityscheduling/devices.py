"""What a pod's DRA devices charge to its namespace's ElasticQuota (docs/gangs-and-quotas.md,
"Devices (DRA)").

A pod's devices are not in its container requests: they come from ResourceClaims. The quota
names them as kube's ResourceQuota does, `<deviceclass>.deviceclass.resource.k8s.io/devices`,
and counts a claim as kube's ResourceQuota evaluator for claims counts it (per request, summed
per class): an ExactCount request its count (1 when unset), an All request 32 (the most one
allocation can hold), a firstAvailable request its largest alternative of each class; an
allocation mode it does not know counts 0. adminAccess requests count too.

A pod is charged the claims made for it from its templates only (its own claims). A claim it
names directly may be shared by many pods: charging each consumer would count one claim once
per consumer.

The charge is computed once per pod (by uid), the first time the pod is counted or checked,
and kept until the pod goes, so that adding and removing the pod always move `used` by the same
amount even if a template or claim changes in between.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from apis.core import Pod
from apis.meta import KubeObject
from apis.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimTemplate,
)
from placement.pods.cluster.podinfo import pod_key
from placement.pods.framework.interface import ClusterView, PodInfo

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "DEVICES_SUFFIX",
    "DeviceCharges",
    "claim_devices",
    "device_resource",
    "pod_devices",
]

DEVICES_SUFFIX = ".deviceclass.resource.k8s.io/devices"
ALLOCATION_RESULTS_MAX_SIZE = 32
"""kube's AllocationResultsMaxSize: what an All request is charged."""

_CLAIM = "ResourceClaim"
_TEMPLATE = "ResourceClaimTemplate"
_NONE: Mapping[str, int] = MappingProxyType({})


def device_resource(device_class: str) -> str:
    """The quota's name for the devices of a class."""
    return f"{device_class}{DEVICES_SUFFIX}"


def _count(mode: str | None, count: int | None) -> int:
    if mode is None or mode == ALLOCATION_MODE_EXACT_COUNT:
        return 1 if count is None else count
    if mode == ALLOCATION_MODE_ALL:
        return ALLOCATION_RESULTS_MAX_SIZE
    return 0  # a mode this version does not know: kube counts it as nothing


def claim_devices(spec: ResourceClaimSpec) -> dict[str, int]:
    """Per quota resource, the devices one claim of this spec is charged."""
    out: dict[str, int] = {}
    for request in (spec.devices.requests if spec.devices else None) or []:
        if request.first_available:
            largest: dict[str, int] = {}
            for sub in request.first_available:
                name = sub.device_class_name
                largest[name] = max(largest.get(name, 0), _count(sub.allocation_mode, sub.count))
            charged = largest
        elif request.exactly is not None:
            exact = request.exactly
            charged = {exact.device_class_name: _count(exact.allocation_mode, exact.count)}
        else:
            continue
        for device_class, devices in charged.items():
            if device_class:
                key = device_resource(device_class)
                out[key] = out.get(key, 0) + devices
    return out


def pod_devices(
    pod: Pod, claims: Mapping[str, KubeObject], templates: Mapping[str, KubeObject]
) -> dict[str, int]:
    """The devices of the pod's own claims: for each template entry, the claim made for it
    (named in the pod's status) when it exists, else the template's claim spec. Entries naming
    a claim directly are not charged (see the module docstring)."""
    namespace = pod.metadata.namespace or "default"
    made = {
        s.name: s.resource_claim_name
        for s in (pod.status.resource_claim_statuses if pod.status else None) or []
    }
    out: dict[str, int] = {}
    for entry in pod.spec.resource_claims or []:
        template_name = entry.resource_claim_template_name
        if entry.resource_claim_name is not None or template_name is None:
            continue
        spec: ResourceClaimSpec | None = None
        if entry.name in made:
            name = made[entry.name]
            if name is None:
                continue  # kube's controller decided this entry needs no claim
            claim = claims.get(pod_key(namespace, name))
            if isinstance(claim, ResourceClaim):
                spec = claim.spec
        if spec is None:
            template = templates.get(pod_key(namespace, template_name))
            if not isinstance(template, ResourceClaimTemplate):
                continue
            spec = template.spec.spec
        for key, devices in claim_devices(spec).items():
            out[key] = out.get(key, 0) + devices
    return out


class DeviceCharges:
    """The device charge of each pod (by uid), computed once; see the module docstring."""

    def __init__(self) -> None:
        self._by_uid: dict[str, Mapping[str, int]] = {}
        self._merged: dict[str, tuple[Mapping[str, int], Mapping[str, int]]] = {}

    def learn(self, pod: PodInfo, cluster: ClusterView) -> None:
        """Compute the pod's charge unless known (pods without claims cost nothing here)."""
        uid = pod.uid or pod.key
        if uid in self._by_uid or not pod.pod.spec.resource_claims:
            return
        devices = pod_devices(pod.pod, cluster.objects(_CLAIM), cluster.objects(_TEMPLATE))
        self._by_uid[uid] = MappingProxyType(devices) if devices else _NONE

    def devices(self, pod: PodInfo) -> Mapping[str, int]:
        return self._by_uid.get(pod.uid or pod.key, _NONE)

    def charge(self, pod: PodInfo) -> Mapping[str, int]:
        """The pod's requests plus its devices."""
        uid = pod.uid or pod.key
        devices = self._by_uid.get(uid)
        if not devices:
            return pod.requests
        known = self._merged.get(uid)
        if known is not None and known[0] is pod.requests:
            return known[1]  # preemption asks for the same pods' charges again and again
        merged = dict(pod.requests)
        for name, value in devices.items():
            merged[name] = merged.get(name, 0) + value
        self._merged[uid] = (pod.requests, merged)
        return merged

    def forget(self, uid: str) -> None:
        self._by_uid.pop(uid, None)
        self._merged.pop(uid, None)
