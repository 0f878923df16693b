"""Gangs end to end: the embedded API server with simulated kubelets in its own process, the
scheduler and the status controller through the real client. Twenty gangs of ten on room for
twelve: twelve run whole, eight wait with a phase and pod conditions saying why, no gang is
ever left partly bound; freeing four lets four more run. A Permit timeout gives the reserved
room back. A high-priority gang preempts lower-priority pods across nodes, and one that could
not fit even so preempts nothing."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from apis.core import Event, Pod
from apis.registry import parse_as
from apis.scheduling import POD_GROUP_LABEL, PodGroup, PriorityClass
from controllers.addons.gateway import PodGateway
from controllers.addons.scheduler import PodScheduler
from controllers.addons.status import StatusController
from controllers.kube.config import ClusterAccess, new_api_client
from placement.pods.config.scheduler_config import load_config
from tests.controllers.addons.cluster import create_all, node, pod, server_process
from tests.controllers.embedded.hub import eventually

pytestmark = pytest.mark.asyncio

# Gangs competing for the same room keep rejecting each other's waiting members when a rejected
# group may try again at once (podGroupBackoffSeconds 0, the default): five gangs left for room
# for one stayed pending for minutes in this test. A second of backoff for a group that just
# failed lets one gang gather its members; scheduler-plugins advises the same.
BACKOFF = {"pluginArgs": {"Coscheduling": {"podGroupBackoffSeconds": 1}}}


def group(name: str, min_member: int, **spec: Any) -> PodGroup:
    return parse_as(
        PodGroup,
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, **spec},
        },
    )


def member(name: str, gang: str, cpu: str, **spec: Any) -> Pod:
    p = pod(name, cpu, "64Mi", **spec)
    labels = {POD_GROUP_LABEL: gang}
    return p.model_copy(update={"metadata": p.metadata.model_copy(update={"labels": labels})})


def gang_of(p: Pod) -> str:
    return (p.metadata.labels or {}).get(POD_GROUP_LABEL, "")


@asynccontextmanager
async def controllers(url: str, config: dict[str, Any] | None = None) -> AsyncIterator[None]:
    """The scheduler and the status controller, each with its own client."""
    gateways = [PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)]
    gateways.append(PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01))
    scheduler = PodScheduler(gateways[0], load_config(config), http_addr=None)
    status = StatusController(gateways[1])
    try:
        await scheduler.start(sync_timeout=20)
        await status.start(sync_timeout=20)
        yield
    finally:
        await status.stop()
        await scheduler.stop()
        for gateway in gateways:
            await gateway.close()


class BindingWatch:
    """Watches the pods from the start: per gang, the members bound now and the most ever
    bound at once (a gang that never ran must never have had one member bound)."""

    def __init__(self, gateway: PodGateway) -> None:
        self.gateway = gateway
        self.bound: dict[str, set[str]] = {}
        self.most: Counter[str] = Counter()

    async def run(self) -> None:
        version = (await self.gateway.list(Pod, "default")).resource_version
        while True:  # the server ends a watch now and then: resume where it ended
            async for event in self.gateway.watch(Pod, version, "default"):
                if event.object is not None:
                    version = event.object.metadata.resource_version or version
                    self.saw(event.type, event.object)

    def saw(self, kind: str, obj: Pod) -> None:
        gang = gang_of(obj)
        if not gang:
            return
        members = self.bound.setdefault(gang, set())
        if kind == "DELETED" or not obj.spec.node_name:
            members.discard(obj.name)
        else:
            members.add(obj.name)
        self.most[gang] = max(self.most[gang], len(members))


@asynccontextmanager
async def watching(gw: PodGateway) -> AsyncIterator[BindingWatch]:
    watch = BindingWatch(gw)
    task = asyncio.create_task(watch.run())
    try:
        yield watch
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def pods_now(gw: PodGateway) -> dict[str, Pod]:
    return {p.name: p for p in (await gw.list(Pod, "default")).items}


async def phases(gw: PodGateway) -> dict[str, str | None]:
    groups = (await gw.list(PodGroup, "default")).items
    return {g.name: g.status.phase if g.status else None for g in groups}


async def test_twenty_gangs_on_room_for_twelve_run_whole_and_four_more_when_four_go() -> None:
    async with server_process("--kubelet") as (url, gw):
        await create_all(gw, [node(f"n{i:02d}", cpu="10") for i in range(12)])
        gangs = [f"g{i:02d}" for i in range(20)]
        await create_all(gw, [group(g, 10) for g in gangs])
        members = [
            member(f"{g}-m{j}", g, "1", terminationGracePeriodSeconds=1)
            for g in gangs
            for j in range(10)
        ]
        async with watching(gw) as watch, controllers(url, BACKOFF):
            await create_all(gw, members)

            async def settled() -> dict[str, Pod]:
                now = await pods_now(gw)
                per_gang = Counter(gang_of(p) for p in now.values() if p.spec.node_name)
                rejected = [
                    p
                    for p in now.values()
                    if not p.spec.node_name
                    and any(
                        c.get("reason") == "Unschedulable"
                        for c in (p.status.conditions if p.status else None) or []
                    )
                ]
                whole = sorted(per_gang.values()) == [10] * 12
                return now if whole and len(rejected) == 80 else {}

            now = await eventually(settled, timeout=120)
            running = {gang_of(p) for p in now.values() if p.spec.node_name}
            waiting = set(gangs) - running
            assert len(running) == 12 and len(waiting) == 8
            assert {g: watch.most[g] for g in waiting} == dict.fromkeys(waiting, 0)
            # Every waiting member says why.
            for p in now.values():
                if gang_of(p) in waiting:
                    [cond] = [c for c in p.status.conditions or [] if c["type"] == "PodScheduled"]  # type: ignore[union-attr]
                    assert cond["status"] == "False" and cond["message"], p.name

            async def statuses() -> dict[str, str | None] | None:
                got = await phases(gw)
                expected = {g: "Running" if g in running else "Scheduling" for g in gangs}
                return got if got == expected else None

            await eventually(statuses, timeout=30)

            # Four gangs finish and go: four waiting gangs take their room, whole.
            done = sorted(running)[:4]
            for p in now.values():
                if gang_of(p) in done:
                    await gw.delete(Pod, p.name, "default")
            for g in done:
                await gw.delete(PodGroup, g, "default")

            async def gone() -> bool:
                return not any(gang_of(p) in done for p in (await pods_now(gw)).values())

            await eventually(gone, timeout=120)  # after their grace period

            async def refilled() -> Counter[str]:
                per_gang = Counter(
                    gang_of(p) for p in (await pods_now(gw)).values() if p.spec.node_name
                )
                return per_gang if sorted(per_gang.values()) == [10] * 12 else Counter()

            per_gang = await eventually(refilled, timeout=120)
            assert len(set(per_gang) & waiting) == 4
            still = waiting - set(per_gang)
            assert {g: watch.most[g] for g in still} == dict.fromkeys(still, 0)
            await eventually(lambda: all(watch.most[g] == 10 for g in per_gang))


async def test_a_permit_timeout_gives_the_reserved_room_back() -> None:
    config = {"pluginArgs": {"Coscheduling": {"podGroupRejectPercentage": 50}}}
    async with server_process("--kubelet") as (url, gw):
        await create_all(gw, [node("n1", cpu="4"), node("n2", cpu="2")])
        await gw.create(group("job", 4, scheduleTimeoutSeconds=2))
        members = [member(f"job-m{i}", "job", "2") for i in range(3)]
        # The fourth fits nowhere: 3 of 4 is within the 50 % the group may lack and still wait.
        members.append(member("job-m3", "job", "1", nodeSelector={"zone": "nowhere"}))
        async with controllers(url, config):
            await create_all(gw, members)
            await gw.create(pod("plain", "2", "64Mi"))

            async def plain_bound() -> str:
                return (await pods_now(gw))["plain"].spec.node_name or ""

            assert await eventually(plain_bound, timeout=30) in ("n1", "n2")
            now = await pods_now(gw)
            assert [p.name for p in now.values() if gang_of(p) and p.spec.node_name] == []
            messages = [
                c["message"]
                for p in now.values()
                if gang_of(p)
                for c in (p.status.conditions if p.status else None) or []
                if c["type"] == "PodScheduled"
            ]
            assert messages, "the members say why they wait"


async def create_priorities(gw: PodGateway) -> None:
    for name, value in (("low", 0), ("high", 100)):
        doc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
        await gw.create(
            parse_as(PriorityClass, {**doc, "metadata": {"name": name}, "value": value})
        )


async def test_a_high_priority_gang_preempts_across_nodes_and_an_impossible_one_does_not() -> None:
    async with server_process("--kubelet") as (url, gw):
        await create_priorities(gw)
        await create_all(gw, [node(f"n{i}", cpu="4") for i in range(4)])
        low = [
            pod(f"low{i}", "2", "64Mi", priorityClassName="low", terminationGracePeriodSeconds=1)
            for i in range(8)
        ]
        await gw.create(group("huge", 4))
        await gw.create(group("hi", 4))
        async with controllers(url):
            await create_all(gw, low)

            async def all_low_bound() -> bool:
                return all(p.spec.node_name for p in (await pods_now(gw)).values())

            await eventually(all_low_bound, timeout=30)
            # A gang that cannot fit even with every low pod gone preempts nothing.
            await create_all(
                gw, [member(f"huge-m{i}", "huge", "5", priorityClassName="high") for i in range(4)]
            )

            async def huge_reported() -> bool:
                now = await pods_now(gw)
                return all(
                    p.status is not None and p.status.conditions
                    for p in now.values()
                    if gang_of(p) == "huge"
                )

            await eventually(huge_reported, timeout=30)
            now = await pods_now(gw)
            assert all(not p.metadata.deletion_timestamp for p in now.values())
            assert len([p for p in now.values() if p.name.startswith("low")]) == 8
            # A gang that fits once four low pods go: exactly four go, and it runs whole.
            await create_all(
                gw, [member(f"hi-m{i}", "hi", "2", priorityClassName="high") for i in range(4)]
            )

            async def hi_running() -> dict[str, Pod]:
                now = await pods_now(gw)
                bound = [p for p in now.values() if gang_of(p) == "hi" and p.spec.node_name]
                return now if len(bound) == 4 else {}

            now = await eventually(hi_running, timeout=60)
            left = [p.name for p in now.values() if p.name.startswith("low")]
            assert len(left) == 4
            assert [p.name for p in now.values() if gang_of(p) == "huge" and p.spec.node_name] == []


async def test_members_held_for_their_siblings_say_so_after_five_seconds_then_bind_together() -> (
    None
):
    async with server_process("--kubelet") as (url, gw):
        await create_all(gw, [node("n00", cpu="4"), group("trio", 3)])
        first = [member(f"trio-m{j}", "trio", "1") for j in range(2)]
        async with controllers(url):
            await create_all(gw, first)
            message = (
                'waiting for minMember pods of PodGroup "trio" to appear in scheduling queue '
                "(minMember: 3)"
            )

            async def reported() -> list[dict[str, Any]]:
                conditions = [
                    c
                    for p in (await pods_now(gw)).values()
                    for c in (p.status.conditions if p.status else None) or []
                    if c.get("reason") == "NotReadyForScheduling"
                ]
                return conditions if len(conditions) == 2 else []

            conditions = await eventually(reported, timeout=30)
            assert {(c["type"], c["status"], c["message"]) for c in conditions} == {
                ("PodScheduled", "False", message)
            }
            events = [
                e
                for e in (await gw.list(Event, "default")).items
                if e.reason == "NotReadyForScheduling"
            ]
            assert sorted((e.type, e.regarding.name, e.note) for e in events) == [  # type: ignore[union-attr]
                ("Normal", "trio-m0", message),
                ("Normal", "trio-m1", message),
            ]
            assert not [
                e for e in (await gw.list(Event, "default")).items if e.reason == "FailedScheduling"
            ]

            await create_all(gw, [member("trio-m2", "trio", "1")])

            async def all_bound() -> dict[str, Pod]:
                now = await pods_now(gw)
                return now if all(p.spec.node_name for p in now.values()) else {}

            now = await eventually(all_bound, timeout=30)
            for p in now.values():  # the binding replaced the condition
                [cond] = [c for c in p.status.conditions or [] if c["type"] == "PodScheduled"]  # type: ignore[union-attr]
                assert cond["status"] == "True", p.name
