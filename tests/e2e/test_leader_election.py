"""Leader election on a real coordination.k8s.io Lease: three `placement run --leader-elect`
replicas with short lease timings (3 s / 2 s / 0.5 s), running as a Deployment of them would:
as the `placement-controller` ServiceAccount with the shipped RBAC (`config/rbac`: the
least-privilege ClusterRole, the Lease's Role in `open-cluster-management-hub`), so a request
the real RBAC authorizer refuses fails the test. Each reaches the API server through a TLS proxy
of its own that notes every request it sends, so each write is attributed to the replica that
sent it (the server cannot tell: they share a host, a field manager and a reporting instance).

* One leads (the Lease names it), it alone writes, the standbys send no write at all.
* The leader is killed (SIGKILL): a standby takes over within lease duration + retry period
  and writes the next change.
* That leader is paused (SIGSTOP) while idle; the last standby takes over once the Lease
  expired and writes; the paused one, resumed (SIGCONT) after its renew deadline, writes
  nothing (no PlacementDecision, Placement, Event or Lease write) and exits 1.
* The last one stopped with SIGTERM exits 0 and releases the Lease.
* A ManagedClusterSetBinding only OCM's webhook would refuse is there from the start: each
  replica says it leaves it out, and works.
* Throughout, a watch sees the placement's decisions move only as the changes ask: no two
  writers fighting, no cluster dropped on the way.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import time
from pathlib import Path

import pytest

from apis.cluster import ManagedCluster
from apis.core import Lease
from apis.placements import PLACEMENT_LABEL, PlacementDecision
from controllers.kube.errors import ApiError, NotFoundError
from controllers.kube.gateway import Gateway
from placement.testing import placement, predicate
from tests.controllers.embedded.hub import eventually
from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.hub_helpers import (
    HUB_NAMESPACE,
    PlacementRun,
    RecordingProxy,
    connect,
    create_all,
    delete_all,
    private_fleet,
    service_account_token,
    tolerate_private,
)

pytestmark = pytest.mark.asyncio

LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
SLACK = 1.5  # seconds of process scheduling on a busy 2-core machine
LEASE_NAME = "placement-controller"
BECAME_LEADER = re.compile(r"leader election: (\S+) became leader")
WRITTEN = ("placementdecisions", "placements", "events")
MISNAMED = """
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {{name: misnamed, namespace: {namespace}}}
spec: {{clusterSet: {set}}}
"""


def flags() -> list[str]:
    return [
        "--leader-elect",
        "--lease-namespace",
        HUB_NAMESPACE,
        "--leader-elect-lease-duration",
        f"{LEASE}s",
        "--leader-elect-renew-deadline",
        f"{RENEW}s",
        "--leader-elect-retry-period",
        f"{RETRY}s",
    ]


class Replica:
    def __init__(self, name: str, proxy: RecordingProxy, run: PlacementRun) -> None:
        self.name, self.proxy, self.run = name, proxy, run

    @property
    def identity(self) -> str | None:
        found = BECAME_LEADER.search(self.run.stderr())
        return found[1] if found else None

    def writes(self, after: float = 0.0) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.proxy.writes(*WRITTEN, after=after)]


async def holder(gateway: Gateway) -> str:
    try:
        lease = await gateway.get(Lease, LEASE_NAME, HUB_NAMESPACE)
    except NotFoundError:
        return ""
    return lease.spec.holder_identity or ""


async def watch_decisions(gateway: Gateway, namespace: str, seen: list[frozenset[str]]) -> None:
    """Every set of clusters the placement's PlacementDecision held, in watch order."""
    listed = await gateway.list(PlacementDecision, namespace)
    version = listed.resource_version
    while True:
        with contextlib.suppress(ApiError):
            async for event in gateway.watch(
                PlacementDecision, version, namespace, label_selector=f"{PLACEMENT_LABEL}=web"
            ):
                version = event.resource_version or version
                pd = event.object
                if pd is None:
                    continue
                now = frozenset(d.cluster_name for d in (pd.status.decisions if pd.status else []))
                if event.type == "DELETED":
                    now = frozenset()
                if not seen or seen[-1] != now:
                    seen.append(now)


async def test_one_writer_takeover_after_kill_and_a_deposed_leader_writes_nothing(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    namespace = unique_name("e2e-lease")
    fleet = private_fleet(unique_name("lease"), namespace, [{"env": "prod"}] * 4)
    names = [c.name for c in fleet.clusters]
    web = placement(
        namespace,
        "web",
        clusterSets=[fleet.name],
        predicates=[predicate(labels={"env": "prod"}).to_wire()],
        tolerations=tolerate_private(),
    )
    everyone = frozenset(names)
    replicas: list[Replica] = []
    token = service_account_token(control_plane)
    async with await connect(control_plane) as gateway:
        # A Lease left by another test's replica would only delay the first election.
        with contextlib.suppress(NotFoundError):
            await gateway.delete(Lease, LEASE_NAME, HUB_NAMESPACE)
        await create_all(gateway, [*fleet.objects, web])
        # A binding only OCM's webhook would refuse (named otherwise than its set): the real
        # API server stores it, and the replicas must start anyway.
        misnamed = MISNAMED.format(namespace=namespace, set=fleet.name)
        control_plane.kubectl("apply", "-f", "-", input=misnamed)
        seen: list[frozenset[str]] = []
        watcher = asyncio.create_task(watch_decisions(gateway, namespace, seen))

        async def relabel(name: str, env: str) -> None:
            await gateway.merge_patch(ManagedCluster, name, {"metadata": {"labels": {"env": env}}})

        try:
            proxies = [RecordingProxy(control_plane, tmp_path / f"proxy-{i}") for i in range(3)]
            configs = [await p.start(token) for p in proxies]
            runs = await asyncio.gather(
                *(
                    PlacementRun.start(config, tmp_path, *flags(), name=f"replica-{i}")
                    for i, config in enumerate(configs)
                )
            )
            replicas = [
                Replica(f"replica-{i}", p, r)
                for i, (p, r) in enumerate(zip(proxies, runs, strict=True))
            ]

            # One leader, and it alone writes.
            async def led() -> Replica | None:
                now = await holder(gateway)
                return next((r for r in replicas if now and r.identity == now), None)

            first = await eventually(led, timeout=10)
            assert first is not None
            await eventually(lambda: seen and seen[-1] == everyone, timeout=10)
            await relabel(names[0], "dev")
            await eventually(lambda: seen[-1] == everyone - {names[0]}, timeout=10)
            standbys = [r for r in replicas if r is not first]
            assert first.writes(), "the leader wrote nothing"
            for replica in standbys:
                assert replica.identity is None
                assert replica.writes() == [], replica.name
                assert await replica.run.get("/readyz") == (200, "ok (standby)")
            assert await first.run.get("/readyz") == (200, "ok (leader)")
            assert await first.run.metric("placement_leader") == 1
            assert await standbys[0].run.metric("placement_leader") == 0

            # The leader killed: a standby takes over within lease duration + retry period.
            first.run.signal(signal.SIGKILL)
            killed = time.monotonic()
            second = await eventually(
                lambda: next((r for r in standbys if r.identity is not None), None),
                timeout=LEASE + RETRY + 5,
            )
            assert second is not None
            took = time.monotonic() - killed
            assert took <= LEASE + RETRY + SLACK, f"took over after {took:.1f} s"
            assert await holder(gateway) == second.identity
            third = next(r for r in standbys if r is not second)
            await relabel(names[0], "prod")
            await eventually(lambda: seen[-1] == everyone, timeout=10)
            assert second.writes(after=killed), "the new leader wrote nothing"
            assert third.writes() == []

            # The new leader paused while idle, just after a renewal (not in the middle of
            # one); the last standby takes over once the Lease expired and writes; the paused
            # one comes back past its deadline.
            since = time.monotonic()
            await eventually(lambda: second.proxy.writes("leases", after=since), timeout=5)
            await asyncio.sleep(0.05)  # its answer back
            second.run.signal(signal.SIGSTOP)
            paused = time.monotonic()
            await eventually(lambda: third.identity is not None, timeout=LEASE + RETRY + 5)
            await relabel(names[1], "dev")
            await eventually(lambda: seen[-1] == everyone - {names[1]}, timeout=10)
            assert third.writes(after=paused), "the last standby wrote nothing"
            assert time.monotonic() - paused > RENEW
            resumed = time.monotonic()
            second.run.signal(signal.SIGCONT)
            assert await second.run.wait(10) == 1, second.run.stderr()[-2000:]
            assert second.writes(after=paused) == []
            assert second.proxy.writes("leases", after=resumed) == []
            assert "stepping down" in second.run.stderr()
            assert await holder(gateway) == third.identity
            await relabel(names[2], "dev")
            await eventually(lambda: seen[-1] == everyone - {names[1], names[2]}, timeout=10)
            assert await third.run.stop() == 0
            assert await holder(gateway) == ""
            for replica in replicas:
                logged = replica.run.stderr()
                assert "Forbidden" not in logged, replica.name
                assert f"ManagedClusterSetBinding {namespace}/misnamed cannot be read" in logged
        finally:
            for replica in replicas:
                replica.run.kill()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            for replica in replicas:
                await replica.proxy.stop()
            await delete_all(gateway, fleet.cluster_scoped)
            control_plane.kubectl("delete", "--ignore-not-found", "-f", "-", input=misnamed)
    # The decisions moved exactly as the changes asked, each once (an empty PD first).
    start = seen.index(everyone)
    assert set(seen[:start]) <= {frozenset()}
    assert seen[start:] == [
        everyone,
        everyone - {names[0]},
        everyone,
        everyone - {names[1]},
        everyone - {names[1], names[2]},
    ]
