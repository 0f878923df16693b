"""Issue 27, item 6: the pod scheduler's writes are fenced by its Lease, as the hub's are. A
leader partitioned from the API server (its requests held, its watches still flowing) decides
bindings and victim deletions; none of them is sent after its lease deadline, none reaches the
server after it, and none is lost: the replica that takes the Lease over does them. Real time,
short leases (2 s / 1.4 s / 0.5 s).

The partition outlasts TCP (`PartitionProxy(drop_abandoned=True)`): what the old leader sent
into it and then gave up on at its deadline never arrives. (In a short partition such bytes
may still arrive late, as they would on a real network; the binding's 409 and the deletion's
uid precondition make them harmless, and nothing is *sent* after the deadline either way.)"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from apis.core import Pod
from apis.registry import parse_as
from apis.scheduling import PriorityClass
from controllers.addons.gateway import PodGateway
from controllers.addons.scheduler import PodScheduler, load_scheduler_config
from controllers.embedded import EmbeddedApiServer
from controllers.embedded.audit import AuditEntry
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.runtime.leader import LeaderConfig
from tests.controllers.addons.cluster import node, pod
from tests.controllers.embedded.hub import eventually
from tests.controllers.hub.partition import PartitionProxy

pytestmark = pytest.mark.asyncio

LEASES = "kube-system"
BINDINGS = AuditEntry("create", "", "pods", "binding", "default")
DELETES = AuditEntry("delete", "", "pods", "", "default")


def lease(identity: str) -> LeaderConfig:
    return LeaderConfig(
        name="ocm-pod-scheduler",
        namespace=LEASES,
        identity=identity,
        lease_duration=2.0,
        renew_deadline=1.4,
        retry_period=0.5,
    )


@contextlib.asynccontextmanager
async def replica(url: str, identity: str) -> AsyncIterator[PodScheduler]:
    gateway = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
    scheduler = PodScheduler(
        gateway, load_scheduler_config(None), http_addr=None, leader=lease(identity)
    )
    try:
        await scheduler.start(sync_timeout=10)
        yield scheduler
    finally:
        await scheduler.stop()
        await gateway.close()


async def deadline_of(scheduler: PodScheduler) -> float:
    """The loop time at which `scheduler`'s lease deadline passes (exactly: its last renew's
    start plus the renew deadline), once it has."""
    elector = scheduler.elector
    assert elector is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + elector.remaining()
    while (left := elector.remaining()) > 0:
        deadline = loop.time() + left
        await asyncio.sleep(0.01)
    return deadline


async def test_a_partitioned_scheduler_sends_nothing_after_its_deadline_and_loses_nothing() -> None:
    server = EmbeddedApiServer()
    url = await server.start()
    gw = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
    proxy = PartitionProxy("127.0.0.1", server.port, drop_abandoned=True)
    try:
        for name, value in (("low", 0), ("high", 1000)):
            doc = {"metadata": {"name": name}, "value": value}
            await gw.create(parse_as(PriorityClass, {"apiVersion": "scheduling.k8s.io/v1", **doc}))
        await gw.create(node("n0", cpu="2"))
        await gw.create(node("n1", cpu="3"))
        for i in range(2):  # n0 is full of low-priority pods
            await gw.create(pod(f"low-{i}", cpu="1", priorityClassName="low", nodeName="n0"))
        proxied = await proxy.start()
        async with replica(proxied, "old") as old:
            assert old.elector is not None
            await asyncio.wait_for(old.elector.wait_leader(), 10)
            async with replica(url, "new") as new:
                assert new.elector is not None and not new.leading
                # The partition: the old leader's watches still tell it about the new pods,
                # and it decides (three bindings on n1; on n0, two victims for the vip), but
                # nothing it sends arrives, its lease renewals neither.
                proxy.hold()
                deadline = asyncio.create_task(deadline_of(old))
                server.audit.clear()
                for i in range(3):
                    await gw.create(pod(f"web-{i}", cpu="1"))
                vip = pod("vip", cpu="2", priorityClassName="high")
                vip.spec.node_selector = {"kubernetes.io/hostname": "n0"}
                await gw.create(vip)
                await eventually(lambda: _true(old.executor.pending > 0 or deadline.done()))
                deadline_at = await asyncio.wait_for(deadline, 10)
                await asyncio.wait_for(new.elector.wait_leader(), 10)

                async def done() -> bool:
                    pods = {p.name: p for p in (await gw.list(Pod, "default")).items}
                    bound = all(pods[f"web-{i}"].spec.node_name == "n1" for i in range(3))
                    return (
                        bound
                        and "vip" in pods
                        and pods["vip"].spec.node_name == "n0"
                        and not ({"low-0", "low-1"} & pods.keys())
                    )

                await eventually(done, timeout=15)
                proxy.heal()
                await asyncio.sleep(1.0)  # whatever was held and not abandoned lands now
                await new.wait_idle()
                writes = [r for r in proxy.requests if r.method != "GET"]
                # Bindings and deletions were in flight at the deadline...
                ours = [r for r in writes if "/binding" in r.path or r.method == "DELETE"]
                assert ours and all(r.sent <= deadline_at for r in ours)
                # ... none was sent after it, and no write of any kind reached the server
                # after it (the abandoned ones never did).
                assert [r for r in writes if r.sent > deadline_at] == []
                late = [r for r in writes if r.delivered is not None and r.delivered > deadline_at]
                assert late == []
                assert all(r.dropped for r in ours)
                assert old.executor.counts.fenced >= len(ours)
                assert (old.executor.counts.bound, old.executor.counts.deleted) == (0, 0)
                # Nothing lost: the new leader bound the four pods and deleted the two
                # victims, and the server saw exactly those requests.
                assert (new.executor.counts.bound, new.executor.counts.deleted) == (4, 2)
                assert (server.audit[BINDINGS], server.audit[DELETES]) == (4, 2)
                assert not old.elector.is_leader
    finally:
        proxy.heal()
        await proxy.stop()
        await gw.close()
        await server.stop()


async def _true(value: bool) -> bool:
    return value
