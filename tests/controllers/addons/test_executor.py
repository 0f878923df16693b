"""The action executor against the embedded API server, through the real client: binds with
their outcomes (ok, conflict, failure), victims deleted, pod and PodGroup statuses patched,
events recorded, the writes of one pod kept in order, and back-pressure."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from apis.core import Event, Node, Pod
from apis.meta import KubeObject
from apis.registry import parse_as
from apis.scheduling import PodGroup
from controllers.addons.emitter import EventEmitter
from controllers.addons.executor import ActionExecutor, disruption_patch, pod_status_patch
from controllers.addons.gateway import PodGateway
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.kube.errors import ApiError
from placement.pods.framework.events import (
    BindPod,
    BindResult,
    DeletePod,
    EmitEvent,
    PatchObjectStatus,
    PatchPodStatus,
    PodCondition,
)
from tests.controllers.embedded.hub import ensure_namespaces, eventually, pod

WALL = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
UNSCHEDULABLE = {
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/1 nodes are available: 1 Insufficient cpu.",
}
# A victim's condition as the engine decides it (words of its own: the shell has none).
MARK = PodCondition("DisruptionTarget", "True", "PreemptionByScheduler", "s: the engine's words")


class SlowPatches(PodGateway):
    """Records the method of every request; status patches take a while."""

    requests: list[str]

    async def _open(self, method: str, path: str, **kwargs: Any) -> aiohttp.ClientResponse:
        self.requests.append(f"{method} {path.rsplit('/', 1)[-1]}")
        if method == "PATCH":
            await asyncio.sleep(0.05)
        return await super()._open(method, path, **kwargs)


class Rig:
    def __init__(self, server: EmbeddedApiServer, gateway: SlowPatches) -> None:
        self.server = server
        self.gateway = gateway
        self.results: list[BindResult] = []
        self.objects: dict[tuple[str, str], KubeObject] = {}
        self._refreshers: list[asyncio.Task[None]] = []
        self.recorder = EventEmitter(gateway, controller="ocm-pod-scheduler", wall=lambda: WALL)
        self.executor = ActionExecutor(
            gateway,
            self.recorder,
            on_bind_result=self.results.append,
            lookup=lambda kind, key: self.objects.get((kind, key)),
            wall=lambda: WALL,
            concurrency=4,
        )

    async def pod(self, name: str, **spec: Any) -> Pod:
        created = await self.gateway.create(pod(name, "team", **{"schedulerName": "s", **spec}))
        self.objects[("Pod", created.key)] = created
        return created

    async def settle(self) -> None:
        await self.executor.drain(5)
        await self.recorder.flush()

    async def cache(self, *objects: KubeObject) -> None:
        """Keep `objects` in the lookup as the scheduler's informers would: read again from
        the server every 20 ms until the rig closes."""

        async def refresh() -> None:
            while True:
                for obj in objects:
                    with contextlib.suppress(ApiError):
                        fresh = await self.gateway.get(type(obj), obj.name, obj.namespace)
                        self.objects[(obj.KIND, obj.key)] = fresh
                await asyncio.sleep(0.02)

        for obj in objects:
            self.objects[(obj.KIND, obj.key)] = obj
        self._refreshers.append(asyncio.create_task(refresh()))


@asynccontextmanager
async def rig() -> AsyncIterator[Rig]:
    server = EmbeddedApiServer()
    await server.start()
    gateway = SlowPatches(await new_api_client(ClusterAccess(url=server.url)), backoff=0.01)
    gateway.requests = []
    rig = Rig(server, gateway)
    try:
        await ensure_namespaces(gateway, ["team"])
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
        await gateway.create(parse_as(Node, node))
        yield rig
    finally:
        for task in rig._refreshers:
            task.cancel()
        await gateway.close()
        await server.stop()


@pytest.mark.asyncio
async def test_bind_ok_conflict_gone_and_failure() -> None:
    async with rig() as r:
        web = await r.pod("web")
        taken = await r.pod("taken", nodeName="n1")
        r.executor.submit(
            [
                BindPod(web.key, web.metadata.uid or "", "n1"),
                BindPod(taken.key, taken.metadata.uid or "", "n1"),  # bound already: 409
                BindPod("team/ghost", "u-ghost", "n1"),  # no such pod: 404
            ]
        )
        await r.settle()
        by_key = {result.key: result for result in r.results}
        assert by_key["team/web"] == BindResult("team/web", web.metadata.uid or "", "n1", True)
        assert not by_key["team/taken"].ok and by_key["team/taken"].conflict
        assert not by_key["team/ghost"].ok and by_key["team/ghost"].conflict
        assert (await r.gateway.get(Pod, "web", "team")).spec.node_name == "n1"
        assert r.executor.counts.bound == 1
        assert r.executor.counts.bind_conflicts == 2


@pytest.mark.asyncio
async def test_a_bind_refused_for_another_reason_is_a_failure_to_retry() -> None:
    async with rig() as r:
        web = await r.pod("web")
        r.executor.submit([BindPod(web.key, web.metadata.uid or "", "")])  # 400: no node
        await r.settle()
        assert len(r.results) == 1
        assert not r.results[0].ok and not r.results[0].conflict
        assert r.executor.counts.bind_failures == 1


@pytest.mark.asyncio
async def test_victims_are_deleted_and_a_gone_victim_is_no_failure() -> None:
    async with rig() as r:
        victim = await r.pod("victim", nodeName="n1")
        r.executor.submit(
            [
                DeletePod(victim.key, victim.metadata.uid or "", "preempted by team/vip", MARK),
                DeletePod("team/ghost", "u-ghost", "preempted by team/vip", MARK),
            ]
        )
        await r.settle()
        assert [p.name for p in (await r.gateway.list(Pod, "team")).items] == []
        assert r.executor.counts.deleted == 1
        assert r.executor.counts.delete_failures == 0


@pytest.mark.asyncio
async def test_a_victim_is_marked_as_a_disruption_target_before_its_delete() -> None:
    async with rig() as r:
        victim = await r.pod("victim", nodeName="n1")
        vip = await r.pod("vip")
        r.gateway.requests.clear()
        uid = victim.metadata.uid or ""
        r.executor.submit([DeletePod(victim.key, uid, "preempted", MARK, preemptor=vip.key)])
        await r.settle()
        assert r.gateway.requests == ["PATCH status", "DELETE victim"]
        assert r.executor.counts.deleted == 1


@pytest.mark.asyncio
async def test_the_victim_gets_exactly_the_engines_condition() -> None:
    async with rig() as r:
        victim = await r.pod("victim", nodeName="n1")
        vip = await r.pod("vip", schedulerName="another")  # not where the words come from
        uid = victim.metadata.uid or ""
        r.server.faults.fail_next("delete", 403)  # keep the victim to read what it was given
        r.executor.submit([DeletePod(victim.key, uid, "preempted", MARK, preemptor=vip.key)])
        await r.settle()
        stored = await r.gateway.get(Pod, "victim", "team")
        assert stored.status is not None
        marks = [c for c in stored.status.conditions or [] if c["type"] == "DisruptionTarget"]
        assert marks == [
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": "s: the engine's words",
                "lastProbeTime": None,
                "lastTransitionTime": "2026-01-02T03:04:05Z",
                "observedGeneration": 1,  # the pod's generation, as kube-scheduler 1.36 writes
            }
        ]


@pytest.mark.asyncio
async def test_a_victim_whose_mark_failed_is_not_deleted_and_a_marked_one_not_patched() -> None:
    async with rig() as r:
        victim = await r.pod("victim", nodeName="n1")
        uid = victim.metadata.uid or ""
        r.server.faults.fail_next("patch", 403)
        r.gateway.requests.clear()
        r.executor.submit([DeletePod(victim.key, uid, "preempted", MARK)])
        await r.settle()
        assert r.gateway.requests == ["PATCH status"]  # refused: no DELETE follows
        assert r.executor.counts.delete_failures == 1
        assert (await r.gateway.get(Pod, "victim", "team")).metadata.deletion_timestamp is None
        # The victim as cached carries the engine's condition already: only the DELETE goes.
        marked = victim.to_wire()
        mark = {**MARK.to_wire(), "lastTransitionTime": "x"}
        marked["status"] = {"conditions": [{**mark, "observedGeneration": 1}]}
        r.objects[("Pod", victim.key)] = parse_as(Pod, marked)
        r.gateway.requests.clear()
        r.executor.submit([DeletePod(victim.key, uid, "preempted", MARK)])
        await r.settle()
        assert r.gateway.requests == ["DELETE victim"]
        assert r.executor.counts.deleted == 1


def test_the_disruption_target_condition_is_the_engines_and_written_once() -> None:
    victim = parse_as(
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "victim", "namespace": "team"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
    )
    kube = PodCondition(
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
        "s: preempting to accommodate a higher priority pod",
    )
    patch = disruption_patch(victim, kube, WALL)
    assert patch == {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {
                    "lastProbeTime": None,
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "PreemptionByScheduler",
                    "message": "s: preempting to accommodate a higher priority pod",
                    "lastTransitionTime": "2026-01-02T03:04:05Z",
                },
            ]
        }
    }
    wire = victim.to_wire()
    wire["status"] = patch["status"]
    assert disruption_patch(parse_as(Pod, wire), kube, WALL) == {}
    # Another decision (a new message) is written again, keeping the transition time.
    other = disruption_patch(parse_as(Pod, wire), MARK, WALL.replace(year=2027))
    assert other["status"]["conditions"][-1] == {
        "lastProbeTime": None,
        **MARK.to_wire(),
        "lastTransitionTime": "2026-01-02T03:04:05Z",
    }


@pytest.mark.asyncio
async def test_unschedulable_condition_patched_once_keeping_other_conditions() -> None:
    async with rig() as r:
        web = await r.pod("web")
        web = await r.gateway.patch_status(
            Pod,
            "web",
            {"status": {"conditions": [{"type": "Custom", "status": "True"}]}},
            "team",
        )
        r.objects[("Pod", web.key)] = web
        action = PatchPodStatus(web.key, web.metadata.uid or "", condition=UNSCHEDULABLE)
        r.executor.submit([action])
        await r.settle()
        stored = await r.gateway.get(Pod, "web", "team")
        assert stored.status is not None
        conditions = {c["type"]: c for c in stored.status.conditions or []}
        assert conditions["Custom"]["status"] == "True"
        assert conditions["PodScheduled"] == {
            "type": "PodScheduled",
            "lastProbeTime": None,
            "lastTransitionTime": "2026-01-02T03:04:05Z",
            "observedGeneration": 1,  # the pod's generation, as kube-scheduler 1.36 writes
            **UNSCHEDULABLE,
        }
        # The same decision again, on the pod as now cached: nothing to send.
        r.objects[("Pod", web.key)] = stored
        r.executor.submit([action])
        await r.settle()
        assert r.executor.counts.status_patches == 1


def test_status_patch_keeps_the_transition_time_when_only_the_message_changes() -> None:
    old = {"type": "PodScheduled", "lastTransitionTime": "2025-01-01T00:00:00Z", **UNSCHEDULABLE}
    cached = parse_as(
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "team", "uid": "u"},
            "spec": {"containers": [{"name": "main"}]},
            "status": {"conditions": [old], "nominatedNodeName": "n1"},
        },
    )
    new = {**UNSCHEDULABLE, "message": "0/2 nodes are available: 2 Insufficient cpu."}
    patch = pod_status_patch(cached, PatchPodStatus("team/web", "u", new, ""), WALL)
    assert patch == {
        "status": {
            "nominatedNodeName": None,
            "conditions": [
                {
                    "type": "PodScheduled",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                    **new,
                }
            ],
        }
    }
    same = PatchPodStatus("team/web", "u", UNSCHEDULABLE, "n1")
    assert pod_status_patch(cached, same, WALL) == {}


def test_conditions_carry_the_pods_generation_as_kube_scheduler_writes_them() -> None:
    old = {
        "type": "PodScheduled",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
        "observedGeneration": 1,
        **UNSCHEDULABLE,
    }
    wire: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "team", "uid": "u", "generation": 2},
        "spec": {"containers": [{"name": "main"}]},
        "status": {"conditions": [old]},
    }
    # Same decision, newer spec (generation 2): restated for it, the transition time kept.
    same = PatchPodStatus("team/web", "u", UNSCHEDULABLE)
    patch = pod_status_patch(parse_as(Pod, wire), same, WALL)
    assert patch["status"]["conditions"] == [
        {**old, "lastProbeTime": None, "observedGeneration": 2}
    ]
    wire["status"]["conditions"] = patch["status"]["conditions"]
    assert pod_status_patch(parse_as(Pod, wire), same, WALL) == {}
    marked = disruption_patch(parse_as(Pod, wire), MARK, WALL)
    assert marked["status"]["conditions"][-1]["observedGeneration"] == 2
    # A server that keeps no generation: no observedGeneration written.
    del wire["metadata"]["generation"]
    fresh = pod_status_patch(parse_as(Pod, {**wire, "status": {}}), same, WALL)
    assert "observedGeneration" not in fresh["status"]["conditions"][0]


@pytest.mark.asyncio
async def test_status_of_a_replaced_pod_is_not_patched() -> None:
    async with rig() as r:
        web = await r.pod("web")
        r.executor.submit([PatchPodStatus(web.key, "another-uid", condition=UNSCHEDULABLE)])
        await r.settle()
        assert r.executor.counts.status_patches == 0
        assert not [q for q in r.gateway.requests if q.startswith("PATCH")]


@pytest.mark.asyncio
async def test_writes_of_one_pod_run_in_decision_order() -> None:
    async with rig() as r:
        web = await r.pod("web")
        uid = web.metadata.uid or ""
        r.gateway.requests.clear()
        # The status patch is slow; the bind decided after it must still land after it.
        r.executor.submit(
            [PatchPodStatus(web.key, uid, condition=UNSCHEDULABLE), BindPod(web.key, uid, "n1")]
        )
        await r.settle()
        assert r.gateway.requests == ["PATCH status", "POST binding"]


@pytest.mark.asyncio
async def test_events_recorded_about_the_cached_object() -> None:
    async with rig() as r:
        web = await r.pod("web")
        r.executor.submit(
            [
                EmitEvent(
                    ("Pod", web.key, web.metadata.uid or ""),
                    "Normal",
                    "Scheduled",
                    "Successfully assigned team/web to n1",
                ),
                EmitEvent(("Pod", "team/gone", "u-gone"), "Warning", "FailedScheduling", "x"),
            ]
        )
        await r.settle()
        events = sorted((await r.gateway.list(Event, "team")).items, key=lambda e: e.reason or "")
        assert [(e.reason, e.type, e.regarding.name) for e in events] == [  # type: ignore[union-attr]
            ("FailedScheduling", "Warning", "gone"),
            ("Scheduled", "Normal", "web"),
        ]
        scheduled = events[1]
        assert scheduled.note == "Successfully assigned team/web to n1"
        assert scheduled.regarding is not None
        assert scheduled.regarding.uid == web.metadata.uid
        assert scheduled.regarding.resource_version == web.metadata.resource_version
        assert scheduled.reporting_controller == "ocm-pod-scheduler"


@pytest.mark.asyncio
async def test_podgroup_status_patched() -> None:
    async with rig() as r:
        group = parse_as(
            PodGroup,
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "gang", "namespace": "team"},
                "spec": {"minMember": 2},
            },
        )
        await r.gateway.create(group)
        r.executor.submit([PatchObjectStatus("PodGroup", "team/gang", {"phase": "Scheduling"})])
        await r.settle()
        stored = await r.gateway.get(PodGroup, "gang", "team")
        assert stored.status is not None and stored.status.phase == "Scheduling"


@pytest.mark.asyncio
async def test_submit_never_waits_and_wait_room_holds_scheduling_back() -> None:
    async with rig() as r:
        pods = [await r.pod(f"p{i}") for i in range(40)]
        r.executor.max_pending = 8
        r.executor.submit([BindPod(p.key, p.metadata.uid or "", "n1") for p in pods])
        assert r.executor.pending == 40  # queued at once, none awaited
        assert r.results == []
        await asyncio.wait_for(r.executor.wait_room(), 5)
        assert r.executor.pending < 8
        await r.settle()
        assert len(r.results) == 40 and all(result.ok for result in r.results)
        await eventually(lambda: r.executor.pending == 0)


class Fence:
    """A WriteFence (`controllers.runtime.echoes`) that the test closes by hand."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()

    def remaining(self) -> float:
        return 0.0 if self.closed.is_set() else 60.0

    async def wait_deadline(self) -> None:
        await self.closed.wait()


def fenced_executor(r: Rig, fence: Fence) -> tuple[ActionExecutor, EventEmitter]:
    """An executor writing as the scheduler does: through the gateway's fenced copy."""
    writer = SlowPatches.fenced(r.gateway, fence)
    emitter = EventEmitter(writer, controller="ocm-pod-scheduler", wall=lambda: WALL)
    executor = ActionExecutor(
        writer,
        emitter,
        on_bind_result=r.results.append,
        lookup=lambda kind, key: r.objects.get((kind, key)),
        wall=lambda: WALL,
        concurrency=4,
    )
    return executor, emitter


@pytest.mark.asyncio
async def test_past_the_lease_deadline_no_write_of_any_kind_reaches_the_server() -> None:
    async with rig() as r:
        web = await r.pod("web")
        victim = await r.pod("victim", nodeName="n1")
        group = parse_as(
            PodGroup,
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "team"},
                "spec": {"minMember": 1},
            },
        )
        await r.gateway.create(group)
        fence = Fence()
        executor, emitter = fenced_executor(r, fence)
        fence.closed.set()  # the deadline has passed
        served = dict(r.server.audit)
        uid = web.metadata.uid or ""
        executor.submit(
            [
                BindPod(web.key, uid, "n1"),
                DeletePod(victim.key, victim.metadata.uid or "", "preempted by team/web", MARK),
                PatchPodStatus(web.key, uid, condition=UNSCHEDULABLE),
                PatchObjectStatus("PodGroup", "team/g", {"phase": "Pending"}),
                EmitEvent(("Pod", web.key, uid), "Normal", "Scheduled", "assigned"),
            ]
        )
        await executor.drain(5)
        await emitter.flush()
        assert dict(r.server.audit) == served  # not one request arrived
        assert r.results == [
            BindResult(
                web.key,
                uid,
                "n1",
                False,
                False,
                "not the leader (lease deadline passed): write not sent",
            )
        ]  # a plain failure: the engine forgets the assumed pod, the pod stays pending
        assert executor.counts.fenced == 4 and emitter.dropped == 1
        assert (executor.counts.bound, executor.counts.deleted) == (0, 0)
        assert (await r.gateway.get(Pod, "victim", "team")).metadata.deletion_timestamp is None


@pytest.mark.asyncio
async def test_writes_in_flight_at_the_lease_deadline_are_abandoned() -> None:
    async with rig() as r:
        web = await r.pod("web")
        victim = await r.pod("victim", nodeName="n1")
        fence = Fence()
        executor, _ = fenced_executor(r, fence)
        r.server.faults.latency = 0.5  # the server is slow to answer: the writes stay in flight
        uid = web.metadata.uid or ""
        executor.submit(
            [
                BindPod(web.key, uid, "n1"),
                DeletePod(victim.key, victim.metadata.uid or "", "preempted by team/web", MARK),
            ]
        )
        sent = {"POST binding", "PATCH status"}  # the victim's DisruptionTarget, before its DELETE
        await eventually(lambda: _true(sent <= set(r.gateway.requests)))
        fence.closed.set()
        await executor.drain(5)
        assert executor.pending == 0  # settled at the deadline, not when the server answers
        assert r.results == [
            BindResult(
                web.key,
                uid,
                "n1",
                False,
                False,
                "not the leader (lease deadline passed): write abandoned",
            )
        ]
        assert executor.counts.fenced == 2
        assert (executor.counts.bound, executor.counts.deleted) == (0, 0)
        r.server.faults.latency = 0.0


async def _true(value: bool) -> bool:
    return value
