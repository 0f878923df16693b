"""The PodGroup and ElasticQuota status controller on the embedded API server, through the real
client: statuses follow the pods, only changes are written, events on transitions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest

from apis.core import Event, Node, Pod
from apis.registry import parse_as
from apis.scheduling import POD_GROUP_LABEL, ElasticQuota, PodGroup
from controllers.addons.status import StatusController
from controllers.kube.gateway import Gateway
from controllers.runtime.leader import LeaderConfig
from controllers.runtime.queue import ManualClock
from tests.controllers.embedded.hub import ensure_namespaces, eventually, hub

pytestmark = pytest.mark.asyncio


def pod(
    name: str, ns: str, *, group: str | None = None, cpu: str = "500m", node: str = "n1"
) -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if group is not None:
        meta["labels"] = {POD_GROUP_LABEL: group}
    container = {"name": "main", "resources": {"requests": {"cpu": cpu}}}
    spec = {"containers": [container], "nodeName": node}
    return parse_as(Pod, {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def node(name: str, cpu: str) -> Node:
    doc = {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": 110}}}
    return parse_as(Node, {"apiVersion": "v1", "kind": "Node", **doc})


def group(name: str, ns: str, min_member: int) -> PodGroup:
    doc = {"metadata": {"name": name, "namespace": ns}, "spec": {"minMember": min_member}}
    return parse_as(
        PodGroup, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", **doc}
    )


def quota(name: str, ns: str, **spec: Any) -> ElasticQuota:
    doc = {"metadata": {"name": name, "namespace": ns}, "spec": spec}
    return parse_as(
        ElasticQuota, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota", **doc}
    )


@asynccontextmanager
async def running(gw: Gateway) -> AsyncIterator[StatusController]:
    controller = StatusController(gw)
    await controller.start(sync_timeout=10)
    try:
        yield controller
    finally:
        await controller.stop()


async def set_phase(gw: Gateway, name: str, ns: str, phase: str) -> None:
    await gw.patch_status(Pod, name, {"status": {"phase": phase}}, ns)


async def reasons(gw: Gateway, ns: str, name: str) -> list[str]:
    events = (await gw.list(Event, ns)).items
    return [e.reason or "" for e in events if e.regarding is not None and e.regarding.name == name]


async def test_a_gang_goes_from_pending_to_running_to_finished_with_its_counters() -> None:
    async with hub(namespaces=["spark"]) as (_, gw):
        await gw.create(node("n1", "8"))
        await gw.create(group("job", "spark", 2))
        await gw.create(pod("driver", "spark", group="job"))
        async with running(gw) as controller:

            async def phase() -> str | None:
                found = await gw.get(PodGroup, "job", "spark")
                return found.status.phase if found.status else None

            assert await eventually(lambda: _is(phase, "Pending")) == "Pending"
            await gw.create(pod("executor", "spark", group="job"))
            await eventually(lambda: _is(phase, "Scheduling"))
            # Members of a same-named group elsewhere do not count.
            await ensure_namespaces(gw, ["other"])
            for name in ("a", "b", "c"):
                await gw.create(pod(name, "other", group="job"))
            for name in ("driver", "executor"):
                await set_phase(gw, name, "spark", "Running")
            await eventually(lambda: _is(phase, "Running"))
            status = (await gw.get(PodGroup, "job", "spark")).status
            assert status is not None
            assert (status.running, status.scheduled, status.succeeded) == (2, 2, 0)
            assert status.schedule_start_time is not None
            for name in ("driver", "executor"):
                await set_phase(gw, name, "spark", "Succeeded")
            await eventually(lambda: _is(phase, "Finished"))
            await controller.wait_idle()
            written = controller.writes
            controller.resync_now()  # nothing changed: nothing written
            await controller.wait_idle()
            assert controller.writes == written
            found = await eventually(lambda: _events(gw, "spark", "job", 4))
            assert found == ["Pending", "Scheduling", "Running", "Finished"]


async def _is(read: Any, value: str) -> str | None:
    got = await read()
    return got if got == value else None


async def _events(gw: Gateway, ns: str, name: str, count: int) -> list[str] | None:
    found = sorted(
        await reasons(gw, ns, name), key=["Pending", "Scheduling", "Running", "Finished"].index
    )
    return found if len(found) >= count else None


async def test_quotas_report_used_duplicates_and_min_above_capacity() -> None:
    async with hub(namespaces=["team-a", "team-b"]) as (_, gw):
        await gw.create(node("n1", "4"))
        await gw.create(
            quota("main", "team-a", min={"cpu": "2"}, max={"cpu": "4", "memory": "1Gi"})
        )
        await gw.create(pod("p1", "team-a"))
        await gw.create(pod("p2", "team-a", cpu="1"))
        async with running(gw) as controller:

            async def used() -> dict[str, str] | None:
                status = (await gw.get(ElasticQuota, "main", "team-a")).status
                if status is None or status.used is None:
                    return None
                return {k: str(v) for k, v in status.used.items()}

            assert await eventually(lambda: _equal(used, {"cpu": "1500m", "memory": "0"}))
            await set_phase(gw, "p2", "team-a", "Succeeded")
            assert await eventually(lambda: _equal(used, {"cpu": "500m", "memory": "0"}))
            # A second quota in the namespace (same second: the name decides): flagged, with a
            # Warning event naming the first.
            await gw.create(quota("second", "team-a", max={"cpu": "1"}))

            async def condition(name: str, ns: str, kind: str) -> tuple[str, str] | None:
                status = (await gw.get(ElasticQuota, name, ns)).status
                for c in (status.conditions if status else None) or ():
                    if c.type == kind:
                        return c.status, c.reason
                return None

            async def duplicate() -> bool:
                return await condition("second", "team-a", "Active") == ("False", "Duplicate")

            await eventually(duplicate)
            assert "DuplicateElasticQuota" in await eventually(
                lambda: reasons(gw, "team-a", "second")
            )
            # Min adding up above the node: surfaced on every quota in force.
            await gw.create(quota("main", "team-b", min={"cpu": "3"}))

            async def over(ns: str) -> bool:
                got = await condition("main", ns, "MinWithinCapacity")
                return got == ("False", "MinAboveCapacity")

            await eventually(lambda: over("team-a"))
            await eventually(lambda: over("team-b"))
            # A bigger node makes it fit again.
            await gw.create(node("n2", "4"))

            async def fits() -> bool:
                got = await condition("main", "team-b", "MinWithinCapacity")
                return got == ("True", "Fits")

            await eventually(fits)
            await controller.wait_idle()


async def _equal(read: Any, value: dict[str, str]) -> bool:
    return bool(await read() == value)


@pytest.mark.parametrize(
    ("mode", "kinds"),
    [
        pytest.param("on", ["PodScheduler", "StatusController"], id="beside-the-scheduler"),
        pytest.param("only", ["StatusController"], id="alone"),
    ],
)
async def test_scheduler_run_starts_the_status_controller_beside_it_or_alone(
    mode: str, kinds: list[str]
) -> None:
    from controllers.addons.scheduler import SchedulerOptions, _start

    async with hub(namespaces=["spark"]) as (server, gw):
        await gw.create(group("job", "spark", 3))
        opened: list[Any] = []
        options = SchedulerOptions(url=server.url, http_addr=None, status_controller=mode)
        try:
            started = await _start(options, opened)
            assert [type(c).__name__ for c in started] == kinds

            async def pending() -> bool:
                found = (await gw.get(PodGroup, "job", "spark")).status
                return found is not None and found.phase == "Pending"

            await eventually(pending)
        finally:
            for item in reversed(opened):
                await (item.stop() if hasattr(item, "stop") else item.close())


class Recording(StatusController):
    """Notes every event outcome (`created`, `exists`, ...) by reason."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: list[tuple[str, str]] = []

    def event_recorded(self, reason: str, outcome: str) -> None:
        self.outcomes.append((reason, outcome))


async def timeouts(gw: Gateway, ns: str, name: str) -> list[Event]:
    events = (await gw.list(Event, ns)).items
    return [e for e in events if e.reason == "Timeout" and e.regarding and e.regarding.name == name]


async def test_a_gang_waiting_48_hours_is_warned_once_at_the_mark_even_across_a_restart() -> None:
    async with hub(namespaces=["spark"]) as (_, gw):
        made = await gw.create(group("job", "spark", 2))
        await gw.create(pod("driver", "spark", group="job"))  # 1 of 2: the gang waits
        created = made.metadata.creation_timestamp
        assert created is not None
        clock = ManualClock()
        # Seven seconds off the resync's 600 s period, so that only the rule's requeue can
        # wake the group at its 48-hour mark.
        offset = 7.0

        def wall() -> datetime:
            return created + timedelta(seconds=clock.now() + offset)

        def start() -> Recording:
            return Recording(gw, clock=clock, wall=wall)

        controller = start()
        await controller.start(sync_timeout=10)
        try:
            await controller.wait_idle()
            mark = 48 * 3600 - offset
            await clock.advance(mark - 1)
            await controller.wait_idle()
            await controller.recorder.flush()
            assert await timeouts(gw, "spark", "job") == []
            await clock.advance(1)  # the mark: no watch event, no resync, only the requeue
            found = await eventually(lambda: timeouts(gw, "spark", "job"))
            assert [(e.type, e.note, e.regarding and e.regarding.uid) for e in found] == [
                ("Warning", "schedule time longer than 48 hours", made.metadata.uid)
            ]
            status = (await gw.get(PodGroup, "job", "spark")).status
            assert status is not None and status.phase == "Pending"  # unchanged
            # Later reconciles (a member changes, resyncs) do not repeat it.
            await gw.create(pod("sidecar", "spark"))
            await set_phase(gw, "driver", "spark", "Pending")
            controller.resync_now()
            await clock.advance(3600)
            await controller.wait_idle()
            await controller.recorder.flush()
            assert len(await timeouts(gw, "spark", "job")) == 1
            assert controller.outcomes.count(("Timeout", "created")) == 1
        finally:
            await controller.stop()
        # A restart (or a new leader): the server refuses the second copy of the Event.
        controller = start()
        await controller.start(sync_timeout=10)
        try:
            await controller.wait_idle()
            await controller.recorder.flush()
            assert controller.outcomes == [("Timeout", "exists")]
            assert len(await timeouts(gw, "spark", "job")) == 1
        finally:
            await controller.stop()


async def test_with_leader_election_its_writes_pass_its_own_leases_fence() -> None:
    async with hub() as (_, gw):
        leader = LeaderConfig("ocm-pod-scheduler-status", "default", identity="a")
        controller = StatusController(gw, leader=leader)
        assert controller.elector is not None
        assert controller.writer.fence is controller.elector  # status patches and events
        assert StatusController(gw).writer.fence is None  # no election: never refused
