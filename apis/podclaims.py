"""The pod's side of dynamic resource allocation: the claims a pod names
(`spec.resourceClaims`), the claims made for it from templates (`status.resourceClaimStatuses`)
and a container's use of them (`resources.claims`). The claims themselves: `apis.resource`."""

from __future__ import annotations

from apis.meta import KubeModel

__all__ = ["PodResourceClaim", "PodResourceClaimStatus", "ResourceClaimRef"]


class ResourceClaimRef(KubeModel):
    """A container's use of one of the pod's `spec.resourceClaims` (and of one request of it)."""

    name: str
    request: str | None = None


class PodResourceClaim(KubeModel):
    """One entry of `spec.resourceClaims`: a claim by name, or a template a claim is made from
    for this pod (exactly one of the two)."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodResourceClaimStatus(KubeModel):
    """The claim made for the pod from a template entry (`resourceClaimName` unset: none is
    needed)."""

    name: str
    resource_claim_name: str | None = None
