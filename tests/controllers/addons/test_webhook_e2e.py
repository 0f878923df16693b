"""The spot webhook end to end on the real admission path: the embedded API server holds a
MutatingWebhookConfiguration naming the webhook's HTTPS URL and CA bundle, pods are created
through the API with the real client (owner references to a ReplicaSet of a Deployment, or to a
StatefulSet), the webhook reads the workloads with its real informers (`WorkloadCache`) and
counts on-demand pods with its pod informer. Checked: pods come back mutated; 500 concurrent
creates with min-available 5 give exactly 5 on-demand pods, with one webhook and with two
replicas behind a round-robin TCP balancer (a Service) sharing their count through a Lease;
deleting on-demand pods and creating replacements restores exactly M; a webhook that is down,
or whose certificate the caBundle does not verify, lets pods through unmutated under
failurePolicy Ignore and refuses them under Fail."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from apis.admissionregistration import MutatingWebhookConfiguration
from apis.core import Pod
from apis.registry import parse_as, parse_object
from apis.workloads import Deployment, ReplicaSet, StatefulSet
from controllers.addons.webhook import MUTATE_PATH, SpotWebhook
from controllers.addons.webhook_certs import CertBundle, ReloadingContext, mint, write_bundle
from controllers.addons.webhook_server import WebhookServer
from controllers.addons.webhook_state import ClusterView, LeaseReservations
from controllers.embedded import EmbeddedApiServer
from controllers.kube.errors import ServerError
from controllers.kube.gateway import Gateway
from placement.spot.ledger import Ledger
from placement.spot.mutation import DELETION_COST, DESIRED_CAPACITY, MutationConfig, WorkloadRef
from tests.controllers.addons.cluster import shipped_webhook_configuration
from tests.controllers.embedded.hub import eventually, hub

pytestmark = pytest.mark.asyncio

M = 5
CAPACITY = "node.kubernetes.io/capacity"
SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
CONFIG = MutationConfig(spot_tolerations=(SPOT_TOLERATION,))
DEPLOYMENT_KEY = "Deployment/default/web"
HASH = "5d8f9c7b4"
RS = f"web-{HASH}"


@dataclass
class Replica:
    view: ClusterView
    webhook: SpotWebhook
    server: WebhookServer
    port: int

    def admissions(self) -> float:
        registry = self.webhook.metrics.registry
        return sum(
            registry.get_sample_value("spot_webhook_admissions_total", {"decision": d}) or 0.0
            for d in ("on-demand", "spot", "unchanged")
        )


@dataclass
class Cluster:
    server: EmbeddedApiServer
    gw: Gateway
    bundle: CertBundle
    certs: Path
    replicas: list[Replica] = field(default_factory=list)
    balancers: list[asyncio.Server] = field(default_factory=list)

    async def start_replica(self, shared: bool, **options: Any) -> Replica:
        ledger = Ledger()
        view = ClusterView(self.gw, ledger, CONFIG, time.time)
        lease = LeaseReservations(self.gw, f"replica-{len(self.replicas)}") if shared else None
        options.setdefault("deadline", 4.5)  # below `configure`'s timeoutSeconds: 5, as advised
        options.setdefault("recount", view.recount)  # as `placement webhook run` wires it
        webhook = SpotWebhook(view, ledger, config=CONFIG, shared=lease, **options)
        tls = ReloadingContext(self.certs / "tls.crt", self.certs / "tls.key")
        server = WebhookServer(webhook, tls, address="127.0.0.1:0", reload_interval=3600)
        view.start()
        await view.wait_synced(5)
        address = await server.start()
        replica = Replica(view, webhook, server, int(address.rpartition(":")[2]))
        self.replicas.append(replica)
        return replica

    async def balance(self, ports: list[int]) -> int:
        """A TCP balancer in front of `ports`, one backend per connection in turn (as a
        Service's virtual IP spreads connections); TLS passes through."""
        turn = itertools.cycle(ports)

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            with contextlib.suppress(ConnectionError, OSError):
                writer.close()

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", next(turn))
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        balancer = await asyncio.start_server(accept, "127.0.0.1", 0)
        self.balancers.append(balancer)
        port: int = balancer.sockets[0].getsockname()[1]
        return port

    async def configure(
        self, port: int, *, policy: str = "Ignore", ca: bytes | None = None, timeout: int = 5
    ) -> None:
        doc = shipped_webhook_configuration(
            client_config={
                "url": f"https://localhost:{port}{MUTATE_PATH}",
                "caBundle": base64.b64encode(ca or self.bundle.ca).decode(),
            },
            policy=policy,
            timeout=timeout,
        )
        await self.gw.create(parse_as(MutatingWebhookConfiguration, doc))

    async def stop(self) -> None:
        for balancer in self.balancers:
            balancer.close()
        for replica in self.replicas:
            await replica.server.stop()
            await replica.view.stop()


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    bundle = mint(["localhost", "127.0.0.1"])
    write_bundle(bundle, tmp_path)
    async with hub() as (server, gw):
        state = Cluster(server, gw, bundle, tmp_path)
        try:
            yield state
        finally:
            await state.stop()


def _template() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]},
    }


async def deployment(gw: Gateway, replicas: int = 500, m: str = str(M)) -> ReplicaSet:
    """A Deployment annotated with min-available and its ReplicaSet, as the Deployment
    controller would have made it; the ReplicaSet back."""
    created = await gw.create(
        parse_as(
            Deployment,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "web",
                    "namespace": "default",
                    "annotations": {"distributed-scheduling/min-available": m},
                },
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": _template(),
                },
            },
        )
    )
    owner = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": created.metadata.uid,
        "controller": True,
    }
    return await gw.create(
        parse_as(
            ReplicaSet,
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": RS, "namespace": "default", "ownerReferences": [owner]},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": "web", "pod-template-hash": HASH}},
                    "template": _template(),
                },
            },
        )
    )


def rs_pod(rs: ReplicaSet) -> Pod:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": rs.name,
        "uid": rs.metadata.uid,
        "controller": True,
    }
    meta = {
        "generateName": f"{rs.name}-",
        "namespace": "default",
        "labels": {"app": "web", "pod-template-hash": HASH},
        "ownerReferences": [owner],
    }
    spec = {"containers": [{"name": "main", "image": "nginx"}]}
    return parse_as(Pod, {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def capacity(pod: Pod) -> str | None:
    return (pod.metadata.labels or {}).get(DESIRED_CAPACITY)


async def known(cluster: Cluster, kind: str, name: str) -> None:
    """Wait until every replica's informers have the workload (a real Deployment controller
    creates pods only after its ReplicaSet exists; the informers lag by a watch event)."""
    ref = WorkloadRef(kind, "default", name)
    for replica in cluster.replicas:
        view = replica.view
        await eventually(lambda: view.workload(ref) is not None)  # noqa: B023


async def create_all(gw: Gateway, pods: list[Pod]) -> list[Pod]:
    return list(await asyncio.gather(*(gw.create(p) for p in pods)))


async def test_deployment_and_statefulset_pods_come_back_mutated(cluster: Cluster) -> None:
    replica = await cluster.start_replica(shared=False)
    await cluster.configure(replica.port)
    rs = await deployment(cluster.gw, replicas=3, m="1")
    sts = parse_object(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {
                "name": "db",
                "namespace": "default",
                "annotations": {"distributed-scheduling/min-available": "2"},
            },
            "spec": {
                "replicas": 4,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "main", "image": "postgres"}]},
                },
            },
        }
    )
    assert isinstance(sts, StatefulSet)
    sts = await cluster.gw.create(sts)
    await known(cluster, "Deployment", "web")
    await known(cluster, "StatefulSet", "db")

    first = await cluster.gw.create(rs_pod(rs))
    second = await cluster.gw.create(rs_pod(rs))
    assert capacity(first) == "on-demand"
    assert (first.metadata.annotations or {})[DELETION_COST] == "1"
    assert first.spec.affinity is not None
    wire = first.to_wire()["spec"]["affinity"]["nodeAffinity"]
    term = wire["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == [
        {"matchExpressions": [{"key": CAPACITY, "operator": "In", "values": ["on-demand"]}]}
    ]
    assert capacity(second) == "spot"
    spot = second.to_wire()["spec"]
    assert SPOT_TOLERATION in spot["tolerations"]
    preferred = spot["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred[0]["weight"] == 100
    assert DELETION_COST not in (second.metadata.annotations or {})

    owner = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "db",
        "uid": sts.metadata.uid,
        "controller": True,
    }
    members = []
    for ordinal in range(4):
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"db-{ordinal}",
                "namespace": "default",
                "labels": {"app": "db"},
                "ownerReferences": [owner],
            },
            "spec": {"containers": [{"name": "main", "image": "postgres"}]},
        }
        members.append(await cluster.gw.create(parse_as(Pod, doc)))
    assert [capacity(p) for p in members] == ["on-demand", "on-demand", "spot", "spot"]
    stored = await cluster.gw.get(Pod, "db-0", "default")
    assert capacity(stored) == "on-demand"  # what was stored, not only what was answered


async def test_500_concurrent_creates_give_exactly_m_on_demand(cluster: Cluster) -> None:
    replica = await cluster.start_replica(shared=False)
    await cluster.configure(replica.port)
    rs = await deployment(cluster.gw)
    await known(cluster, "Deployment", "web")
    created = await create_all(cluster.gw, [rs_pod(rs) for _ in range(500)])
    labels = [capacity(p) for p in created]
    assert labels.count("on-demand") == M
    assert labels.count("spot") == 500 - M
    await eventually(lambda: replica.webhook.ledger.count(DEPLOYMENT_KEY, time.time()) == M)


async def test_two_replicas_behind_a_balancer_give_exactly_m_and_restore_m(
    cluster: Cluster,
) -> None:
    replicas = [await cluster.start_replica(shared=True) for _ in range(2)]
    port = await cluster.balance([r.port for r in replicas])
    await cluster.configure(port)
    rs = await deployment(cluster.gw)
    await known(cluster, "Deployment", "web")
    created = await create_all(cluster.gw, [rs_pod(rs) for _ in range(500)])
    on_demand = [p for p in created if capacity(p) == "on-demand"]
    assert len(on_demand) == M
    assert all(r.admissions() > 0 for r in replicas)  # both replicas answered some

    # Deleting on-demand pods gives their places back; replacements restore exactly M.
    for pod in on_demand[:3]:
        await cluster.gw.delete(Pod, pod.name, "default")
    for r in replicas:
        ledger = r.webhook.ledger
        await eventually(lambda: ledger.count(DEPLOYMENT_KEY, time.time()) == M - 3)  # noqa: B023
    replacements = await create_all(cluster.gw, [rs_pod(rs) for _ in range(20)])
    assert [capacity(p) for p in replacements].count("on-demand") == 3
    alive = await cluster.gw.list(Pod, "default", label_selector=f"{DESIRED_CAPACITY}=on-demand")
    assert len(alive.items) == M


async def test_one_webhook_restores_m_after_deletions(cluster: Cluster) -> None:
    replica = await cluster.start_replica(shared=False)
    await cluster.configure(replica.port)
    rs = await deployment(cluster.gw, replicas=50)
    await known(cluster, "Deployment", "web")
    created = await create_all(cluster.gw, [rs_pod(rs) for _ in range(50)])
    on_demand = [p for p in created if capacity(p) == "on-demand"]
    assert len(on_demand) == M
    for pod in on_demand[:2]:
        await cluster.gw.delete(Pod, pod.name, "default")
    key = DEPLOYMENT_KEY
    await eventually(lambda: replica.webhook.ledger.count(key, time.time()) == M - 2)
    replacements = await create_all(cluster.gw, [rs_pod(rs) for _ in range(10)])
    assert [capacity(p) for p in replacements].count("on-demand") == 2


@pytest.mark.parametrize("recount", [True, False], ids=["recount", "cache-only"])
async def test_a_replacement_overtaking_the_deletion_event_goes_on_demand(
    cluster: Cluster, recount: bool
) -> None:
    # The pod watch is stopped after the first pods: the deletions never reach the cache, as
    # when the ReplicaSet controller's replacement is admitted before the watch delivers them.
    replica = await cluster.start_replica(shared=False, **({} if recount else {"recount": None}))
    await cluster.configure(replica.port)
    rs = await deployment(cluster.gw, replicas=20)
    await known(cluster, "Deployment", "web")
    created = await create_all(cluster.gw, [rs_pod(rs) for _ in range(20)])
    on_demand = [p for p in created if capacity(p) == "on-demand"]
    assert len(on_demand) == M
    await eventually(lambda: len(replica.webhook.ledger.alive(DEPLOYMENT_KEY)) == M)
    await replica.view.pods.stop()
    for pod in on_demand[:2]:
        await cluster.gw.delete(Pod, pod.name, "default")
    replacements = await create_all(cluster.gw, [rs_pod(rs) for _ in range(4)])
    recounted = replica.webhook.metrics.registry.get_sample_value(
        "spot_webhook_places_recounted_total"
    )
    if recount:
        # A full count is re-read before a pod goes spot: the two places are found free.
        assert [capacity(p) for p in replacements].count("on-demand") == 2
        assert recounted == 2
    else:
        assert [capacity(p) for p in replacements].count("on-demand") == 0
        assert recounted == 0


@pytest.mark.parametrize(
    "policy", [pytest.param("Ignore", id="ignore"), pytest.param("Fail", id="fail")]
)
async def test_a_webhook_that_is_down_follows_the_failure_policy(
    cluster: Cluster, policy: str
) -> None:
    replica = await cluster.start_replica(shared=False)
    await cluster.configure(replica.port, policy=policy)
    rs = await deployment(cluster.gw)
    await known(cluster, "Deployment", "web")
    await replica.server.stop()  # the webhook goes down
    if policy == "Ignore":
        pod = await cluster.gw.create(rs_pod(rs))
        assert capacity(pod) is None
        assert pod.spec.affinity is None
    else:
        with pytest.raises(ServerError, match="failed calling webhook"):
            await cluster.gw.create(rs_pod(rs))
        assert (await cluster.gw.list(Pod, "default")).items == []


@pytest.mark.parametrize(
    "policy", [pytest.param("Ignore", id="ignore"), pytest.param("Fail", id="fail")]
)
async def test_a_ca_bundle_that_does_not_verify_the_webhook_is_refused(
    cluster: Cluster, policy: str
) -> None:
    replica = await cluster.start_replica(shared=False)
    await cluster.configure(replica.port, policy=policy, ca=mint(["localhost"]).ca)
    rs = await deployment(cluster.gw)
    await known(cluster, "Deployment", "web")
    if policy == "Ignore":
        pod = await cluster.gw.create(rs_pod(rs))
        assert capacity(pod) is None
    else:
        with pytest.raises(ServerError, match="certificate verify failed"):
            await cluster.gw.create(rs_pod(rs))
    assert replica.admissions() == 0  # the handshake failed before any review reached it


async def test_dry_run_creates_are_decided_and_reserve_nothing(cluster: Cluster) -> None:
    replica = await cluster.start_replica(shared=False)
    await cluster.configure(replica.port)
    rs = await deployment(cluster.gw)
    await known(cluster, "Deployment", "web")
    session_url = f"{cluster.server.url}/api/v1/namespaces/default/pods?dryRun=All"
    async with aiohttp.ClientSession() as session:
        for _ in range(10):
            async with session.post(session_url, json=rs_pod(rs).to_wire()) as response:
                assert response.status == 201
                doc = await response.json()
                labels = doc["metadata"]["labels"]
                assert labels[DESIRED_CAPACITY] == "on-demand"
    assert replica.webhook.ledger.count(DEPLOYMENT_KEY, time.time()) == 0
    assert (await cluster.gw.list(Pod, "default")).items == []
    created = await create_all(cluster.gw, [rs_pod(rs) for _ in range(10)])
    assert [capacity(p) for p in created].count("on-demand") == M
