"""Conformance of the embedded API server's CRUD verbs, driven through the gateway (and so the
real kubernetes_asyncio client over HTTP): create, get, replace, patches, delete, selectors."""

from __future__ import annotations

from typing import Any

import pytest

from apis.cluster import ManagedCluster
from apis.core import Pod
from apis.placements import Placement
from controllers.kube.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    InvalidError,
    NotFoundError,
)
from tests.controllers.embedded.hub import cluster, hub, namespaces, placement, pod

pytestmark = pytest.mark.asyncio


async def test_create_fills_uid_timestamp_resource_version_and_crd_defaults() -> None:
    async with hub() as (_, gw):
        spec = {
            "prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"builtIn": "Steady"}}]}
        }
        created = await gw.create(placement("web", spec=spec))
        wire = created.to_wire()
        assert wire["metadata"]["uid"]
        assert wire["metadata"]["creationTimestamp"].endswith("Z")
        assert int(wire["metadata"]["resourceVersion"]) > 0
        assert wire["metadata"]["generation"] == 1
        policy = wire["spec"]["prioritizerPolicy"]
        assert policy["mode"] == "Additive"
        assert policy["configurations"][0] == {
            "scoreCoordinate": {"type": "BuiltIn", "builtIn": "Steady"},
            "weight": 1,
        }
        assert (await gw.get(Placement, "web", "default")).to_wire() == wire


async def test_generate_name_gives_each_object_a_fresh_name() -> None:
    async with hub() as (_, gw):
        template = cluster("").model_copy(deep=True)
        template.metadata.name = None
        template.metadata.generate_name = "spoke-"
        names = {(await gw.create(template)).name for _ in range(5)}
        assert len(names) == 5
        assert all(name.startswith("spoke-") and len(name) == len("spoke-") + 5 for name in names)


async def test_a_generated_name_that_is_taken_is_generated_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # kube-apiserver retries generateName up to 8 names (RetryGenerateName): a collision of
    # five random characters must not fail a create.
    async with hub() as (server, gw):
        template = cluster("").model_copy(deep=True)
        template.metadata.name = None
        template.metadata.generate_name = "spoke-"
        suffixes = iter(["aaaaa", "aaaaa", "aaaaa", "bbbbb", *["ccccc"] * 8, *["ccccc"] * 8])
        monkeypatch.setattr(type(server.store), "_suffix", staticmethod(lambda: next(suffixes)))
        first = await gw.create(template)
        second = await gw.create(template)  # "aaaaa" twice more, then "bbbbb"
        assert (first.name, second.name) == ("spoke-aaaaa", "spoke-bbbbb")
        await gw.create(template)  # "ccccc"
        with pytest.raises(AlreadyExistsError):  # eight more "ccccc": as many as it tries
            await gw.create(template)


async def test_create_of_a_taken_name_is_already_exists() -> None:
    async with hub() as (_, gw):
        await gw.create(cluster("c1"))
        with pytest.raises(AlreadyExistsError) as err:
            await gw.create(cluster("c1"))
        assert err.value.code == 409
        assert isinstance(err.value, ConflictError)


async def test_invalid_object_is_rejected_with_422_naming_the_field() -> None:
    async with hub() as (_, gw):
        bad = placement("web").to_wire()
        bad["spec"] = {"numberOfClusters": -1}
        # Bypass the client-side model so the server's own validation is what answers.
        with pytest.raises(InvalidError) as err:
            await gw._request(
                "POST",
                "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/default/placements",
                body=bad,
            )
        assert err.value.code == 422
        assert [c.field for c in err.value.causes] == ["spec.numberOfClusters"]
        assert "should be greater than or equal to 0" in err.value.causes[0].message
        assert 'Placement.cluster.open-cluster-management.io "web" is invalid' in str(err.value)


async def test_invalid_name_is_rejected_naming_metadata_name() -> None:
    async with hub() as (_, gw):
        bad = cluster("c1")
        bad.metadata.name = "Not_A_Name"  # past the model's own name check, to test the server's
        with pytest.raises(InvalidError) as err:
            await gw.create(bad)
        assert [c.field for c in err.value.causes] == ["metadata.name"]


async def test_get_of_a_missing_object_is_not_found() -> None:
    async with hub() as (_, gw):
        with pytest.raises(NotFoundError) as err:
            await gw.get(ManagedCluster, "nope")
        assert err.value.code == 404
        assert err.value.reason == "NotFound"


async def test_replace_with_a_stale_resource_version_is_a_conflict() -> None:
    async with hub() as (_, gw):
        first = await gw.create(cluster("c1"))
        fresh = first.model_copy(deep=True)
        fresh.metadata.labels = {"env": "prod"}
        updated = await gw.replace(fresh)
        assert int(updated.metadata.resource_version or 0) > int(
            first.metadata.resource_version or 0
        )
        stale = first.model_copy(deep=True)
        stale.metadata.labels = {"env": "dev"}
        with pytest.raises(ConflictError) as err:
            await gw.replace(stale)
        assert "has been modified" in str(err.value)
        assert (await gw.get(ManagedCluster, "c1")).metadata.labels == {"env": "prod"}


async def test_replace_that_changes_nothing_keeps_the_resource_version() -> None:
    async with hub() as (server, gw):
        created = await gw.create(cluster("c1", {"a": "b"}))
        again = await gw.replace(created)
        assert again.metadata.resource_version == created.metadata.resource_version
        assert server.store.rv == int(created.metadata.resource_version or 0)


async def test_spec_change_bumps_generation_but_label_change_does_not() -> None:
    async with hub() as (_, gw):
        await gw.create(placement("web"))
        labelled = await gw.merge_patch(
            Placement, "web", {"metadata": {"labels": {"x": "y"}}}, "default"
        )
        assert labelled.metadata.generation == 1
        changed = await gw.merge_patch(
            Placement, "web", {"spec": {"numberOfClusters": 3}}, "default"
        )
        assert changed.metadata.generation == 2


async def test_merge_patch_merges_objects_and_null_deletes() -> None:
    async with hub() as (_, gw):
        await gw.create(cluster("c1", {"a": "1", "b": "2"}))
        patched = await gw.merge_patch(
            ManagedCluster, "c1", {"metadata": {"labels": {"a": None, "c": "3"}}}
        )
        assert patched.metadata.labels == {"b": "2", "c": "3"}


async def test_merge_patch_with_a_stale_resource_version_is_a_conflict() -> None:
    async with hub() as (_, gw):
        created = await gw.create(cluster("c1"))
        await gw.merge_patch(ManagedCluster, "c1", {"metadata": {"labels": {"a": "1"}}})
        stale = {
            "metadata": {"resourceVersion": created.metadata.resource_version, "labels": {"a": "2"}}
        }
        with pytest.raises(ConflictError):
            await gw.merge_patch(ManagedCluster, "c1", stale)


async def test_json_patch_applies_operations_and_a_failed_test_is_invalid() -> None:
    async with hub() as (_, gw):
        await gw.create(cluster("c1", {"a": "1"}))
        patched = await gw.json_patch(
            ManagedCluster,
            "c1",
            [
                {"op": "test", "path": "/metadata/labels/a", "value": "1"},
                {"op": "replace", "path": "/metadata/labels/a", "value": "2"},
                {"op": "add", "path": "/metadata/labels/b", "value": "3"},
            ],
        )
        assert patched.metadata.labels == {"a": "2", "b": "3"}
        with pytest.raises(InvalidError):  # kube-apiserver's 422 for a failed test
            await gw.json_patch(
                ManagedCluster, "c1", [{"op": "test", "path": "/metadata/labels/a", "value": "1"}]
            )


async def test_patch_that_breaks_validation_is_invalid_and_changes_nothing() -> None:
    async with hub() as (_, gw):
        await gw.create(placement("web"))
        with pytest.raises(InvalidError) as err:
            await gw.merge_patch(
                Placement, "web", {"spec": {"numberOfClusters": "three"}}, "default"
            )
        assert err.value.causes[0].field == "spec.numberOfClusters"
        assert (await gw.get(Placement, "web", "default")).spec.number_of_clusters is None


LABELLED = {
    "c1": {"env": "prod", "zone": "a", "gpu": "true"},
    "c2": {"env": "dev", "zone": "b"},
    "c3": {"env": "prod", "zone": "c"},
    "c4": {},
}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("env=prod", ["c1", "c3"], id="equals"),
        pytest.param("env==prod", ["c1", "c3"], id="double-equals"),
        pytest.param("env!=prod", ["c2", "c4"], id="not-equals-includes-missing-key"),
        pytest.param("zone in (a,b)", ["c1", "c2"], id="in"),
        pytest.param("zone notin (a, b)", ["c3", "c4"], id="notin"),
        pytest.param("gpu", ["c1"], id="exists"),
        pytest.param("!gpu", ["c2", "c3", "c4"], id="does-not-exist"),
        pytest.param("env=prod,zone in (c)", ["c3"], id="requirements-are-anded"),
        pytest.param("", ["c1", "c2", "c3", "c4"], id="empty-selects-all"),
    ],
)
async def test_list_filters_by_label_selector(selector: str, expected: list[str]) -> None:
    async with hub() as (_, gw):
        for name, labels in LABELLED.items():
            await gw.create(cluster(name, labels))
        result = await gw.list(ManagedCluster, label_selector=selector)
        assert [c.name for c in result.items] == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("metadata.name=p1", ["ns1/p1"], id="name"),
        pytest.param("metadata.namespace=ns2", ["ns2/p3"], id="namespace"),
        pytest.param("spec.nodeName=n1", ["ns1/p2"], id="node-name"),
        pytest.param("spec.nodeName=", ["ns1/p1", "ns2/p3"], id="unbound-pods"),
        pytest.param("spec.schedulerName=gang", ["ns2/p3"], id="scheduler-name"),
        pytest.param("spec.schedulerName!=gang,metadata.name!=p2", ["ns1/p1"], id="anded"),
    ],
)
async def test_list_filters_pods_by_field_selector(selector: str, expected: list[str]) -> None:
    async with hub() as (_, gw):
        await namespaces(gw, "ns1", "ns2")
        await gw.create(pod("p1", "ns1"))
        await gw.create(pod("p2", "ns1", nodeName="n1"))
        await gw.create(pod("p3", "ns2", schedulerName="gang"))
        result = await gw.list(Pod, field_selector=selector)
        assert [p.key for p in result.items] == expected


async def test_list_filters_by_status_phase() -> None:
    async with hub() as (_, gw):
        await gw.create(pod("p1"))
        await gw.create(pod("p2"))
        await gw.patch_status(Pod, "p2", {"status": {"phase": "Running"}}, "default")
        result = await gw.list(Pod, field_selector="status.phase=Running")
        assert [p.name for p in result.items] == ["p2"]


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param("spec.unknownField=x", id="unsupported-field"),
        pytest.param("metadata.name in (a)", id="set-syntax-not-allowed"),
    ],
)
async def test_bad_field_selector_is_a_bad_request(selector: str) -> None:
    async with hub() as (_, gw):
        with pytest.raises(BadRequestError):
            await gw.list(Pod, field_selector=selector)


async def test_list_is_per_namespace_or_across_all_and_carries_the_list_resource_version() -> None:
    async with hub() as (server, gw):
        await namespaces(gw, "ns1", "ns2")
        await gw.create(placement("a", "ns1"))
        await gw.create(placement("b", "ns2"))
        everywhere = await gw.list(Placement)
        assert [p.key for p in everywhere.items] == ["ns1/a", "ns2/b"]
        assert everywhere.resource_version == str(server.store.rv)
        assert [p.key for p in (await gw.list(Placement, "ns2")).items] == ["ns2/b"]


async def test_create_in_a_namespace_other_than_the_url_is_a_bad_request() -> None:
    async with hub() as (_, gw):
        await namespaces(gw, "ns1", "ns2")
        body: dict[str, Any] = placement("a", "ns1").to_wire()
        with pytest.raises(BadRequestError):
            await gw._request(
                "POST",
                "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/ns2/placements",
                body=body,
            )
