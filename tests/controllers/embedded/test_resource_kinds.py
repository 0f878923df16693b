"""The embedded server serves dynamic resource allocation's kinds (resource.k8s.io/v1) as
kube-apiserver v1.36 does: discovery, create and get through the project's kubernetes_asyncio
gateway, a ResourceClaim's status subresource, metadata.generation kept (and counted) for
DeviceClass and ResourceSlice only, a DELETE answered with the deleted object, kube's validation
(422), and `kubectl get`'s columns (a claim's STATE)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from apis.registry import parse_as, parse_object
from apis.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from controllers.embedded.resource_printers import claim_state
from tests.controllers.embedded.hub import hub, kubectl

pytestmark = pytest.mark.asyncio

GROUP = "resource.k8s.io"


def _doc(kind: str, name: str, spec: dict[str, Any], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": meta, "spec": spec}


REQUESTS = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
CLASS = _doc("DeviceClass", "gpu", {"selectors": [{"cel": {"expression": "true"}}]})
CLAIM = _doc("ResourceClaim", "claim-1", REQUESTS, "default")
TEMPLATE = _doc("ResourceClaimTemplate", "tmpl", {"spec": REQUESTS}, "default")
SLICE = _doc(
    "ResourceSlice",
    "node-1-gpu",
    {
        "driver": "gpu.example.com",
        "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "A100"}}}],
    },
)
ALLOCATION = {
    "devices": {
        "results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}
        ]
    },
    "nodeSelector": {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
        ]
    },
}
POD = {"resource": "pods", "name": "web", "uid": "6f1c2a1e-0000-4000-8000-000000000001"}


def lines(out: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in out.strip().splitlines()]


async def test_discovery_lists_the_group_and_its_four_resources() -> None:
    async with hub() as (server, _), aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/apis") as response:
            groups = (await response.json())["groups"]
        found = next(g for g in groups if g["name"] == GROUP)
        assert found["preferredVersion"]["groupVersion"] == f"{GROUP}/v1"
        async with http.get(f"{server.url}/apis/{GROUP}/v1") as response:
            listed = {r["name"]: r for r in (await response.json())["resources"]}
    assert set(listed) == {
        "deviceclasses",
        "resourceclaims",
        "resourceclaims/status",
        "resourceclaimtemplates",
        "resourceslices",
    }
    assert not listed["deviceclasses"]["namespaced"]
    assert not listed["resourceslices"]["namespaced"]
    assert listed["resourceclaims"]["namespaced"]
    assert all("shortNames" not in r for r in listed.values())  # kube gives them none


async def test_the_kinds_are_created_and_read_back_through_the_client() -> None:
    async with hub() as (_, gw):
        for doc in (CLASS, CLAIM, TEMPLATE, SLICE):
            await gw.create(parse_object(doc))
        cls = await gw.get(DeviceClass, "gpu")
        claim = await gw.get(ResourceClaim, "claim-1", "default")
        template = await gw.get(ResourceClaimTemplate, "tmpl", "default")
        found = await gw.get(ResourceSlice, "node-1-gpu")
    assert cls.spec.selectors is not None and cls.spec.selectors[0].cel is not None
    assert claim.spec.devices is not None and claim.spec.devices.requests is not None
    assert claim.spec.devices.requests[0].name == "gpu"
    assert template.spec.spec.devices is not None
    assert found.spec.driver == "gpu.example.com"
    # as kube-apiserver: DeviceClass and ResourceSlice count generations, claims do not
    assert (cls.metadata.generation, found.metadata.generation) == (1, 1)
    assert (claim.metadata.generation, template.metadata.generation) == (None, None)


async def test_a_claims_status_is_written_through_its_subresource_only() -> None:
    async with hub() as (_, gw):
        await gw.create(parse_object(CLASS))
        with_status = {**CLAIM, "status": {"allocation": ALLOCATION}}
        created = await gw.create(parse_as(ResourceClaim, with_status))
        assert created.status is None  # create drops the status, as kube does
        status = {"status": {"allocation": ALLOCATION, "reservedFor": [POD]}}
        await gw.patch_status(ResourceClaim, "claim-1", status, "default")
        claim = await gw.get(ResourceClaim, "claim-1", "default")
    assert claim.status is not None and claim.status.allocation is not None
    results = claim.status.allocation.devices
    assert results is not None and results.results is not None
    assert results.results[0].device == "gpu-0"
    assert [r.name for r in claim.status.reserved_for or ()] == ["web"]


async def test_kubectl_get_shows_kubes_columns(tmp_path: Path) -> None:
    async with hub() as (server, gw):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        for doc in (CLASS, CLAIM, TEMPLATE, SLICE, _doc("ResourceClaim", "b", REQUESTS, "default")):
            await gw.create(parse_object(doc))
        await gw.patch_status(ResourceClaim, "b", {"status": {"allocation": ALLOCATION}}, "default")
        code, out, err = await kubectl(config, "get", "resourceclaims", "-o", "wide")
        assert code == 0, err
        assert [row[:2] for row in lines(out)] == [
            ["NAME", "STATE"],
            ["b", "allocated"],
            ["claim-1", "pending"],
        ]
        assert lines(out)[0] == ["NAME", "STATE", "AGE"]
        await gw.patch_status(ResourceClaim, "b", {"status": {"reservedFor": [POD]}}, "default")
        code, out, err = await kubectl(config, "get", "resourceclaim", "b")
        assert code == 0, err
        assert lines(out)[1][:2] == ["b", "allocated,reserved"]
        code, out, err = await kubectl(config, "get", "resourceslices")
        assert code == 0, err
        assert lines(out)[0] == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
        assert lines(out)[1][:4] == ["node-1-gpu", "node-1", "gpu.example.com", "node-1"]
        for plural in ("deviceclasses", "resourceclaimtemplates"):
            code, out, err = await kubectl(config, "get", plural)
            assert code == 0, err
            assert lines(out)[0] == ["NAME", "AGE"]


async def test_a_deleted_claims_state_says_so_before_its_allocation() -> None:
    meta = {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"}
    deleted = {"metadata": meta}
    assert claim_state(deleted) == "deleted"
    assert claim_state({**deleted, "status": {"allocation": ALLOCATION}}) == "deleted,allocated"
    reserved = {"status": {"allocation": ALLOCATION, "reservedFor": [POD]}}
    assert claim_state({"metadata": {"name": "c"}, **reserved}) == "allocated,reserved"


async def test_generation_counts_spec_changes_of_classes_and_slices() -> None:
    async with hub() as (_, gw):
        await gw.create(parse_object(CLASS))
        await gw.create(parse_object(SLICE))
        await gw.merge_patch(DeviceClass, "gpu", {"spec": {"selectors": []}})
        await gw.merge_patch(ResourceSlice, "node-1-gpu", {"metadata": {"labels": {"a": "b"}}})
        cls = await gw.get(DeviceClass, "gpu")
        found = await gw.get(ResourceSlice, "node-1-gpu")
    assert cls.metadata.generation == 2
    assert found.metadata.generation == 1  # a label is no spec change


async def test_a_delete_answers_the_deleted_object() -> None:
    async with hub() as (server, gw), aiohttp.ClientSession() as http:
        await gw.create(parse_object(CLAIM))
        url = f"{server.url}/apis/{GROUP}/v1/namespaces/default/resourceclaims/claim-1"
        async with http.delete(url) as response:
            body = await response.json()
    assert response.status == 200
    assert (body["kind"], body["metadata"]["name"]) == ("ResourceClaim", "claim-1")


async def test_kubes_validation_refuses_an_invalid_slice() -> None:
    bad = {**SLICE, "spec": {**SLICE["spec"], "allNodes": True}}
    async with hub() as (server, _), aiohttp.ClientSession() as http:
        url = f"{server.url}/apis/{GROUP}/v1/resourceslices"
        async with http.post(url, json=bad) as response:
            body = await response.json()
    assert response.status == 422
    assert [c["field"] for c in body["details"]["causes"]] == ["spec"]
    assert "exactly one of `nodeName`, `nodeSelector`" in body["message"]
