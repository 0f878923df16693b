"""The embedded API server answers as kube-apiserver does where a client can tell: one script
of requests (`tests.e2e.differential_script.SCRIPT`) sent to both, each answer compared
(status code, reason, causes, the object). A difference is either fixed in the embedded server
or named in `KNOWN` with why (and listed in docs/architecture.md, "Where the embedded server
differs from kube-apiserver"); an unnamed difference fails the test, and so does a named one
that is gone, so the table stays true.

The watch from a too-old resourceVersion (1) gets 410 Gone on kube-apiserver because its watch
cache starts at the resourceVersion it first listed at, far above 1; the embedded server keeps
every event since its start, so the test compacts its history first (`Store.compact`): then
resourceVersion 1 is out of both servers' windows.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio

from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess
from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.differential import JSON, Outcome, WireGateway, run_script
from tests.e2e.differential_script import CLUSTER_SCOPED, SCRIPT

pytestmark = pytest.mark.asyncio

# Step name -> why the embedded server answers differently (docs/architecture.md lists them).
KNOWN: dict[str, str] = {
    "apply: another manager's value": "server-side apply keeps no managed fields: another "
    "manager's apply of a field is no conflict (kube: 409 FieldManagerConflict)",
    "managedclustersetbinding to another set": "refused as OCM's admission webhook refuses it "
    "on an OCM hub (the model's rule); the CRD alone, on a plain kube-apiserver, accepts it",
    "create node": "no node.kubernetes.io/not-ready taint (there is no node lifecycle "
    "controller to lift it: tests create Ready nodes) and no empty status.nodeInfo and "
    "daemonEndpoints",
    "create pod": "only the defaults the scheduler reads (priority, preemptionPolicy, "
    "schedulerName, terminationGracePeriodSeconds); not kube's container, DNS and restart "
    "defaults, the default not-ready/unreachable tolerations, nor the service account's "
    "token volume (no ServiceAccounts are served)",
    "delete pod": "a pod is deleted at once unless the kubelet simulation runs; kube-apiserver "
    "marks it for deletion for its grace period (30 s), bumping its generation",
    "watch: bookmarks": "kube-apiserver sends a watch's first BOOKMARK only after about a "
    "minute; the embedded server sends one every bookmark_interval (1 s by default) so that "
    "tests see them",
}


async def _prepare(gateway: WireGateway, namespace: str, real: bool) -> None:
    for path, body in [("/api/v1/namespaces", {"metadata": {"name": namespace}})] + (
        [(f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "default"}})]
        if real
        else []
    ):
        done = await gateway.call(
            "POST", path, query={}, body=body, content_type="application/json"
        )
        assert done.code == 201, done.describe()


@pytest_asyncio.fixture
async def real(control_plane: ControlPlane) -> AsyncIterator[WireGateway]:
    gateway = await WireGateway.open(ClusterAccess(kubeconfig=control_plane.kubeconfig))
    try:
        yield gateway
    finally:
        await gateway.close()


@pytest_asyncio.fixture
async def embedded() -> AsyncIterator[tuple[EmbeddedApiServer, WireGateway]]:
    server = EmbeddedApiServer()
    await server.start()
    gateway = await WireGateway.open(ClusterAccess(url=server.url))
    try:
        yield server, gateway
    finally:
        await gateway.close()
        await server.stop()


async def test_embedded_server_answers_as_kube_apiserver(
    real: WireGateway,
    embedded: tuple[EmbeddedApiServer, WireGateway],
    record_testsuite_property: Callable[[str, object], None],
) -> None:
    server, fake = embedded
    namespace, name = unique_name("diff"), unique_name("diff")
    await asyncio.gather(_prepare(real, namespace, True), _prepare(fake, namespace, False))
    server.store.compact()
    try:
        theirs, ours = await asyncio.gather(
            run_script(real, SCRIPT, namespace, name), run_script(fake, SCRIPT, namespace, name)
        )
    finally:
        for path in CLUSTER_SCOPED:
            await real.call(
                "DELETE", path.format(name=name), query={}, body=None, content_type=JSON
            )
    differing: dict[str, tuple[Outcome, Outcome]] = {}
    for step, kube, embedded_answer in zip(SCRIPT, theirs, ours, strict=True):
        if kube != embedded_answer:
            differing[step.name] = (kube, embedded_answer)
    same = len(SCRIPT) - len(differing)
    print(
        f"\ndifferential: {len(SCRIPT)} requests, {same} identical, "
        f"{len(differing)} differ ({len(KNOWN)} known)"
    )
    for key, value in (("requests", len(SCRIPT)), ("identical", same), ("known", len(KNOWN))):
        record_testsuite_property(f"differential_{key}", value)  # in a JUnit XML report
    report = []
    for step_name, (kube, embedded_answer) in differing.items():
        if step_name not in KNOWN:
            lines = difflib.unified_diff(
                kube.describe().splitlines(),
                embedded_answer.describe().splitlines(),
                "kube-apiserver",
                "embedded",
                n=2,
                lineterm="",
            )
            report.append(f"=== {step_name}\n" + "\n".join(lines))
    assert not report, "new differences:\n" + "\n".join(report)
    fixed = sorted(set(KNOWN) - set(differing))
    assert not fixed, f"known differences that are gone (remove them from KNOWN): {fixed}"
    assert set(KNOWN) <= {s.name for s in SCRIPT}
