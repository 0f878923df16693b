"""What `scheduler simulate` plays of kube-controller-manager's resourceclaim controller and of
the API writes DynamicResources' PreBind asks for (`AllocateClaims`), on the world's objects.

* A pod's template entry (`spec.resourceClaims[].resourceClaimTemplateName`) gets its claim
  made from the template, named `<pod>-<entry>-<5 lowercase letters or digits>` as kube's
  generateName does (the suffix derived from the pod's uid, so a run is repeatable), annotated
  `resource.kubernetes.io/pod-claim-name: <entry>` and controlled by the pod; the pod's
  `status.resourceClaimStatuses` names it. A missing template makes nothing (kube's controller
  retries until it exists): the pod waits at PreEnqueue.
* A pod gone or finished is removed from the `status.reservedFor` of its claims; a claim
  reserved for nobody any more loses its `allocation` (the controller deallocates it), and the
  claims made for the pod are deleted.
* `AllocateClaims` writes each claim's allocation (with kube's delete-protection finalizer) and
  adds the pod to its `reservedFor`, all at once; a claim gone, replaced, or allocated by
  someone else meanwhile fails the pod's binding with kube's words.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from apis.core import Pod
from apis.meta import KubeObject
from apis.resource import POD_CLAIM_NAME_ANNOTATION, ResourceClaim, ResourceClaimTemplate
from placement.pods.framework.events import AllocateClaims, BindResult, ClusterEvent, ObjectEvent
from placement.pods.simulator.workloads import object_uid

__all__ = [
    "DELETE_PROTECTION",
    "ClaimWorld",
    "allocate",
    "allocate_claims",
    "claims_for",
    "make_claims",
    "release_claims",
    "released",
]

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
CLAIM = "ResourceClaim"
TEMPLATE = "ResourceClaimTemplate"
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # kube's rand.String alphabet (no vowels, no 0/1/3)

Lookup = Callable[[str, str], KubeObject | None]


def _status(entry: str, claim: str | None) -> dict[str, str]:
    return {"name": entry, "resourceClaimName": claim} if claim else {"name": entry}


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])


def claims_for(pod: Pod, lookup: Lookup) -> tuple[list[ResourceClaim], list[dict[str, str]]]:
    """The claims to create for the pod's template entries not made yet, and the pod's
    `status.resourceClaimStatuses` naming every claim made (old and new)."""
    namespace = pod.metadata.namespace or "default"
    made = {s.name: s for s in (pod.status.resource_claim_statuses if pod.status else []) or []}
    new: list[ResourceClaim] = []
    statuses = [
        {
            "name": s.name,
            **({"resourceClaimName": s.resource_claim_name} if s.resource_claim_name else {}),
        }
        for s in made.values()
    ]
    for entry in pod.spec.resource_claims or []:
        template_name = entry.resource_claim_template_name
        if template_name is None or entry.name in made:
            continue
        template = lookup(TEMPLATE, f"{namespace}/{template_name}")
        if not isinstance(template, ResourceClaimTemplate):
            continue  # kube's controller retries until the template exists
        name = f"{pod.metadata.name}-{entry.name}-{_suffix(f'{pod.metadata.uid}/{entry.name}')}"
        meta = dict(template.spec.metadata or {})
        annotations = {**(meta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: entry.name}
        owner = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod.metadata.name,
            "uid": pod.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        wire: dict[str, Any] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": CLAIM,
            "metadata": {
                "name": name,
                "namespace": namespace,
                # The API server gives every object a uid; the plugin tells claims apart by it.
                "uid": object_uid(CLAIM, namespace, name),
                "annotations": annotations,
                "ownerReferences": [owner],
                **({"labels": meta["labels"]} if meta.get("labels") else {}),
            },
            "spec": template.spec.spec.to_wire(),
        }
        new.append(ResourceClaim.model_validate(wire))
        statuses.append(_status(entry.name, name))
    return new, statuses


def released(
    pod: Pod, claims: Iterable[ResourceClaim]
) -> tuple[list[ResourceClaim], list[ResourceClaim]]:
    """For a pod gone or finished: (claims updated: the pod out of `reservedFor`, deallocated
    when nobody is left; claims to delete: those made for the pod)."""
    uid = pod.metadata.uid or ""
    updated: list[ResourceClaim] = []
    deleted: list[ResourceClaim] = []
    for claim in claims:
        owned = any(r.controller and r.uid == uid for r in claim.metadata.owner_references or [])
        if owned:
            deleted.append(claim)
            continue
        status = claim.status
        reserved = (status.reserved_for if status else None) or []
        if not any(r.uid == uid for r in reserved):
            continue
        wire = claim.to_wire()
        left = [r.to_wire() for r in reserved if r.uid != uid]
        new_status = dict(wire.get("status") or {})
        new_status.pop("reservedFor", None)
        if left:
            new_status["reservedFor"] = left
        else:
            new_status.pop("allocation", None)  # the controller deallocates an unused claim
            finalizers = [
                f for f in wire["metadata"].get("finalizers") or [] if f != DELETE_PROTECTION
            ]
            wire["metadata"]["finalizers"] = finalizers or None
        wire["status"] = new_status
        updated.append(ResourceClaim.model_validate(wire))
    return updated, deleted


def allocate(action: AllocateClaims, pod_name: str, lookup: Lookup) -> list[ResourceClaim] | str:
    """The claims as PreBind's writes leave them, or kube's error when one cannot be written."""
    written: list[ResourceClaim] = []
    for one in action.claims:
        claim = lookup(CLAIM, one.key)
        if not isinstance(claim, ResourceClaim) or (claim.metadata.uid or "") != one.uid:
            return f'resourceclaims.resource.k8s.io "{one.key.rpartition("/")[2]}" not found'
        if claim.metadata.deletion_timestamp is not None:
            return f"claim {one.key} got deleted in the meantime"
        wire = claim.to_wire()
        status = dict(wire.get("status") or {})
        if one.allocation is not None:
            if status.get("allocation"):
                return f"claim {one.key} got allocated elsewhere in the meantime"
            finalizers = list(wire["metadata"].get("finalizers") or [])
            if DELETE_PROTECTION not in finalizers:
                wire["metadata"]["finalizers"] = [*finalizers, DELETE_PROTECTION]
            status["allocation"] = one.allocation
        reserved = list(status.get("reservedFor") or [])
        if not any(r.get("uid") == action.uid for r in reserved):
            reserved.append({"resource": "pods", "name": pod_name, "uid": action.uid})
        status["reservedFor"] = reserved
        wire["status"] = status
        written.append(ResourceClaim.model_validate(wire))
    return written


class ClaimWorld(Protocol):
    """What these writes need of the simulation's `World`."""

    objects: dict[tuple[str, str], KubeObject]
    volume_failures: set[tuple[str, str]]

    def add_object(self, obj: KubeObject) -> None: ...

    def update_pod(self, wire: dict[str, Any]) -> None: ...

    def feed(self, event: ClusterEvent) -> None: ...


def make_claims(world: ClaimWorld, pod: Pod) -> None:
    """Create the pod's claims from its templates, then name them in its status."""
    made, statuses = claims_for(pod, lambda kind, key: world.objects.get((kind, key)))
    for claim in made:
        world.add_object(claim)
    if made:
        wire = pod.to_wire()
        wire.setdefault("status", {})["resourceClaimStatuses"] = statuses
        world.update_pod(wire)


def release_claims(world: ClaimWorld, pod: Pod) -> None:
    """A pod gone: out of its claims' reservedFor, its own claims deleted (`released`)."""
    claims = [o for (kind, _), o in world.objects.items() if isinstance(o, ResourceClaim)]
    updated, deleted = released(pod, claims)
    for claim in updated:
        world.objects[(claim.KIND, claim.key)] = claim
        world.feed(ObjectEvent("Modified", claim))
    for claim in deleted:
        del world.objects[(claim.KIND, claim.key)]
        world.feed(ObjectEvent("Deleted", claim))


def allocate_claims(world: ClaimWorld, action: AllocateClaims) -> None:
    """PreBind's claim writes at once; when one cannot be made the pod's binding fails."""
    name = action.key.rpartition("/")[2]
    written = allocate(action, name, lambda kind, key: world.objects.get((kind, key)))
    if isinstance(written, str):
        world.volume_failures.add((action.key, action.uid))
        world.feed(BindResult(action.key, action.uid, action.node, False, False, written, True))
        return
    for claim in written:
        world.objects[(claim.KIND, claim.key)] = claim
        world.feed(ObjectEvent("Modified", claim))
