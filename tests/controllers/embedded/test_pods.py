"""Pods as a scheduler sees them on a real API server: the create-time defaults and the Priority
admission plugin, the field selectors its informers use (on list and on watch, where a pod
moving out of the selector is DELETED and into it ADDED), `pods/binding` with kube's answers,
graceful deletion and `pods/eviction`. All through the real clients (the gateway and the
generated kubernetes_asyncio APIs)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from apis.core import Pod
from apis.registry import parse_object
from controllers.kube.errors import ConflictError, ForbiddenError, NotFoundError
from controllers.kube.gateway import Gateway, WatchEvent
from tests.controllers.embedded.hub import WAIT, eventually, hub, pod

pytestmark = pytest.mark.asyncio


async def priority_class(gw: Gateway, name: str, value: int, **extra: Any) -> None:
    doc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }
    await gw.create(parse_object(doc))


def binding(pod_name: str, node: str, **meta: Any) -> client.V1Binding:
    return client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod_name, **meta),
        target=client.V1ObjectReference(kind="Node", name=node),
    )


async def bind(api: client.ApiClient, pod_name: str, node: str, **meta: Any) -> tuple[int, str]:
    """POST pods/binding through the generated client (whose Binding model cannot read the
    Status a server answers, hence the raw response): the HTTP status and body back."""
    response: Any = await client.CoreV1Api(api).create_namespaced_pod_binding(
        pod_name, "default", binding(pod_name, node, **meta), _preload_content=False
    )
    try:
        return response.status, await response.text()
    finally:
        response.release()


def api_of(url: str) -> client.ApiClient:
    return client.ApiClient(client.Configuration(host=url))


# --- admission -------------------------------------------------------------------------------


async def test_a_new_pod_gets_the_defaults_a_scheduler_reads() -> None:
    async with hub() as (_, gw):
        created = await gw.create(pod("p1"))
        assert created.spec.scheduler_name == "default-scheduler"
        assert (created.spec.priority, created.spec.preemption_policy) == (
            0,
            "PreemptLowerPriority",
        )
        assert created.spec.termination_grace_period_seconds == 30
        assert created.status is not None and created.status.phase == "Pending"
        assert created.to_wire()["status"]["qosClass"] == "BestEffort"
        named = await gw.create(pod("p2", schedulerName="ocm-pod-scheduler"))
        assert named.spec.scheduler_name == "ocm-pod-scheduler"


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        pytest.param({"requests": {"cpu": "1"}}, "Burstable", id="requests-only"),
        pytest.param(
            {"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed", id="limits-are-requests"
        ),
        pytest.param(
            {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "Burstable",
            id="requests-below-limits",
        ),
    ],
)
async def test_the_qos_class_follows_requests_and_limits(
    resources: dict[str, Any], qos: str
) -> None:
    async with hub() as (_, gw):
        created = await gw.create(pod("p1", containers=[{"name": "c", "resources": resources}]))
        assert created.to_wire()["status"]["qosClass"] == qos


async def test_priority_comes_from_the_pods_priority_class() -> None:
    async with hub() as (_, gw):
        await priority_class(gw, "batch", 100, preemptionPolicy="Never")
        created = await gw.create(pod("p1", priorityClassName="batch"))
        assert (created.spec.priority, created.spec.preemption_policy) == (100, "Never")
        critical = await gw.create(pod("p2", priorityClassName="system-cluster-critical"))
        assert critical.spec.priority == 2_000_000_000


async def test_a_global_default_class_applies_to_pods_that_name_none() -> None:
    async with hub() as (_, gw):
        await priority_class(gw, "normal", 50, globalDefault=True)
        created = await gw.create(pod("p1"))
        assert (created.spec.priority_class_name, created.spec.priority) == ("normal", 50)


async def test_a_missing_class_or_a_priority_sent_by_hand_is_forbidden() -> None:
    async with hub() as (_, gw):
        with pytest.raises(ForbiddenError) as err:
            await gw.create(pod("p1", priorityClassName="nope"))
        assert 'pods "p1" is forbidden: no PriorityClass with name nope was found' in str(err.value)
        await priority_class(gw, "batch", 100)
        with pytest.raises(ForbiddenError) as err:
            await gw.create(pod("p2", priorityClassName="batch", priority=7))
        assert "the integer value of priority (7) must not be provided" in str(err.value)
        assert "computed 100" in str(err.value)
        # The priority the class gives, sent again (a pod copied from another), is accepted.
        created = await gw.create(pod("p3", priorityClassName="batch", priority=100))
        assert created.spec.priority == 100


# --- field selectors -------------------------------------------------------------------------


async def test_field_selectors_a_scheduler_uses_on_list() -> None:
    async with hub() as (_, gw):
        await gw.create(pod("pending", schedulerName="ocm-pod-scheduler"))
        await gw.create(pod("other", schedulerName="ocm-pod-scheduler"))
        await gw.create(pod("default"))
        await gw.bind("default", "other", "node-a")
        await gw.patch_status(Pod, "default", {"status": {"phase": "Running"}}, "default")

        async def names(selector: str) -> list[str]:
            return [p.name for p in (await gw.list(Pod, field_selector=selector)).items]

        assert await names("spec.nodeName=") == ["default", "pending"]
        assert await names("spec.nodeName!=") == ["other"]
        assert await names("spec.nodeName=node-a") == ["other"]
        assert await names("spec.schedulerName=ocm-pod-scheduler,spec.nodeName=") == ["pending"]
        assert await names("status.phase!=Running,status.phase!=Succeeded") == [
            "other",
            "pending",
        ]
        assert await names("metadata.name=pending,metadata.namespace=default") == ["pending"]
        assert await names("metadata.namespace=kube-system") == []


async def test_nodes_are_selected_on_unschedulable() -> None:
    async with hub() as (server, _), api_of(server.url) as api:
        core = client.CoreV1Api(api)
        for name, cordoned in (("n1", True), ("n2", None)):
            spec = client.V1NodeSpec(unschedulable=cordoned)
            node = client.V1Node(metadata=client.V1ObjectMeta(name=name), spec=spec)
            await core.create_node(node)
        listed = await core.list_node(field_selector="spec.unschedulable=false")
        assert [n.metadata.name for n in listed.items] == ["n2"]
        listed = await core.list_node(field_selector="spec.unschedulable=true")
        assert [n.metadata.name for n in listed.items] == ["n1"]


async def _events(
    gw: Gateway, rv: str, selector: str, count: int
) -> list[tuple[str, str, str | None]]:
    out: list[tuple[str, str, str | None]] = []
    event: WatchEvent[Pod]
    async with asyncio.timeout(WAIT):
        async for event in gw.watch(Pod, rv, field_selector=selector, bookmarks=False):
            assert event.object is not None
            out.append((event.type, event.object.name, event.object.spec.node_name))
            if len(out) == count:
                break
    return out


async def test_a_watched_pod_leaves_and_enters_the_selector_as_deleted_and_added() -> None:
    async with hub() as (server, gw):
        rv = (await gw.list(Pod)).resource_version
        unscheduled = asyncio.create_task(_events(gw, rv, "spec.nodeName=", 3))
        on_a = asyncio.create_task(_events(gw, rv, "spec.nodeName=node-a", 2))
        await server.wait_for_watchers(2)
        await gw.create(pod("p1"))
        await gw.merge_patch(Pod, "p1", {"metadata": {"labels": {"x": "y"}}}, "default")
        await gw.bind("default", "p1", "node-a")
        await gw.merge_patch(Pod, "p1", {"metadata": {"labels": {"x": "z"}}}, "default")
        assert await unscheduled == [
            ("ADDED", "p1", None),
            ("MODIFIED", "p1", None),
            # the pod as it was when it last matched (kube-apiserver's watch cache sends that)
            ("DELETED", "p1", None),
        ]
        assert await on_a == [("ADDED", "p1", "node-a"), ("MODIFIED", "p1", "node-a")]


# --- pods/binding ----------------------------------------------------------------------------


async def test_binding_sets_the_node_and_the_pod_scheduled_condition() -> None:
    async with hub() as (server, gw), api_of(server.url) as api:
        await gw.create(pod("p1"))
        unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        status = {"conditions": [unschedulable], "nominatedNodeName": "n1"}
        await gw.patch_status(Pod, "p1", {"status": status}, "default")
        code, _ = await bind(api, "p1", "n1", annotations={"why": "test"})
        assert code == 201
        bound = await gw.get(Pod, "p1", "default")
        assert bound.spec.node_name == "n1"
        assert bound.metadata.annotations == {"why": "test"}
        assert bound.status is not None and bound.status.conditions is not None
        (condition,) = bound.status.conditions
        assert (condition["type"], condition["status"]) == ("PodScheduled", "True")
        assert "reason" not in condition and condition["lastTransitionTime"]


async def test_binding_answers_as_kube_does() -> None:
    async with hub() as (server, gw), api_of(server.url) as api:
        created = await gw.create(pod("p1"))
        code, body = await bind(api, "p1", "n1", uid="not-the-uid")
        assert code == 409
        assert "Precondition failed: UID in precondition: not-the-uid" in body
        code, answer = await bind(api, "p1", "n1", uid=created.metadata.uid)
        assert code == 201
        assert json.loads(answer) == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "message": "pod p1 bound to n1",
            "code": 201,
        }
        with pytest.raises(ConflictError) as conflict:
            await gw.bind("default", "p1", "n2")
        assert str(conflict.value).endswith(
            'Operation cannot be fulfilled on pods/binding "p1": '
            'pod p1 is already assigned to node "n1"'
        )
        with pytest.raises(NotFoundError):
            await gw.bind("default", "ghost", "n1")
        await gw.create(pod("gated", schedulingGates=[{"name": "example.com/wait"}]))
        with pytest.raises(ConflictError) as conflict:
            await gw.bind("default", "gated", "n1")
        assert "pod gated has non-empty .spec.schedulingGates" in str(conflict.value)


async def test_annotations_a_binding_copies_are_still_validated() -> None:
    """The bound pod is not validated again (kube's binding does not), but what the Binding adds
    is: annotations over kube's total size make the binding 422 and leave the pod unbound."""
    async with hub() as (server, gw), api_of(server.url) as api:
        await gw.create(pod("p1"))
        code, body = await bind(api, "p1", "n1", annotations={"big": "x" * 262_145})
        assert code == 422 and "metadata.annotations: Too long" in body
        assert (await gw.get(Pod, "p1", "default")).spec.node_name is None
        code, _ = await bind(api, "p1", "n1")
        assert code == 201
        assert (await gw.get(Pod, "p1", "default")).spec.node_name == "n1"


async def test_a_pod_being_deleted_cannot_be_bound() -> None:
    async with hub() as (server, gw), api_of(server.url) as api:
        await gw.create(pod("p1"))
        await gw.merge_patch(
            Pod, "p1", {"metadata": {"finalizers": ["example.com/hold"]}}, "default"
        )
        await client.CoreV1Api(api).delete_namespaced_pod("p1", "default")
        with pytest.raises(ConflictError) as conflict:
            await gw.bind("default", "p1", "n1")
        assert "pod p1 is being deleted, cannot be assigned to a host" in str(conflict.value)


# --- deletion --------------------------------------------------------------------------------


async def test_without_the_kubelet_a_pod_goes_at_once_unless_a_grace_period_is_sent() -> None:
    async with hub() as (server, gw), api_of(server.url) as api:
        core = client.CoreV1Api(api)
        for name in ("quick", "graceful", "unbound"):
            await gw.create(pod(name))
        await gw.bind("default", "quick", "n1")
        await gw.bind("default", "graceful", "n1")
        await core.delete_namespaced_pod("quick", "default")
        with pytest.raises(NotFoundError):
            await gw.get(Pod, "quick", "default")
        # An unscheduled pod goes at once, whatever the grace period sent.
        await core.delete_namespaced_pod("unbound", "default", grace_period_seconds=30)
        with pytest.raises(NotFoundError):
            await gw.get(Pod, "unbound", "default")
        answer = await core.delete_namespaced_pod("graceful", "default", grace_period_seconds=60)
        assert answer.metadata.deletion_grace_period_seconds == 60
        terminating = await gw.get(Pod, "graceful", "default")
        assert terminating.metadata.deletion_timestamp is not None
        # A longer period does not extend it; a shorter one (here a forced delete) ends it.
        again = await core.delete_namespaced_pod("graceful", "default", grace_period_seconds=90)
        assert again.metadata.deletion_grace_period_seconds == 60
        with pytest.raises(ConflictError):
            await gw.bind("default", "graceful", "n2")
        await core.delete_namespaced_pod("graceful", "default", grace_period_seconds=0)
        with pytest.raises(NotFoundError):
            await gw.get(Pod, "graceful", "default")


async def test_a_terminating_pod_is_removed_once_its_grace_period_is_over() -> None:
    async with hub() as (server, gw), api_of(server.url) as api:
        await gw.create(pod("p1"))
        await gw.bind("default", "p1", "n1")
        await client.CoreV1Api(api).delete_namespaced_pod("p1", "default", grace_period_seconds=1)
        # A status write while it terminates does not remove it early.
        await gw.patch_status(Pod, "p1", {"status": {"phase": "Running"}}, "default")
        assert (await gw.get(Pod, "p1", "default")).metadata.deletion_timestamp is not None

        async def gone() -> bool:
            return not (await gw.list(Pod, field_selector="metadata.name=p1")).items

        await eventually(gone)
        assert server.kubelet.pending == 0


async def test_a_delete_with_a_stale_uid_precondition_is_a_conflict() -> None:
    async with hub() as (server, gw), api_of(server.url) as api:
        await gw.create(pod("p1"))
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="old"))
        with pytest.raises(ApiException) as err:
            await client.CoreV1Api(api).delete_namespaced_pod("p1", "default", body=options)
        assert err.value.status == 409
        assert (await gw.get(Pod, "p1", "default")).name == "p1"


async def test_an_eviction_deletes_with_its_grace_period() -> None:
    async with hub() as (server, gw), api_of(server.url) as api:
        await gw.create(pod("p1"))
        await gw.bind("default", "p1", "n1")
        eviction = client.V1Eviction(
            metadata=client.V1ObjectMeta(name="p1", namespace="default"),
            delete_options=client.V1DeleteOptions(grace_period_seconds=120),
        )
        response: Any = await client.CoreV1Api(api).create_namespaced_pod_eviction(
            "p1", "default", eviction, _preload_content=False
        )
        assert response.status == 201, await response.text()
        response.release()
        evicted = await gw.get(Pod, "p1", "default")
        assert evicted.metadata.deletion_grace_period_seconds == 120
        # Without the kubelet simulation, an eviction naming no grace period is immediate (as
        # a delete is): it cuts the running one short.
        await gw.evict("default", "p1")
        with pytest.raises(NotFoundError):
            await gw.get(Pod, "p1", "default")
        await gw.create(pod("p2"))
        await gw.evict("default", "p2")  # unscheduled: at once
        with pytest.raises(NotFoundError):
            await gw.get(Pod, "p2", "default")


async def test_lists_stay_in_name_order_through_creates_and_deletes() -> None:
    """The store keeps each resource's sorted keys between lists: a create or delete must show."""
    async with hub() as (_, gw):
        for name in ("p2", "p1"):
            await gw.create(pod(name))
        assert [p.name for p in (await gw.list(Pod, "default")).items] == ["p1", "p2"]
        await gw.delete(Pod, "p1", "default")
        await gw.create(pod("p0"))
        await gw.create(pod("p3"))
        assert [p.name for p in (await gw.list(Pod, "default")).items] == ["p0", "p2", "p3"]
