"""The embedded server's stand-in of kube-controller-manager's resourceclaim controller, through
the real client: a pod's template entries get their claims (generateName `<pod>-<entry>-`, the
pod-claim-name annotation, the pod as controlling owner, the template's labels and spec) and the
pod's status.resourceClaimStatuses names them; a template that arrives late still gets its
claim; consumers that finished or are gone leave reservedFor, and a claim the scheduler
allocated (delete-protection finalizer) is then deallocated and unprotected; a claim made for a
pod that finished, or whose pod is deleted, goes; a pod bound without the scheduler gets its
allocated claim reserved."""

from __future__ import annotations

from typing import Any

import pytest

from apis.core import Pod
from apis.registry import parse_as
from apis.resource import POD_CLAIM_NAME_ANNOTATION, ResourceClaim, ResourceClaimTemplate
from controllers.embedded.resourceclaims import DELETE_PROTECTION, generate_name
from controllers.kube.errors import NotFoundError
from controllers.kube.gateway import Gateway
from tests.controllers.embedded.hub import eventually, hub, pod

SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
ALLOCATION = {
    "devices": {
        "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "d0"}]
    },
    "nodeSelector": {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
        ]
    },
}


def template(name: str = "one-gpu") -> ResourceClaimTemplate:
    meta = {"labels": {"app": "train"}, "annotations": {"note": "from the template"}}
    spec = {"metadata": meta, "spec": SPEC}
    doc = {"metadata": {"name": name, "namespace": "default"}, "spec": spec}
    return parse_as(ResourceClaimTemplate, {"apiVersion": "resource.k8s.io/v1", **doc})


def claim(name: str) -> ResourceClaim:
    doc = {"metadata": {"name": name, "namespace": "default"}, "spec": SPEC}
    return parse_as(ResourceClaim, {"apiVersion": "resource.k8s.io/v1", **doc})


def with_template(name: str, **spec: Any) -> Pod:
    entry = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    return pod(name, resourceClaims=[entry], **spec)


def with_claim(name: str, claim_name: str, **spec: Any) -> Pod:
    return pod(name, resourceClaims=[{"name": "gpu", "resourceClaimName": claim_name}], **spec)


async def made_for(gw: Gateway, name: str) -> str:
    """The claim recorded in the pod's status for its `gpu` entry (waits for it)."""

    async def recorded() -> str:
        found = await gw.get(Pod, name, "default")
        for status in (found.status.resource_claim_statuses if found.status else None) or ():
            if status.name == "gpu" and status.resource_claim_name:
                return status.resource_claim_name
        return ""

    return await eventually(recorded)


async def allocate_for(gw: Gateway, name: str, consumer: Pod) -> ResourceClaim:
    """What kube-scheduler's PreBind writes: the finalizer, the allocation, the consumer."""
    current = await gw.get(ResourceClaim, name, "default")
    doc = current.to_wire()
    doc["metadata"]["finalizers"] = [DELETE_PROTECTION]
    current = await gw.replace(parse_as(ResourceClaim, doc))
    doc = current.to_wire()
    ref = {"resource": "pods", "name": consumer.name, "uid": consumer.metadata.uid}
    doc["status"] = {"allocation": ALLOCATION, "reservedFor": [ref]}
    return await gw.replace_status(parse_as(ResourceClaim, doc))


async def gone(gw: Gateway, name: str) -> bool:
    try:
        await gw.get(ResourceClaim, name, "default")
    except NotFoundError:
        return True
    return False


def test_generate_name_cuts_both_parts_in_proportion_as_kube() -> None:
    assert generate_name("web", "gpu") == "web-gpu-"
    # 40 + 1 + 30 + 1 = 72 > 57: each part keeps len * 57 // 72, and no trailing hyphen
    assert generate_name("p" * 40, "c" * 30) == "p" * 31 + "-" + "c" * 23


@pytest.mark.asyncio
async def test_a_template_entry_gets_its_claim_and_the_pod_status_names_it() -> None:
    async with hub() as (_, gw):
        await gw.create(template())
        web = await gw.create(with_template("web"))
        name = await made_for(gw, "web")
        assert name.startswith("web-gpu-") and len(name) == len("web-gpu-") + 5
        made = await gw.get(ResourceClaim, name, "default")
        assert made.metadata.annotations == {
            "note": "from the template",
            POD_CLAIM_NAME_ANNOTATION: "gpu",
        }
        assert made.metadata.labels == {"app": "train"}
        (owner,) = made.metadata.owner_references or []
        assert (owner.api_version, owner.kind, owner.name, owner.uid) == (
            "v1",
            "Pod",
            "web",
            web.metadata.uid,
        )
        assert owner.controller is True and owner.block_owner_deletion is True
        assert made.to_wire()["spec"] == SPEC
        # Nothing more is made for the same pod: one claim per entry.
        assert len((await gw.list(ResourceClaim, "default")).items) == 1


@pytest.mark.asyncio
async def test_a_template_created_after_the_pod_still_gets_its_claim() -> None:
    async with hub() as (_, gw):
        await gw.create(with_template("web"))
        assert (await gw.list(ResourceClaim, "default")).items == []
        await gw.create(template())
        name = await made_for(gw, "web")
        assert name.startswith("web-gpu-")


@pytest.mark.asyncio
async def test_a_finished_pod_frees_its_claim_which_then_goes() -> None:
    async with hub() as (_, gw):
        await gw.create(template())
        web = await gw.create(with_template("web", nodeName="n1"))
        name = await made_for(gw, "web")
        await allocate_for(gw, name, web)
        await gw.patch_status(Pod, "web", {"status": {"phase": "Succeeded"}}, "default")
        # Reserved by nobody: deallocated, unprotected, and deleted (its pod will not run).
        await eventually(lambda: gone(gw, name))


@pytest.mark.asyncio
async def test_a_deleted_pod_takes_its_allocated_claim_with_it() -> None:
    async with hub() as (_, gw):
        await gw.create(template())
        web = await gw.create(with_template("web", nodeName="n1"))
        name = await made_for(gw, "web")
        await allocate_for(gw, name, web)
        await gw.delete(Pod, "web", "default")
        await eventually(lambda: gone(gw, name))


@pytest.mark.asyncio
async def test_a_shared_claim_loses_the_consumers_that_left_and_is_deallocated_by_the_last() -> (
    None
):
    async with hub() as (_, gw):
        await gw.create(claim("shared"))
        first = await gw.create(with_claim("first", "shared", nodeName="n1"))
        second = await gw.create(with_claim("second", "shared", nodeName="n1"))
        allocated = await allocate_for(gw, "shared", first)
        doc = allocated.to_wire()
        ref = {"resource": "pods", "name": "second", "uid": second.metadata.uid}
        doc["status"]["reservedFor"].append(ref)
        await gw.replace_status(parse_as(ResourceClaim, doc))
        await gw.delete(Pod, "first", "default")

        async def consumers() -> list[str]:
            found = await gw.get(ResourceClaim, "shared", "default")
            return [r.name for r in (found.status.reserved_for if found.status else None) or []]

        await eventually(lambda: _equal(consumers(), ["second"]))
        still = await gw.get(ResourceClaim, "shared", "default")
        assert still.status is not None and still.status.allocation is not None  # still in use
        assert still.metadata.finalizers == [DELETE_PROTECTION]
        await gw.delete(Pod, "second", "default")

        async def released() -> bool:
            found = await gw.get(ResourceClaim, "shared", "default")
            free = found.status is None or found.status.allocation is None
            return free and not found.metadata.finalizers

        await eventually(released)
        assert await consumers() == []  # not made for a pod: the claim itself stays


@pytest.mark.asyncio
async def test_a_pod_bound_without_the_scheduler_gets_its_allocated_claim_reserved() -> None:
    async with hub() as (_, gw):
        await gw.create(claim("shared"))
        first = await gw.create(with_claim("first", "shared", nodeName="n1"))
        await allocate_for(gw, "shared", first)
        second = await gw.create(with_claim("second", "shared", nodeName="n1"))

        async def reserved() -> bool:
            found = await gw.get(ResourceClaim, "shared", "default")
            refs = (found.status.reserved_for if found.status else None) or []
            return [r.uid for r in refs] == [first.metadata.uid, second.metadata.uid]

        await eventually(reserved)


async def _equal(value: Any, want: Any) -> bool:
    return bool(await value == want)
