"""The executor's AllocateClaims against the embedded API server, through the real client, as
kube-scheduler v1.36's DynamicResources PreBind writes: the claim's delete-protection finalizer
(an update of the claim), then one status update with the allocation (and its
allocationTimestamp) and the pod appended to reservedFor, before the binding; conflicts retried
from a fresh read; a claim allocated elsewhere or gone fails the binding in kube's words, and the
claims reserved before the failure, or before a binding that fails, are released again (kube's
Unreserve)."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Pod
from apis.registry import parse_as
from apis.resource import ResourceClaim
from controllers.addons.claim_writer import DELETE_PROTECTION
from placement.pods.framework.events import Action, AllocateClaims, BindPod, ClaimAllocation
from tests.controllers.addons.test_executor import Rig, rig

GPU = "gpu.example.com"


def allocation(device: str, node: str = "n1") -> dict[str, Any]:
    """A `status.allocation` as the allocator writes it: one device, the node it is on."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    result = {"request": "gpu", "driver": GPU, "pool": node, "device": device}
    return {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": [term]}}


def claim_doc(name: str) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"devices": {"requests": [request]}},
    }


async def new_claim(r: Rig, name: str) -> ResourceClaim:
    made = await r.gateway.create(parse_as(ResourceClaim, claim_doc(name)))
    r.objects[(ResourceClaim.KIND, made.key)] = made  # as the scheduler's informer holds it
    return made


async def read(r: Rig, name: str) -> ResourceClaim:
    return await r.gateway.get(ResourceClaim, name, "team")


def reserved_for(claim: ResourceClaim) -> list[tuple[str, str, str]]:
    refs = (claim.status.reserved_for if claim.status else None) or []
    return [(ref.resource, ref.name, ref.uid) for ref in refs]


def allocated(claim: ResourceClaim) -> dict[str, Any] | None:
    found = claim.to_wire().get("status", {}).get("allocation")
    return dict(found) if found else None


def prebind_and_bind(pod: Pod, claims: tuple[ClaimAllocation, ...]) -> list[Action]:
    uid = pod.metadata.uid or ""
    return [AllocateClaims(pod.key, uid, "n1", claims), BindPod(pod.key, uid, "n1")]


def writes(r: Rig) -> list[str]:
    return [w for w in r.gateway.requests if not w.startswith("GET")]


@pytest.mark.asyncio
async def test_finalizer_then_allocation_and_reservation_then_the_binding() -> None:
    async with rig() as r:
        made = await new_claim(r, "web-gpu-abcde")
        web = await r.pod("web")
        uid = web.metadata.uid or ""
        r.gateway.requests.clear()
        entry = ClaimAllocation(made.key, made.metadata.uid or "", allocation("gpu-0"))
        r.executor.submit(prebind_and_bind(web, (entry,)))
        await r.settle()
        # kube's order: Update (the finalizer), UpdateStatus, then the binding
        assert writes(r) == ["PUT web-gpu-abcde", "PUT status", "POST binding"]
        assert [(x.key, x.ok) for x in r.results] == [("team/web", True)]
        claim = await read(r, "web-gpu-abcde")
        assert claim.metadata.finalizers == [DELETE_PROTECTION]
        assert reserved_for(claim) == [("pods", "web", uid)]
        written = allocated(claim)
        assert written is not None
        assert written.pop("allocationTimestamp") == "2026-01-02T03:04:05Z"  # the rig's wall
        assert written == allocation("gpu-0")
        assert (await r.gateway.get(Pod, "web", "team")).spec.node_name == "n1"
        assert r.executor.claims.reserved == {}  # forgotten once the binding came back


@pytest.mark.asyncio
async def test_a_claim_allocated_already_only_gets_the_pod_appended() -> None:
    async with rig() as r:
        made = await new_claim(r, "shared")
        first = await r.pod("first")
        entry = ClaimAllocation(made.key, made.metadata.uid or "", allocation("gpu-0"))
        first_uid = first.metadata.uid or ""
        r.executor.submit([AllocateClaims(first.key, first_uid, "n1", (entry,))])
        await r.settle()
        r.objects[(ResourceClaim.KIND, made.key)] = before = await read(r, "shared")
        second = await r.pod("second")
        uid = second.metadata.uid or ""
        r.gateway.requests.clear()
        only_reserve = ClaimAllocation(made.key, made.metadata.uid or "", None)
        r.executor.submit([AllocateClaims(second.key, uid, "n1", (only_reserve,))])
        await r.settle()
        assert writes(r) == ["PUT status"]  # no finalizer update, no new allocation
        claim = await read(r, "shared")
        assert reserved_for(claim) == [("pods", "first", first_uid), ("pods", "second", uid)]
        assert allocated(claim) == allocated(before)  # the timestamp is kept as it was


@pytest.mark.asyncio
async def test_a_conflict_is_retried_from_a_fresh_read() -> None:
    async with rig() as r:
        made = await new_claim(r, "c")
        # Someone changes the claim after the scheduler's informer copy: the first update is
        # refused (stale resourceVersion); kube re-reads the claim and tries again.
        doc = made.to_wire()
        doc["metadata"]["labels"] = {"touched": "yes"}
        await r.gateway.replace(parse_as(ResourceClaim, doc))
        web = await r.pod("web")
        uid = web.metadata.uid or ""
        r.gateway.requests.clear()
        entry = ClaimAllocation(made.key, made.metadata.uid or "", allocation("gpu-1"))
        r.executor.submit(prebind_and_bind(web, (entry,)))
        await r.settle()
        assert r.gateway.requests == ["PUT c", "GET c", "PUT c", "PUT status", "POST binding"]
        claim = await read(r, "c")
        assert claim.metadata.labels == {"touched": "yes"}
        assert claim.metadata.finalizers == [DELETE_PROTECTION]
        assert reserved_for(claim) == [("pods", "web", uid)]


@pytest.mark.asyncio
async def test_a_claim_allocated_elsewhere_meanwhile_fails_the_binding() -> None:
    async with rig() as r:
        made = await new_claim(r, "c")
        other = await r.pod("other")
        taken = ClaimAllocation(made.key, made.metadata.uid or "", allocation("gpu-0"))
        r.executor.submit([AllocateClaims(other.key, other.metadata.uid or "", "n1", (taken,))])
        await r.settle()
        web = await r.pod("web")  # its informer copy of the claim is the stale unallocated one
        r.gateway.requests.clear()
        entry = ClaimAllocation(made.key, made.metadata.uid or "", allocation("gpu-1"))
        r.executor.submit(prebind_and_bind(web, (entry,)))
        await r.settle()
        (result,) = [x for x in r.results if x.key == "team/web"]
        assert (result.ok, result.conflict, result.volumes) == (False, False, True)
        assert result.message == "claim team/c got allocated elsewhere in the meantime"
        assert "POST binding" not in r.gateway.requests
        assert (await r.gateway.get(Pod, "web", "team")).spec.node_name is None
        claim = await read(r, "c")
        assert reserved_for(claim) == [("pods", "other", other.metadata.uid or "")]


@pytest.mark.asyncio
async def test_a_later_claim_failing_releases_the_earlier_ones() -> None:
    async with rig() as r:
        first = await new_claim(r, "first")
        web = await r.pod("web")
        claims = (
            ClaimAllocation(first.key, first.metadata.uid or "", allocation("gpu-0")),
            ClaimAllocation("team/gone", "u-gone", allocation("gpu-1")),  # deleted since
        )
        r.executor.submit(prebind_and_bind(web, claims))
        await r.settle()
        (result,) = r.results
        assert not result.ok and result.volumes
        assert result.message == 'resourceclaims.resource.k8s.io "gone" not found'
        claim = await read(r, "first")
        # kube's Unreserve: out of reservedFor; the allocation and finalizer stay
        assert reserved_for(claim) == []
        assert allocated(claim) is not None
        assert claim.metadata.finalizers == [DELETE_PROTECTION]
        assert "POST binding" not in r.gateway.requests


@pytest.mark.asyncio
async def test_a_failed_binding_takes_the_pod_out_of_its_claims() -> None:
    async with rig() as r:
        made = await new_claim(r, "c")
        web = await r.pod("web", nodeName="n1")  # bound by someone else: the binding is a 409
        entry = ClaimAllocation(made.key, made.metadata.uid or "", allocation("gpu-0"))
        r.executor.submit(prebind_and_bind(web, (entry,)))
        await r.settle()
        (result,) = r.results
        assert (result.ok, result.conflict) == (False, True)
        assert reserved_for(await read(r, "c")) == []
        assert r.executor.claims.reserved == {}
