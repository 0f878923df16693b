"""The pod scheduler end to end: an embedded API server in a separate process, the scheduler
through the real client. Mixed pods on a mixed node pool are bound or reported Unschedulable
with kube-scheduler's message, a node added later unblocks them, a kill -9 and a restart lose
and double-bind nothing, a preemption deletes its victim and binds the preemptor once the victim
is gone, and a standby takes over from a leader that stops."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from apis.core import Event, Node, Pod
from apis.registry import parse_as
from apis.scheduling import PriorityClass
from controllers.addons.gateway import PodGateway
from controllers.addons.scheduler import PodScheduler, load_scheduler_config
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.runtime.leader import LeaderConfig
from placement.pods.cluster.requests import pod_requests
from tests.controllers.addons.cluster import (
    ROOT,
    create_all,
    node,
    pod,
    server_process,
)
from tests.controllers.embedded.hub import eventually

SPOT_TAINT = [{"key": "spot", "value": "true", "effect": "NoSchedule"}]
TOLERATE_SPOT = [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]


@asynccontextmanager
async def scheduler(url: str, **options: Any) -> AsyncIterator[PodScheduler]:
    gateway = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
    running = PodScheduler(gateway, load_scheduler_config(None), http_addr="127.0.0.1:0", **options)
    try:
        await running.start(sync_timeout=20)
        yield running
    finally:
        await running.stop()
        await gateway.close()


async def pods(gateway: PodGateway) -> dict[str, Pod]:
    return {p.name: p for p in (await gateway.list(Pod)).items}


def condition(p: Pod) -> dict[str, Any]:
    found = [
        c for c in (p.status.conditions if p.status else None) or [] if c["type"] == "PodScheduled"
    ]
    assert len(found) <= 1, found
    return found[0] if found else {}


def overcommitted(nodes: list[Node], all_pods: dict[str, Pod]) -> dict[str, tuple[int, int]]:
    """Nodes whose bound pods request more cpu or pods than they have."""
    used: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for p in all_pods.values():
        if p.spec.node_name:
            used[p.spec.node_name] += pod_requests(p).get("cpu", 0)
            count[p.spec.node_name] += 1
    out = {}
    for n in nodes:
        alloc = (n.status.allocatable if n.status else None) or {}
        cpu = int(float(str(alloc["cpu"])) * 1000)
        if used[n.name] > cpu or count[n.name] > int(str(alloc["pods"])):
            out[n.name] = (used[n.name], cpu)
    return out


def mixed_pods() -> list[Pod]:
    """193 schedulable pods of six shapes, 3 too big for any node, 4 selecting a label no
    node has yet."""
    out = []
    for i in range(193):
        shape = i % 6
        name = f"app-{i:03d}"
        if shape == 0:
            out.append(pod(name, "100m", "128Mi"))
        elif shape == 1:
            out.append(pod(name, "250m", "256Mi"))
        elif shape == 2:
            out.append(pod(name, "500m", "512Mi", nodeSelector={"capacity": "on-demand"}))
        elif shape == 3:
            out.append(pod(name, "1", "1Gi", tolerations=TOLERATE_SPOT))
        elif shape == 4:
            out.append(
                pod(
                    name,
                    "200m",
                    "256Mi",
                    nodeSelector={"capacity": "spot"},
                    tolerations=TOLERATE_SPOT,
                )
            )
        else:
            init = {"name": "setup", "resources": {"requests": {"cpu": "2"}}}
            zone_b = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "preference": {
                            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]
                        },
                    }
                ]
            }
            out.append(
                pod(
                    name,
                    "300m",
                    "64Mi",
                    initContainers=[init],
                    affinity={"nodeAffinity": zone_b},
                )
            )
    out += [pod(f"huge-{i}", "50", "1Gi") for i in range(3)]
    out += [pod(f"ssd-{i}", "100m", "64Mi", nodeSelector={"disk": "ssd"}) for i in range(4)]
    return out


def pool() -> list[Node]:
    on_demand = [
        node(f"od-{i}", labels={"capacity": "on-demand", "zone": "ab"[i % 2]}) for i in range(6)
    ]
    spot = [
        node(f"spot-{i}", labels={"capacity": "spot", "zone": "ab"[i % 2]}, taints=SPOT_TAINT)
        for i in range(4)
    ]
    return on_demand + spot


# No node could ever hold these pods (more cpu than any node has; no node with the label), so
# DefaultPreemption adds kube-scheduler's verdict that preemption cannot help.
NOT_HELPFUL = (
    " no new claims to deallocate, "
    "preemption: 0/10 nodes are available: 10 Preemption is not helpful for scheduling."
)
HUGE = (
    "0/10 nodes are available: 4 node(s) had untolerated taint {spot: true}, 6 Insufficient cpu."
    + NOT_HELPFUL
)
SSD = (
    "0/10 nodes are available: 4 node(s) had untolerated taint {spot: true}, "
    "6 node(s) didn't match Pod's node affinity/selector." + NOT_HELPFUL
)


@pytest.mark.asyncio
async def test_mixed_pods_bound_or_unschedulable_with_kube_message_until_a_node_comes() -> None:
    async with server_process() as (url, gw):
        await create_all(gw, pool())
        await create_all(gw, mixed_pods())
        async with scheduler(url) as running:

            async def settled() -> dict[str, Pod]:
                now = await pods(gw)
                bound = [p for p in now.values() if p.spec.node_name]
                reported = [p for p in now.values() if condition(p).get("reason")]
                return now if len(bound) == 193 and len(reported) == 7 else {}

            now = await eventually(settled, timeout=30)
            nodes = {n.name: n for n in (await gw.list(Node)).items}
            assert overcommitted(list(nodes.values()), now) == {}
            for p in now.values():
                if p.name.startswith("app-"):
                    target = nodes[p.spec.node_name or ""]
                    labels = target.metadata.labels or {}
                    if p.spec.node_selector:
                        assert labels["capacity"] == p.spec.node_selector["capacity"]
                    if not p.spec.tolerations:
                        assert labels["capacity"] == "on-demand", p.name
            for name, message in [
                *((f"huge-{i}", HUGE) for i in range(3)),
                *((f"ssd-{i}", SSD) for i in range(4)),
            ]:
                got = condition(now[name])
                assert not now[name].spec.node_name
                assert (got["status"], got["reason"], got["message"]) == (
                    "False",
                    "Unschedulable",
                    message,
                ), name

            # A node with room and the label: both groups are retried and bound.
            await gw.create(node("big", cpu="200", memory="512Gi", labels={"disk": "ssd"}))

            async def all_bound() -> dict[str, Pod]:
                now = await pods(gw)
                return now if all(p.spec.node_name for p in now.values()) else {}

            now = await eventually(all_bound, timeout=20)
            assert {now[f"huge-{i}"].spec.node_name for i in range(3)} == {"big"}
            assert {now[f"ssd-{i}"].spec.node_name for i in range(4)} == {"big"}
            nodes = {n.name: n for n in (await gw.list(Node)).items}
            assert overcommitted(list(nodes.values()), now) == {}

            # Events: one Scheduled per pod, FailedScheduling for the seven with the message.
            await running.events.flush()
            events = (await gw.list(Event, "default")).items
            scheduled = {
                e.regarding.name for e in events if e.reason == "Scheduled" and e.regarding
            }
            assert scheduled == set(now)
            huge0 = [
                e
                for e in events
                if e.reason == "Scheduled" and e.regarding and e.regarding.name == "huge-0"
            ]
            assert huge0[0].note == "Successfully assigned default/huge-0 to big"
            failed = {
                (e.regarding.name, e.note, e.type)
                for e in events
                if e.reason == "FailedScheduling" and e.regarding
            }
            assert ("huge-0", HUGE, "Warning") in failed
            assert ("ssd-3", SSD, "Warning") in failed
            assert {name for name, _, _ in failed} == {
                *(f"huge-{i}" for i in range(3)),
                *(f"ssd-{i}" for i in range(4)),
            }

            # Metrics under kube-scheduler's names.
            metrics = f"http://{running.http_address}/metrics"
            async with aiohttp.ClientSession() as session, session.get(metrics) as response:
                text = await response.text()
            assert (
                'scheduler_schedule_attempts_total{profile="ocm-pod-scheduler",'
                'result="scheduled"} 200.0' in text
            )
            assert 'scheduler_pending_pods{queue="unschedulable"} 0.0' in text
            assert "scheduler_scheduling_attempt_duration_seconds_bucket" in text


async def spawn_scheduler(url: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controllers.addons.scheduler",
        "--url",
        url,
        "--http-addr",
        "127.0.0.1:0",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
    )


@pytest.mark.asyncio
async def test_kill_9_mid_way_and_restart_lose_nothing_and_double_bind_nothing() -> None:
    # 10 nodes x 10 cpu and 1,000 pods x 100m: exactly full, so a restart that forgot a pod
    # bound before the crash would over-commit a node, or leave a pod pending.
    async with server_process() as (url, gw):
        await create_all(gw, [node(f"n-{i}", cpu="10", pods=110) for i in range(10)])
        first = await spawn_scheduler(url)
        try:
            creating = asyncio.create_task(
                create_all(gw, [pod(f"p-{i:04d}", "100m", "64Mi") for i in range(1000)])
            )

            async def some_bound() -> dict[str, Pod]:
                now = await pods(gw)
                return now if sum(1 for p in now.values() if p.spec.node_name) >= 150 else {}

            await eventually(some_bound, timeout=30)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            before = {
                name: p.spec.node_name for name, p in (await pods(gw)).items() if p.spec.node_name
            }
            await creating
            assert 150 <= len(before) < 1000
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()

        second = await spawn_scheduler(url)
        try:

            async def all_bound() -> dict[str, Pod]:
                now = await pods(gw)
                return (
                    now if len(now) == 1000 and all(p.spec.node_name for p in now.values()) else {}
                )

            now = await eventually(all_bound, timeout=60)
        finally:
            second.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(second.wait(), 20) == 0
        # Nothing bound before the crash moved; no node holds more than it has.
        assert {name: now[name].spec.node_name for name in before} == before
        nodes = (await gw.list(Node)).items
        assert overcommitted(nodes, now) == {}
        per_node = Counter(p.spec.node_name for p in now.values())
        assert sorted(per_node.values()) == [100] * 10


@pytest.mark.asyncio
async def test_preemption_deletes_the_victim_and_binds_the_preemptor_once_it_is_gone() -> None:
    async with server_process() as (url, gw):
        await gw.create(node("n-0", cpu="2"))
        for name, value in (("low", 0), ("high", 1000)):
            doc = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
            await gw.create(parse_as(PriorityClass, doc))
        async with scheduler(url):
            # A low-priority victim with a finalizer: it terminates until the test lets it go.
            victim = pod("victim", "2", "64Mi", priorityClassName="low")
            victim.metadata.finalizers = ["test/hold"]
            await gw.create(victim)
            await eventually(lambda: _node_of(gw, "victim"))
            await gw.create(pod("vip", "2", "64Mi", priorityClassName="high"))

            async def nominated() -> Pod | None:
                now = await pods(gw)
                vip = now["vip"]
                held = now.get("victim")
                if (
                    vip.status
                    and vip.status.nominated_node_name
                    and held is not None
                    and held.metadata.deletion_timestamp
                ):
                    return vip
                return None

            vip = await eventually(nominated, timeout=10)
            assert (
                vip is not None
                and vip.status is not None
                and vip.status.nominated_node_name == "n-0"
            )
            await asyncio.sleep(0.5)  # the victim still terminates: the preemptor must wait
            assert not (await gw.get(Pod, "vip", "default")).spec.node_name
            await gw.merge_patch(Pod, "victim", {"metadata": {"finalizers": None}}, "default")
            assert await eventually(lambda: _node_of(gw, "vip")) == "n-0"
            events = (await gw.list(Event, "default")).items
            assert any(
                e.reason == "Preempted" and e.regarding and e.regarding.name == "victim"
                for e in events
            )


async def _node_of(gw: PodGateway, name: str) -> str | None:
    return (await gw.get(Pod, name, "default")).spec.node_name


@pytest.mark.asyncio
async def test_only_the_leader_binds_and_a_standby_takes_over_when_it_stops() -> None:
    async with server_process() as (url, gw):
        await gw.create(node("n-0"))
        timings: dict[str, Any] = {
            "lease_duration": 2.0,
            "renew_deadline": 1.5,
            "retry_period": 0.2,
        }
        async with scheduler(
            url, leader=LeaderConfig("ocm-pod-scheduler", "kube-system", identity="a", **timings)
        ) as a:
            await eventually(lambda: a.leading)
            async with scheduler(
                url,
                leader=LeaderConfig("ocm-pod-scheduler", "kube-system", identity="b", **timings),
            ) as b:
                await gw.create(pod("first"))
                assert await eventually(lambda: _node_of(gw, "first")) == "n-0"
                # The bind's answer reaches a's executor a few loop turns after the server
                # stored the binding (its own connection): wait for it, do not race it.
                await eventually(lambda: a.executor.counts.bound == 1)
                assert a.executor.counts.bound == 1 and b.executor.counts.bound == 0
                assert not b.leading and b.ready() == (True, "standby")
                await a.stop()  # releases the Lease: b leads at once
                await eventually(lambda: b.leading)
                await gw.create(pod("second"))
                assert await eventually(lambda: _node_of(gw, "second")) == "n-0"
                await eventually(lambda: b.executor.counts.bound == 1)
                assert b.executor.counts.bound == 1
