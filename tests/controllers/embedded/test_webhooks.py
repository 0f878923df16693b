"""The embedded API server's mutating admission chain against scripted HTTPS webhooks: which
requests reach a webhook (rules, namespaceSelector, objectSelector), the patch applied, the
warnings as `Warning` headers, refusals with the webhook's status, failurePolicy on a webhook
that is down, times out, or whose certificate the caBundle does not verify, reinvocation,
dryRun, `clientConfig.service` refused, and the configuration's own validation."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from controllers.addons.webhook_certs import mint, write_bundle
from controllers.embedded import EmbeddedApiServer

pytestmark = pytest.mark.asyncio

Answer = Callable[[dict[str, Any]], dict[str, Any]]


def patch_of(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(ops).encode()).decode()}


def label(key: str, value: str) -> dict[str, Any]:
    return {"op": "add", "path": f"/metadata/labels/{key}", "value": value}


@dataclass
class Scripted:
    """An HTTPS webhook answering each path with a function of the request."""

    url: str
    ca: bytes
    answers: dict[str, Answer] = field(default_factory=dict)
    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delay: float = 0.0

    def ca_bundle(self, ca: bytes | None = None) -> str:
        return base64.b64encode(ca or self.ca).decode()


@pytest_asyncio.fixture
async def scripted(tmp_path: Path) -> AsyncIterator[Scripted]:
    bundle = mint(["localhost", "127.0.0.1"])
    paths = write_bundle(bundle, tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(paths["cert"], paths["key"])
    state = Scripted("", bundle.ca)

    async def handle(request: web.Request) -> web.Response:
        doc = await request.json()
        state.seen.append((request.path, doc["request"]))
        if state.delay:
            await asyncio.sleep(state.delay)
        response = {"uid": doc["request"]["uid"], "allowed": True}
        response.update(state.answers[request.path](doc["request"]))
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    state.url = f"https://localhost:{runner.addresses[0][1]}"
    try:
        yield state
    finally:
        await runner.cleanup()


@dataclass
class Api:
    server: EmbeddedApiServer
    session: aiohttp.ClientSession

    async def post(
        self, path: str, doc: dict[str, Any], query: str = ""
    ) -> tuple[int, dict[str, Any], list[str]]:
        url = f"{self.server.url}{path}{query}"
        async with self.session.post(url, json=doc) as response:
            return response.status, await response.json(), response.headers.getall("Warning", [])

    async def create_pod(
        self, name: str, namespace: str = "default", labels: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any], list[str]]:
        meta: dict[str, Any] = {"name": name, "labels": labels or {}}
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
        return await self.post(f"/api/v1/namespaces/{namespace}/pods", doc)

    async def configure(self, *hooks: dict[str, Any], name: str = "hooks") -> None:
        doc = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": list(hooks),
        }
        path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
        status, body, _ = await self.post(path, doc)
        assert status == 201, body


@pytest_asyncio.fixture
async def api() -> AsyncIterator[Api]:
    async with EmbeddedApiServer() as server, aiohttp.ClientSession() as session:
        yield Api(server, session)


def hook(
    scripted: Scripted, path: str, answer: Answer | None = None, **extra: Any
) -> dict[str, Any]:
    if answer is not None:
        scripted.answers[f"/{path}"] = answer
    doc: dict[str, Any] = {
        "name": f"{path}.example.com",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"url": f"{scripted.url}/{path}", "caBundle": scripted.ca_bundle()},
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }
        ],
    }
    doc.update(extra)
    return doc


async def test_matching_create_is_patched_and_warnings_become_headers(
    api: Api, scripted: Scripted
) -> None:
    def answer(_: dict[str, Any]) -> dict[str, Any]:
        return {**patch_of(label("placed", "yes")), "warnings": ["placed by the test"]}

    await api.configure(hook(scripted, "a", answer))
    status, pod, warnings = await api.create_pod("p1")
    assert status == 201
    assert pod["metadata"]["labels"] == {"placed": "yes"}
    assert warnings == ['299 - "placed by the test"']
    path, request = scripted.seen[0]
    assert path == "/a"
    assert request["operation"] == "CREATE"
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["namespace"] == "default"
    assert request["object"]["metadata"]["name"] == "p1"
    assert request["dryRun"] is False
    pods = next(r for r in api.server.resources if r.kind == "Pod")
    assert api.server.store.get(pods, "default", "p1")["metadata"]["labels"] == {"placed": "yes"}


async def test_requests_the_rules_do_not_name_never_reach_the_webhook(
    api: Api, scripted: Scripted
) -> None:
    rules = [
        {"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
    ]
    other = [
        {"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["*"]}
    ]
    cluster = [
        {
            "operations": ["*"],
            "apiGroups": ["*"],
            "apiVersions": ["*"],
            "resources": ["*/*"],
            "scope": "Cluster",
        }
    ]
    patches = patch_of(label("x", "y"))
    await api.configure(
        hook(scripted, "u", lambda _: patches, rules=rules),
        hook(scripted, "o", lambda _: patches, rules=other),
        hook(scripted, "c", lambda _: patches, rules=cluster),
    )
    status, pod, _ = await api.create_pod("p1")
    assert status == 201
    assert pod["metadata"]["labels"] == {}
    assert scripted.seen == []


async def test_namespace_and_object_selectors_choose_the_requests(
    api: Api, scripted: Scripted
) -> None:
    not_system = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
        ]
    }
    opted_in = {"matchLabels": {"spot": "yes"}}
    await api.configure(
        hook(
            scripted,
            "s",
            lambda _: patch_of(label("mutated", "true")),
            namespaceSelector=not_system,
            objectSelector=opted_in,
        )
    )
    _, in_system, _ = await api.create_pod("a", "kube-system", {"spot": "yes"})
    _, not_opted, _ = await api.create_pod("b", "default", {"spot": "no"})
    _, chosen, _ = await api.create_pod("c", "default", {"spot": "yes"})
    assert "mutated" not in in_system["metadata"]["labels"]
    assert "mutated" not in not_opted["metadata"]["labels"]
    assert chosen["metadata"]["labels"]["mutated"] == "true"
    assert [r["object"]["metadata"]["name"] for _, r in scripted.seen] == ["c"]


async def test_a_denial_is_answered_with_the_webhooks_status(api: Api, scripted: Scripted) -> None:
    def deny(_: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": False, "status": {"code": 403, "message": "no pods today"}}

    await api.configure(hook(scripted, "d", deny))
    status, body, _ = await api.create_pod("p1")
    assert status == 403
    assert body["message"] == 'admission webhook "d.example.com" denied the request: no pods today'
    pods = next(r for r in api.server.resources if r.kind == "Pod")
    assert list(api.server.store.list(pods, "default", None)) == []


@pytest.mark.parametrize(
    ("policy", "expected"),
    [pytest.param("Ignore", 201, id="ignore"), pytest.param("Fail", 500, id="fail")],
)
async def test_a_webhook_that_is_down_follows_the_failure_policy(
    api: Api, policy: str, expected: int
) -> None:
    down = {"url": "https://127.0.0.1:1/mutate"}
    await api.configure(
        {
            "name": "down.example.com",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": policy,
            "clientConfig": down,
            "rules": [
                {
                    "operations": ["CREATE"],
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": ["pods"],
                }
            ],
        }
    )
    status, body, _ = await api.create_pod("p1")
    assert status == expected
    if expected == 500:
        assert body["reason"] == "InternalError"
        assert 'failed calling webhook "down.example.com"' in body["message"]
    else:
        assert body["metadata"]["labels"] == {}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [pytest.param("Ignore", 201, id="ignore"), pytest.param("Fail", 500, id="fail")],
)
async def test_a_certificate_the_ca_bundle_does_not_verify_is_refused(
    api: Api, scripted: Scripted, policy: str, expected: int
) -> None:
    other = mint(["localhost"]).ca
    doc = hook(scripted, "t", lambda _: patch_of(label("x", "y")), failurePolicy=policy)
    doc["clientConfig"]["caBundle"] = scripted.ca_bundle(other)
    await api.configure(doc)
    status, body, _ = await api.create_pod("p1")
    assert status == expected
    assert scripted.seen == []  # the handshake failed: the webhook never saw the request
    if expected == 201:
        assert body["metadata"]["labels"] == {}
    else:
        assert "certificate verify failed" in body["message"]


async def test_a_webhook_slower_than_its_timeout_fails(api: Api, scripted: Scripted) -> None:
    scripted.delay = 1.5
    await api.configure(hook(scripted, "slow", lambda _: {}, timeoutSeconds=1))
    status, body, _ = await api.create_pod("p1")
    assert status == 500
    assert "context deadline exceeded" in body["message"]


async def test_a_bad_answer_is_a_call_failure_and_a_bad_patch_always_refuses(
    api: Api, scripted: Scripted
) -> None:
    await api.configure(
        hook(scripted, "uid", lambda _: {"uid": "someone-else"}, failurePolicy="Ignore"),
        hook(
            scripted,
            "bad",
            lambda _: patch_of({"op": "remove", "path": "/spec/missing"}),
            failurePolicy="Ignore",
        ),
    )
    status, body, _ = await api.create_pod("p1")
    assert status == 500
    assert "bad.example.com" in body["message"]
    assert [p for p, _ in scripted.seen] == ["/uid", "/bad"]


async def test_if_needed_webhooks_see_later_changes_once_more(api: Api, scripted: Scripted) -> None:
    def first(request: dict[str, Any]) -> dict[str, Any]:
        labels = request["object"]["metadata"]["labels"]
        return patch_of(label("first", str(len(labels))))

    await api.configure(
        hook(scripted, "first", first, reinvocationPolicy="IfNeeded"),
        hook(scripted, "never", lambda _: {}, reinvocationPolicy="Never"),
        hook(scripted, "second", lambda _: patch_of(label("second", "x"))),
        name="a",
    )
    status, pod, _ = await api.create_pod("p1")
    assert status == 201
    assert [p for p, _ in scripted.seen] == ["/first", "/never", "/second", "/first"]
    assert pod["metadata"]["labels"] == {"first": "2", "second": "x"}


async def test_dry_run_reaches_the_webhook_and_stores_nothing(api: Api, scripted: Scripted) -> None:
    await api.configure(hook(scripted, "d", lambda _: patch_of(label("x", "y"))))
    meta = {"name": "p1", "labels": {}}
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    status, pod, _ = await api.post("/api/v1/namespaces/default/pods", doc, "?dryRun=All")
    assert status == 201
    assert pod["metadata"]["labels"] == {"x": "y"}
    request = scripted.seen[0][1]
    assert request["dryRun"] is True
    assert request["options"]["dryRun"] == ["All"]
    pods = next(r for r in api.server.resources if r.kind == "Pod")
    assert list(api.server.store.list(pods, "default", None)) == []


async def test_a_service_reference_cannot_be_reached_by_the_embedded_server(api: Api) -> None:
    service = {"service": {"namespace": "spot-webhook", "name": "spot-webhook"}}
    await api.configure(
        {
            "name": "svc.example.com",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "clientConfig": service,
            "rules": [
                {
                    "operations": ["CREATE"],
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": ["pods"],
                }
            ],
        }
    )
    status, body, _ = await api.create_pod("p1")
    assert status == 500
    assert "set clientConfig.url" in body["message"]


@pytest.mark.parametrize(
    ("change", "field_name"),
    [
        pytest.param({"timeoutSeconds": 31}, "timeoutSeconds", id="timeout-over-30"),
        pytest.param({"sideEffects": "Some"}, "sideEffects", id="side-effects-v1beta1-only"),
        pytest.param({"failurePolicy": "Maybe"}, "failurePolicy", id="unknown-failure-policy"),
        pytest.param({"clientConfig": {}}, "clientConfig", id="no-url-or-service"),
    ],
)
async def test_an_invalid_configuration_is_refused(
    api: Api, scripted: Scripted, change: dict[str, Any], field_name: str
) -> None:
    doc = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "bad"},
        "webhooks": [{**hook(scripted, "x"), **change}],
    }
    path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
    status, body, _ = await api.post(path, doc)
    assert status == 422
    assert field_name in body["message"]
