"""Conformance of the embedded API server's subresources and deletion rules: `/status`
isolation, finalizers, ownerReference cascade, namespace contents, pods/binding, pods/eviction,
and events."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from apis.cluster import ManagedCluster
from apis.core import CoreEvent, Event, Namespace, ObjectReference, Pod
from apis.meta import ObjectMeta, OwnerReference
from apis.placements import Placement, PlacementDecision
from apis.registry import parse_as
from controllers.embedded.status import status_doc, success_json
from controllers.kube.errors import ConflictError, NotFoundError
from controllers.kube.gateway import Gateway
from tests.controllers.embedded.hub import cluster, hub, namespaces, obj, placement, pod

pytestmark = pytest.mark.asyncio

STATUS = {"conditions": [], "numberOfSelectedClusters": 2}


async def test_create_drops_the_status_of_a_kind_with_a_status_subresource() -> None:
    async with hub() as (_, gw):
        doc = placement("web").to_wire()
        doc["status"] = STATUS
        created = await gw.create(obj(doc))
        assert "status" not in created.to_wire()


async def test_status_write_changes_only_the_status() -> None:
    async with hub() as (_, gw):
        await gw.create(placement("web", spec={"numberOfClusters": 1}))
        patch = {
            "spec": {"numberOfClusters": 5},
            "metadata": {"labels": {"a": "b"}},
            "status": STATUS,
        }
        written = await gw.patch_status(Placement, "web", patch, "default")
        assert written.spec.number_of_clusters == 1
        assert written.metadata.labels is None
        assert written.status is not None and written.status.number_of_selected_clusters == 2
        assert written.metadata.generation == 1


async def test_main_write_ignores_the_status() -> None:
    async with hub() as (_, gw):
        await gw.create(placement("web"))
        await gw.patch_status(Placement, "web", {"status": STATUS}, "default")
        written = await gw.merge_patch(
            Placement,
            "web",
            {"spec": {"numberOfClusters": 4}, "status": {"numberOfSelectedClusters": 9}},
            "default",
        )
        assert written.spec.number_of_clusters == 4
        assert written.status is not None and written.status.number_of_selected_clusters == 2


async def test_replace_status_puts_only_the_status() -> None:
    async with hub() as (_, gw):
        created = await gw.create(placement("web"))
        changed = created.model_copy(deep=True)
        changed.spec.number_of_clusters = 7
        changed_wire = changed.to_wire()
        changed_wire["status"] = STATUS
        written = await gw.replace_status(parse_as(Placement, changed_wire))
        assert written.spec.number_of_clusters is None
        assert written.status is not None and written.status.number_of_selected_clusters == 2


async def test_delete_of_an_object_with_finalizers_waits_for_them() -> None:
    async with hub() as (_, gw):
        await gw.create(cluster("c1", finalizers=["example.com/cleanup"]))
        held = await gw.delete(ManagedCluster, "c1")
        assert held is not None and held.metadata.deletion_timestamp is not None
        still = await gw.get(ManagedCluster, "c1")
        assert still.metadata.deletion_timestamp is not None
        await gw.merge_patch(ManagedCluster, "c1", {"metadata": {"finalizers": None}})
        with pytest.raises(NotFoundError):
            await gw.get(ManagedCluster, "c1")


async def test_delete_without_finalizers_removes_the_object() -> None:
    async with hub() as (_, gw):
        await gw.create(cluster("c1"))
        assert await gw.delete(ManagedCluster, "c1") is None
        with pytest.raises(NotFoundError):
            await gw.delete(ManagedCluster, "c1")


async def test_delete_with_a_stale_precondition_is_a_conflict() -> None:
    async with hub() as (_, gw):
        created = await gw.create(cluster("c1"))
        await gw.merge_patch(ManagedCluster, "c1", {"metadata": {"labels": {"a": "b"}}})
        with pytest.raises(ConflictError):
            await gw.delete(
                ManagedCluster, "c1", resource_version=created.metadata.resource_version
            )


async def _owned_decision(gw: Gateway, owner: Placement, name: str) -> PlacementDecision:
    ref = OwnerReference(
        api_version=owner.api_version or "",
        kind="Placement",
        name=owner.name,
        uid=owner.metadata.uid or "",
    )
    decision = PlacementDecision(
        metadata=ObjectMeta(name=name, namespace="default", owner_references=[ref])
    )
    return await gw.create(decision)


async def test_deleting_an_owner_deletes_its_dependents() -> None:
    async with hub() as (_, gw):
        owner = await gw.create(placement("web"))
        await _owned_decision(gw, owner, "web-decision-1")
        await _owned_decision(gw, owner, "web-decision-2")
        await gw.create(PlacementDecision(metadata=ObjectMeta(name="other", namespace="default")))
        await gw.delete(Placement, "web", "default")
        left = await gw.list(PlacementDecision)
        assert [d.name for d in left.items] == ["other"]


async def test_orphan_propagation_keeps_dependents_without_the_owner_reference() -> None:
    async with hub() as (_, gw):
        owner = await gw.create(placement("web"))
        await _owned_decision(gw, owner, "web-decision-1")
        await gw.delete(Placement, "web", "default", propagation="Orphan")
        kept = await gw.get(PlacementDecision, "web-decision-1", "default")
        assert kept.metadata.owner_references is None


async def test_deleting_a_namespace_deletes_its_objects() -> None:
    async with hub() as (_, gw):
        await namespaces(gw, "team", "other")
        await gw.create(placement("a", "team"))
        await gw.create(placement("b", "other"))
        await gw.delete(Namespace, "team")
        assert [p.key for p in (await gw.list(Placement)).items] == ["other/b"]


async def test_binding_assigns_the_node_once() -> None:
    async with hub() as (_, gw):
        await gw.create(pod("p1"))
        await gw.bind("default", "p1", "node-a")
        bound = await gw.get(Pod, "p1", "default")
        assert bound.spec.node_name == "node-a"
        with pytest.raises(ConflictError) as err:
            await gw.bind("default", "p1", "node-b")
        assert 'already assigned to node "node-a"' in str(err.value)
        assert (await gw.get(Pod, "p1", "default")).spec.node_name == "node-a"


async def test_binding_a_missing_pod_is_not_found() -> None:
    async with hub() as (_, gw):
        with pytest.raises(NotFoundError):
            await gw.bind("default", "ghost", "node-a")


async def test_eviction_deletes_the_pod() -> None:
    async with hub() as (_, gw):
        await gw.create(pod("p1"))
        await gw.evict("default", "p1")
        with pytest.raises(NotFoundError):
            await gw.get(Pod, "p1", "default")


async def test_events_are_one_store_seen_through_both_apis() -> None:
    async with hub() as (_, gw):
        now = datetime(2026, 11, 22, tzinfo=UTC)
        regarding = ObjectReference(kind="Placement", name="web", namespace="default")
        new = Event(
            metadata=ObjectMeta(generate_name="web-", namespace="default"),
            event_time=now,
            reason="DecisionCreate",
            note="created",
            type="Normal",
            regarding=regarding,
            reporting_controller="placement-controller",
            reporting_instance="hub-1",
            action="Create",
        )
        old = CoreEvent(
            metadata=ObjectMeta(name="web.1", namespace="default"),
            involved_object=regarding,
            reason="DecisionUpdate",
            message="updated",
            type="Normal",
            count=2,
        )
        recorded = await gw.create_event(new)
        assert recorded.name.startswith("web-")
        await gw.create_event(old)
        core = {e.name: e for e in (await gw.list(CoreEvent, "default")).items}
        events = {e.name: e for e in (await gw.list(Event, "default")).items}
        assert set(core) == set(events) == {recorded.name, "web.1"}
        # The events.k8s.io Event as core/v1 shows it (`kubectl get events`, `describe`).
        seen = core[recorded.name]
        assert seen.metadata.uid == recorded.metadata.uid
        assert seen.metadata.resource_version == recorded.metadata.resource_version
        assert (seen.involved_object, seen.message, seen.reporting_component) == (
            regarding,
            "created",
            "placement-controller",
        )
        assert (seen.event_time, seen.reporting_instance, seen.action) == (now, "hub-1", "Create")
        # And the core/v1 Event as events.k8s.io shows it.
        back = events["web.1"].to_wire()
        assert (back["regarding"]["name"], back["note"], back["deprecatedCount"]) == (
            "web",
            "updated",
            2,
        )
        # One object: deleted through one API, it is gone from both.
        await gw.delete(CoreEvent, recorded.name, "default")
        assert [e.name for e in (await gw.list(Event, "default")).items] == ["web.1"]
        assert [e.name for e in (await gw.list(CoreEvent, "default")).items] == ["web.1"]


async def test_core_events_are_selected_by_the_object_they_involve() -> None:
    async with hub() as (_, gw):
        for kind, name in (("Placement", "web"), ("Placement", "db"), ("PlacementDecision", "web")):
            ref = ObjectReference(kind=kind, name=name, namespace="default", uid=f"uid-{name}")
            await gw.create_event(
                Event(
                    metadata=ObjectMeta(name=f"{kind.lower()}-{name}", namespace="default"),
                    event_time=datetime(2026, 11, 22, tzinfo=UTC),
                    reason="DecisionCreate",
                    note="created",
                    type="Normal",
                    regarding=ref,
                    reporting_controller="placement-controller",
                    action="Create",
                )
            )
        # What `kubectl describe placement web` asks for.
        selector = (
            "involvedObject.name=web,involvedObject.namespace=default,"
            "involvedObject.kind=Placement,involvedObject.uid=uid-web"
        )
        found = await gw.list(CoreEvent, "default", field_selector=selector)
        assert [e.name for e in found.items] == ["placement-web"]
        by_regarding = await gw.list(Event, field_selector="regarding.kind=PlacementDecision")
        assert [e.name for e in by_regarding.items] == ["placementdecision-web"]
        typed = await gw.list(CoreEvent, field_selector="type=Warning")
        assert typed.items == []


@pytest.mark.parametrize(
    "message", ["pod p1 bound to n1", 'pod "é" bound to nöde ✓\n\\ \U0001f600']
)
async def test_a_success_status_is_what_json_dumps_writes(message: str) -> None:
    assert success_json(201, message) == json.dumps(status_doc(201, message)).encode()
    with pytest.raises(ValueError, match="no success"):
        success_json(409, message)
