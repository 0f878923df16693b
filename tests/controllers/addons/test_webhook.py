"""The spot webhook server over real HTTPS (certificates minted here with `webhook certs`' code):
AdmissionReview v1 in and out, uid echoed, base64 JSONPatch that applies, no patch when nothing
changes, warnings, a client verifying another CA refused, the certificate reloaded; exactly M
on-demand pods among 500 concurrent admissions, with one server and with two replicas sharing
their reservations through a Lease on the embedded API server; the pod informer feeding the
ledger so deletions give places back."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import logging
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import jsonpatch
import pytest
import pytest_asyncio

from apis.core import Pod
from apis.registry import parse_as
from controllers.addons.webhook import MUTATE_PATH, SpotWebhook
from controllers.addons.webhook_certs import ReloadingContext, mint, write_bundle
from controllers.addons.webhook_server import WebhookServer
from controllers.addons.webhook_state import ClusterView, LeaseReservations
from placement.spot.ledger import Ledger
from placement.spot.mutation import (
    DELETION_COST,
    DESIRED_CAPACITY,
    RESERVATION,
    MutationConfig,
    Workload,
    WorkloadRef,
)
from tests.controllers.embedded.hub import eventually, hub

pytestmark = pytest.mark.asyncio

M = 5
RS = "web-5d8f9c"


@dataclass
class StaticWorkloads:
    """A fixed set of workloads (the informers' part is tested on its own below)."""

    deployment_m: str = str(M)
    replicas: int = 500

    def replica_set_owner(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        if name == RS:
            return {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "web",
                "controller": True,
            }
        return None

    def workload(self, ref: WorkloadRef) -> Workload | None:
        annotations = {"distributed-scheduling/min-available": self.deployment_m}
        return Workload(ref, self.replicas, annotations, uid="uid-" + ref.name)


def pod_doc(name: str = "", *, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"generateName": f"{RS}-", "namespace": "default"}
    if name:
        meta["name"] = name
    if labels is not None:
        meta["labels"] = labels
    meta["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": RS, "uid": "rs", "controller": True}
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def review(uid: str, pod: dict[str, Any], *, dry_run: bool = False, op: str = "CREATE") -> Any:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "default",
            "operation": op,
            "object": pod,
            "oldObject": None,
            "dryRun": dry_run,
        },
    }


def client_context(ca: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.decode())


@dataclass
class Served:
    url: str
    ca: bytes
    webhook: SpotWebhook
    tls: ReloadingContext
    certs: Path
    session: aiohttp.ClientSession

    async def post(self, doc: Any, ca: bytes | None = None) -> dict[str, Any]:
        ctx = client_context(ca or self.ca)
        async with self.session.post(self.url, json=doc, ssl=ctx) as response:
            assert response.status == 200
            answer: dict[str, Any] = await response.json()
            return answer


@pytest_asyncio.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    bundle = mint(["localhost", "127.0.0.1"])
    paths = write_bundle(bundle, tmp_path)
    tls = ReloadingContext(paths["cert"], paths["key"])
    webhook = SpotWebhook(StaticWorkloads(), Ledger())
    server = WebhookServer(webhook, tls, address="127.0.0.1:0", reload_interval=3600)
    address = await server.start()
    url = f"https://localhost:{address.rpartition(':')[2]}{MUTATE_PATH}"
    connector = aiohttp.TCPConnector(limit=600)
    async with aiohttp.ClientSession(connector=connector) as session:
        try:
            yield Served(url, bundle.ca, webhook, tls, tmp_path, session)
        finally:
            await server.stop()


def patched(pod: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    result: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(pod), ops)
    return result


async def test_response_echoes_uid_and_carries_a_base64_json_patch(served: Served) -> None:
    pod = pod_doc()
    answer = await served.post(review("uid-1", pod))
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == "uid-1"
    assert response["allowed"] is True
    out = patched(pod, response)
    assert out["metadata"]["labels"] == {DESIRED_CAPACITY: "on-demand"}
    assert out["metadata"]["annotations"][DELETION_COST] == "1"
    assert RESERVATION in out["metadata"]["annotations"]


async def test_no_patch_when_nothing_changes(served: Served) -> None:
    first = pod_doc()
    once = patched(first, (await served.post(review("a", first)))["response"])
    again = (await served.post(review("b", once)))["response"]  # a reinvocation
    assert again == {"uid": "b", "allowed": True}
    standalone = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    assert (await served.post(review("c", standalone)))["response"] == {"uid": "c", "allowed": True}
    update = (await served.post(review("d", pod_doc(), op="UPDATE")))["response"]
    assert update == {"uid": "d", "allowed": True}


async def test_invalid_annotation_is_allowed_unchanged_with_a_warning(served: Served) -> None:
    served.webhook.workloads = StaticWorkloads(deployment_m="many")
    response = (await served.post(review("w", pod_doc())))["response"]
    assert "patch" not in response
    assert response["allowed"] is True
    assert "min-available='many'" in response["warnings"][0]


async def test_not_an_admission_review_is_a_400(served: Served) -> None:
    ctx = client_context(served.ca)
    async with served.session.post(served.url, data=b"{", ssl=ctx) as response:
        assert response.status == 400


async def test_a_client_verifying_another_ca_is_refused(served: Served) -> None:
    other = mint(["localhost"])
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await served.post(review("x", pod_doc()), ca=other.ca)


async def test_certificate_files_rotated_are_served_after_reload(served: Served) -> None:
    rotated = mint(["localhost", "127.0.0.1"])
    write_bundle(rotated, served.certs)
    assert served.tls.reload_if_changed()
    assert not served.tls.reload_if_changed()  # nothing changed since
    await served.session.close()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s:
        served.session = s
        assert (await served.post(review("r", pod_doc()), ca=rotated.ca))["response"]["uid"] == "r"
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await served.post(review("r2", pod_doc()))  # the old CA no longer verifies


async def test_500_concurrent_admissions_give_exactly_m_on_demand(served: Served) -> None:
    pods = [pod_doc() for _ in range(500)]
    answers = await asyncio.gather(*(served.post(review(f"u{i}", p)) for i, p in enumerate(pods)))
    labels = [
        patched(p, a["response"])["metadata"]["labels"][DESIRED_CAPACITY]
        for p, a in zip(pods, answers, strict=True)
    ]
    assert labels.count("on-demand") == M
    assert labels.count("spot") == 500 - M
    assert {a["response"]["uid"] for a in answers} == {f"u{i}" for i in range(500)}


async def test_dry_run_admissions_reserve_nothing(served: Served) -> None:
    for i in range(10):
        response = (await served.post(review(f"d{i}", pod_doc(), dry_run=True)))["response"]
        assert patched(pod_doc(), response)["metadata"]["labels"][DESIRED_CAPACITY] == "on-demand"
    assert served.webhook.ledger.count("Deployment/default/web", 0.0) == 0


# --- on the embedded API server ----------------------------------------------------------------


async def test_two_replicas_sharing_a_lease_give_exactly_m_among_500() -> None:
    async with hub() as (_server, gw):
        replicas = [
            SpotWebhook(StaticWorkloads(), Ledger(), shared=LeaseReservations(gw, f"r{i}"))
            for i in range(2)
        ]
        pods = [pod_doc() for _ in range(500)]
        answers = await asyncio.gather(
            *(replicas[i % 2].review(review(f"u{i}", p)) for i, p in enumerate(pods))
        )
        labels = [
            patched(p, a["response"])["metadata"]["labels"][DESIRED_CAPACITY]
            for p, a in zip(pods, answers, strict=True)
        ]
        assert labels.count("on-demand") == M
        shared = [r.shared for r in replicas if r.shared is not None]
        assert sum(s.writes for s in shared) <= 2 * M  # group commits, not one write per pod
        ref = WorkloadRef("Deployment", "default", "web")
        stored, _ = await shared[0].read(ref)
        assert len(stored) == M


async def test_pod_informer_feeds_the_ledger_and_deletions_give_places_back() -> None:
    async with hub() as (_server, gw):
        ledger = Ledger()
        config = MutationConfig()
        view = ClusterView(gw, ledger, config, lambda: 0.0, workloads=StaticWorkloads())
        webhook = SpotWebhook(view, ledger, clock=lambda: 0.0)
        view.start()
        try:
            await view.wait_synced(5)
            created = []
            for i in range(8):
                doc = pod_doc(f"{RS}-p{i}")
                response = (await webhook.review(review(f"u{i}", doc)))["response"]
                created.append(await gw.create(parse_as(Pod, patched(doc, response))))
            on_demand = [
                p for p in created if (p.metadata.labels or {}).get(DESIRED_CAPACITY) == "on-demand"
            ]
            assert len(on_demand) == M
            key = "Deployment/default/web"
            await eventually(lambda: len(ledger._books[key].alive) == M)
            assert ledger.count(key, 0.0) == M  # each pod counted once, not also as a reservation
            for p in on_demand[:2]:
                await gw.delete(Pod, p.name, "default")
            await eventually(lambda: ledger.count(key, 0.0) == M - 2)
            labels = []
            for i in range(4):
                doc = pod_doc(f"{RS}-r{i}")
                response = (await webhook.review(review(f"r{i}", doc)))["response"]
                labels.append(patched(doc, response)["metadata"]["labels"][DESIRED_CAPACITY])
            assert labels == ["on-demand", "on-demand", "spot", "spot"]
        finally:
            await view.stop()


async def test_each_decision_is_one_log_line_naming_the_pod_and_where_it_goes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="controllers.addons.webhook")
    webhook = SpotWebhook(StaticWorkloads(), Ledger(), clock=lambda: 0.0)
    for i in range(M + 1):
        await webhook.review(review(f"u{i}", pod_doc(f"web-{i}")))
    await webhook.review(review("x", {"apiVersion": "v1", "kind": "Pod", "metadata": {}}))
    lines = [r.getMessage() for r in caplog.records if r.name == "controllers.addons.webhook"]
    assert lines == [f"pod default/web-{i}: on-demand" for i in range(M)] + [
        f"pod default/web-{M}: spot"
    ]  # a pod of no workload is left alone, and says nothing
