"""Finding a pod's ResourceClaims, as kube's DynamicResources plugin looks them up (its
PreEnqueue, PreFilter and queueing hints share it): the claim a `spec.resourceClaims` entry
names, or the one kube-controller-manager made from its template (named in the pod's
`status.resourceClaimStatuses`), which must exist, not be being deleted, and, when made from a
template, be controlled by this very pod. Each refusal is kube's sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from apis.core import NodeSelector, Pod
from apis.meta import KubeObject
from apis.resource import ResourceClaim
from placement.pods.cluster.node_labels import MISSING
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.podinfo import pod_key
from placement.pods.framework.interface import PodStatus

__all__ = [
    "CLAIM_KIND",
    "CLASS_KIND",
    "RESERVED_FOR_MAX_SIZE",
    "SLICE_KIND",
    "ClaimLookupError",
    "ClassProblem",
    "DraAllocationError",
    "allocated_selector",
    "can_be_reserved",
    "claim_key",
    "class_problem",
    "is_reserved_for",
    "node_labels",
    "pod_claims",
    "uses_claims",
]

CLAIM_KIND = "ResourceClaim"
CLASS_KIND = "DeviceClass"
SLICE_KIND = "ResourceSlice"
RESERVED_FOR_MAX_SIZE = 256
"""kube's ResourceClaimReservedForMaxSize: a claim holds at most this many consumers."""


class DraAllocationError(Exception):
    """The allocator's refusal for a reason other than devices being short: `kind` "error"
    aborts the attempt, "unschedulable" makes the pod wait for an event; `str()` is kube's
    message."""

    def __init__(self, message: str, kind: Literal["error", "unschedulable"] = "error") -> None:
        super().__init__(message)
        self.kind = kind


class ClaimLookupError(Exception):
    """Why a pod's claims cannot be used now; `str()` is kube's message."""


def claim_key(claim: KubeObject) -> str:
    return pod_key(claim.metadata.namespace, claim.metadata.name)


def uses_claims(pod: Pod) -> bool:
    return bool(pod.spec.resource_claims)


def is_reserved_for(claim: ResourceClaim, uid: str) -> bool:
    status = claim.status
    return any(ref.uid == uid for ref in (status.reserved_for or [])) if status else False


def can_be_reserved(claim: ResourceClaim) -> bool:
    """Room for one more consumer in `status.reservedFor`."""
    status = claim.status
    return len(status.reserved_for or []) < RESERVED_FOR_MAX_SIZE if status else True


def _controlled_by(claim: ResourceClaim, pod: Pod) -> bool:
    uid = pod.metadata.uid or ""
    return any(ref.controller and ref.uid == uid for ref in claim.metadata.owner_references or [])


def _claim_name(pod: Pod, name: str, claim: str | None, template: str | None) -> str | None:
    """The claim name of one entry (None: the controller made no claim for it, on purpose);
    raises ClaimLookupError with kube's resourceclaim.Name words."""
    where = f'pod "{pod.metadata.namespace or "default"}/{pod.metadata.name}"'
    if claim is not None:
        return claim
    if template is not None:
        for status in (pod.status.resource_claim_statuses if pod.status else None) or []:
            if status.name == name:
                return status.resource_claim_name
        raise ClaimLookupError(f"{where}: ResourceClaim not created yet")
    raise ClaimLookupError(
        f'{where}, spec.resourceClaim "{name}": none of the supported fields are set'
    )


def pod_claims(pod: Pod, claims: Mapping[str, KubeObject]) -> list[tuple[str, ResourceClaim]]:
    """`(entry name, claim)` for each of the pod's claims that exists, in `spec.resourceClaims`
    order; raises ClaimLookupError (kube's words) when one is missing, being deleted, or made from a
    template for another pod."""
    found: list[tuple[str, ResourceClaim]] = []
    namespace = pod.metadata.namespace or "default"
    for entry in pod.spec.resource_claims or []:
        name = _claim_name(
            pod, entry.name, entry.resource_claim_name, entry.resource_claim_template_name
        )
        if name is None:
            continue
        claim = claims.get(pod_key(namespace, name))
        if not isinstance(claim, ResourceClaim):
            raise ClaimLookupError(f'could not find ResourceClaim "{namespace}/{name}"')
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimLookupError(f'resourceclaim "{name}" is being deleted')
        if entry.resource_claim_name is None and not _controlled_by(claim, pod):
            raise ClaimLookupError(
                f"ResourceClaim {namespace}/{name} was not created for pod "
                f"{namespace}/{pod.metadata.name} (pod is not owner)"
            )
        found.append((entry.name, claim))
    return found


@dataclass(frozen=True)
class ClassProblem:
    message: str
    error: bool

    def status(self, plugin: str) -> PodStatus:
        if self.error:
            return PodStatus.error(plugin, self.message)
        return PodStatus.unresolvable(plugin, self.message)


def class_problem(claim: ResourceClaim, classes: Mapping[str, Any]) -> ClassProblem | None:
    """kube's check of every request's DeviceClass before allocating: a request of no known
    type is an error, a class that does not exist makes the pod wait for it."""
    devices = claim.spec.devices
    for request in (devices.requests if devices else None) or []:
        if request.first_available:
            names = [
                (f"{request.name}/{s.name}", s.device_class_name) for s in request.first_available
            ]
        elif request.exactly is not None:
            names = [(request.name, request.exactly.device_class_name)]
        else:
            names = [(request.name, "")]
        for name, cls in names:
            if not cls:
                return ClassProblem(f"request {name}: unsupported request type", True)
            if cls not in classes:
                return ClassProblem(f"request {name}: device class {cls} does not exist", False)
    return None


def allocated_selector(claim: ResourceClaim) -> NodeSelector | None:
    allocation = claim.status.allocation if claim.status else None
    return allocation.node_selector if allocation is not None else None


def node_labels(nodes: NodeSnapshot, row: int) -> dict[str, str]:
    """A node's labels, read back from the snapshot's coded columns."""
    labels: dict[str, str] = {}
    for key, column in nodes.labels.items():
        code = int(column.codes[row])
        if code != MISSING:
            labels[key] = column.values[code]
    return labels
