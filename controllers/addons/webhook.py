"""The spot/on-demand mutating webhook server (DESIGN §8, issue 17): AdmissionReview v1 over
HTTPS, the rules of `placement.pods.mutation`, the exact count of `placement.pods.ledger`.

`SpotWebhook.review` answers one AdmissionReview: the response echoes the request's uid and
apiVersion, is always `allowed` (this webhook places pods, it never refuses one), carries a
base64 JSONPatch only when the pod changes, and surfaces the rules' warnings (a bad
annotation), which kubectl prints. It reads the workload from the informers, so an admission
makes no API call in the steady state; with several replicas (`shared` set) the on-demand
admissions, at most M per workload plus replacements, also settle their reservations through a
Lease (group commit: one read and one write settle every admission of that workload waiting at
that moment). dryRun admissions are decided like the others and reserve nothing.

`WebhookServer` serves `POST /mutate` plus `/healthz` and `/readyz` on HTTPS (the kubelet
probes with `scheme: HTTPS`); the certificate files are checked every `reload_interval` and
reloaded when they change. Metrics (admissions by decision, latency histogram, reservation
conflicts) are served on the plain `--http-addr` with the runtime's probes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web
from prometheus_client import Counter, Histogram

from controllers.addons.webhook_certs import ReloadingContext
from controllers.addons.webhook_input import MAX_DEPTH, parse_review, pod_problems
from controllers.addons.webhook_state import LeaseReservations, WorkloadSource
from controllers.kube.errors import ApiError
from controllers.runtime.http import MAX_BODY_BYTES, parse_address
from controllers.runtime.metrics import MetricsRegistry
from placement.pods.ledger import Ledger
from placement.pods.mutation import (
    Capacity,
    MutationConfig,
    Verdict,
    Workload,
    decide,
    min_available,
    patch,
    workload_of,
)

__all__ = ["MUTATE_PATH", "SpotWebhook", "WebhookMetrics", "WebhookServer"]

log = logging.getLogger(__name__)

MUTATE_PATH: Final = "/mutate"
LATENCY_BUCKETS: Final = (1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 0.5, 1.0)
MAX_SETTLE_ATTEMPTS: Final = 20


class WebhookMetrics(MetricsRegistry):
    """The webhook's series, beside the runtime's process and client series."""

    def __init__(self) -> None:
        super().__init__()
        self.admissions = Counter(
            "spot_webhook_admissions_total",
            "Admission reviews answered, by decision (on-demand, spot, unchanged, invalid).",
            ["decision"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "spot_webhook_admission_duration_seconds",
            "Seconds from reading an admission review to answering it.",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.conflicts = Counter(
            "spot_webhook_reservation_conflicts_total",
            "Writes of a workload's shared reservations refused by a concurrent write.",
            registry=self.registry,
        )
        self.fallbacks = Counter(
            "spot_webhook_reservation_fallbacks_total",
            "Admissions decided on this replica's count alone: the shared Lease failed.",
            registry=self.registry,
        )


@dataclass
class _Outcome:
    capacity: Capacity | None
    warnings: list[str] = field(default_factory=list)
    token: str | None = None


class SpotWebhook:
    """Answers AdmissionReviews; `shared` makes reservations exact across replicas."""

    def __init__(
        self,
        workloads: WorkloadSource,
        ledger: Ledger,
        *,
        config: MutationConfig | None = None,
        clock: Callable[[], float] = time.time,
        shared: LeaseReservations | None = None,
        metrics: WebhookMetrics | None = None,
    ) -> None:
        self.workloads = workloads
        self.ledger = ledger
        self.config = config or MutationConfig()
        self.clock = clock
        self.shared = shared
        self.metrics = metrics or WebhookMetrics()
        self._locks: dict[str, asyncio.Lock] = {}
        self._settled: dict[str, bool] = {}

    async def review(self, doc: Any, *, refuse: str | None = None) -> dict[str, Any]:
        """The AdmissionReview answering `doc`; ValueError if `doc` is not one. `refuse`: a
        problem found before (the body nested too deep): allowed unchanged, with it as the
        warning."""
        started = time.perf_counter()
        request = doc.get("request") if isinstance(doc, dict) else None
        if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
            self.metrics.admissions.labels("invalid").inc()
            raise ValueError("expected an AdmissionReview with request.uid")
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        if refuse is not None:
            outcome = _Outcome(None, [f"pod not placed: {refuse}"])
        else:
            outcome = await self._safe_outcome(request)
        if outcome.capacity is not None:
            pod = request["object"]
            ops = patch(pod, outcome.capacity, self.config, reservation=outcome.token)
            if ops:
                response["patchType"] = "JSONPatch"
                response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        if outcome.warnings:
            response["warnings"] = outcome.warnings
        decision = outcome.capacity.value if outcome.capacity is not None else "unchanged"
        if outcome.capacity is not None or outcome.warnings:
            _log_decision(request, decision, outcome.warnings)
        self.metrics.admissions.labels(decision).inc()
        self.metrics.latency.observe(time.perf_counter() - started)
        return {
            "apiVersion": doc.get("apiVersion") or "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }

    async def _safe_outcome(self, request: dict[str, Any]) -> _Outcome:
        """`_outcome`, with a pod that is not one (wrong types) placed nowhere and named in a
        warning, and any other failure answered the same way rather than with a 500."""
        try:
            return await self._outcome(request)
        except Exception as exc:  # a well-formed answer whatever the review held
            log.exception("admission review %s: pod not placed", request.get("uid"))
            return _Outcome(None, [f"pod not placed: {type(exc).__name__}: {exc}"[:500]])

    async def _outcome(self, request: dict[str, Any]) -> _Outcome:
        resource = request.get("resource")
        resource = resource if isinstance(resource, dict) else {}
        pod = request.get("object")
        if (
            request.get("operation") != "CREATE"
            or resource.get("resource") != "pods"
            or resource.get("group", "") != ""
            or request.get("subResource")
            or not isinstance(pod, dict)
        ):
            return _Outcome(None)
        problems = pod_problems(pod)
        if problems:
            shown = "; ".join(problems[:3]) + ("; ..." if len(problems) > 3 else "")
            return _Outcome(None, [f"pod not placed: {shown}"])
        pod = _with_identity(pod, request)
        ref = workload_of(pod, self.workloads.replica_set_owner)
        workload = self.workloads.workload(ref) if ref is not None else None
        if ref is not None and workload is None:
            warning = f"{ref.kind} {ref.namespace}/{ref.name} is not known yet; pod not placed"
            return _Outcome(None, [warning])
        now = self.clock()
        count = self.ledger.count(ref.key, now) if ref is not None else 0
        verdict = decide(pod, workload, count, self.config)
        outcome = _Outcome(verdict.capacity, list(verdict.warnings))
        if verdict.counted and workload is not None and not request.get("dryRun"):
            await self._reserve(workload, verdict, outcome, now)
        return outcome

    async def _reserve(
        self, workload: Workload, verdict: Verdict, outcome: _Outcome, now: float
    ) -> None:
        """Take one of the workload's M places for this pod, or send it to spot."""
        limit, _ = min_available(workload, self.config)
        assert limit is not None  # a counted verdict read it
        key = workload.ref.key
        token = uuid.uuid4().hex
        shared = self.shared is not None
        if not self.ledger.try_reserve(key, token, limit, now, shared=shared):
            outcome.capacity = Capacity.SPOT
            return
        if shared and not await self._settle(workload, token, limit, outcome):
            outcome.capacity = Capacity.SPOT
            return
        outcome.token = token

    async def _settle(self, workload: Workload, token: str, limit: int, outcome: _Outcome) -> bool:
        """Settle this replica's pending reservations of the workload through the Lease; True
        if `token` was granted."""
        assert self.shared is not None
        key = workload.ref.key
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if token in self._settled:
                return self._settled.pop(token)
            problem = "too many concurrent writers"
            for _ in range(MAX_SETTLE_ATTEMPTS):
                try:
                    shared, version = await self.shared.read(workload.ref)
                    pending = self.ledger.pending(key)
                    settlement = self.ledger.settle(key, shared, pending, limit, self.clock())
                    written = not settlement.changed or await self.shared.write(
                        workload, settlement.shared, version
                    )
                except ApiError as exc:
                    problem = str(exc)
                    break
                if not written:
                    self.metrics.conflicts.inc()
                    continue
                self.ledger.adopt(key, settlement)
                self._settled.update(dict.fromkeys(settlement.granted, True))
                self._settled.update(dict.fromkeys(settlement.refused, False))
                return self._settled.pop(token)
            # The Lease failed: decide on this replica's own count rather than leave the
            # workload below its minimum (see the ledger's limits).
            self.metrics.fallbacks.inc()
            local = self.ledger.reserved(key)
            settlement = self.ledger.settle(
                key, local, self.ledger.pending(key), limit, self.clock()
            )
            self.ledger.adopt(key, settlement)
            self._settled.update(dict.fromkeys(settlement.granted, True))
            self._settled.update(dict.fromkeys(settlement.refused, False))
            outcome.warnings.append(
                f"on-demand count of {workload.ref.kind} {workload.ref.namespace}/"
                f"{workload.ref.name} not shared with other webhook replicas: {problem}"
            )
            return self._settled.pop(token)


def _log_decision(request: dict[str, Any], decision: str, warnings: list[str]) -> None:
    """One line per pod placed (or left alone with a warning): which pod, where it goes."""
    found = request.get("object")
    pod: dict[str, Any] = found if isinstance(found, dict) else {}
    found = pod.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    name = meta.get("name") or f"{meta.get('generateName') or ''}*"
    namespace = request.get("namespace") or meta.get("namespace") or ""
    why = f" ({'; '.join(warnings)})" if warnings else ""
    log.info("pod %s/%s: %s%s", namespace, name, decision, why)


def _with_identity(pod: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The pod with its namespace (and name, if the request has one) filled in: on CREATE the
    object often carries neither, the request does."""
    meta = pod.get("metadata") or {}
    if meta.get("namespace") and (meta.get("name") or not request.get("name")):
        return pod
    meta = {**meta, "namespace": meta.get("namespace") or request.get("namespace") or ""}
    if not meta.get("name") and request.get("name"):
        meta["name"] = request["name"]
    return {**pod, "metadata": meta}


Ready = Callable[[], tuple[bool, str]]


class WebhookServer:
    """HTTPS: `POST /mutate`, `GET /healthz`, `GET /readyz`."""

    def __init__(
        self,
        webhook: SpotWebhook,
        tls: ReloadingContext,
        *,
        address: str = ":8443",
        ready: Ready = lambda: (True, ""),
        reload_interval: float = 2.0,
    ) -> None:
        self.webhook = webhook
        self.tls = tls
        self.host, self.port = parse_address(address)
        self.ready = ready
        self.reload_interval = reload_interval
        self._runner: web.AppRunner | None = None
        self._reloader: asyncio.Task[None] | None = None

    async def start(self) -> str:
        """Listen (port 0: a free one); the bound `host:port` back."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(MUTATE_PATH, self._mutate)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port, ssl_context=self.tls.context)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self.port = port
        self._reloader = asyncio.create_task(self._reload_loop(), name="webhook cert reload")
        log.info("spot webhook listening on https://%s:%s%s", host, port, MUTATE_PATH)
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    async def stop(self) -> None:
        if self._reloader is not None:
            self._reloader.cancel()
            await asyncio.wait({self._reloader})
            self._reloader = None
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _reload_loop(self) -> None:
        while True:
            await asyncio.sleep(self.reload_interval)
            self.tls.reload_if_changed()

    async def _mutate(self, request: web.Request) -> web.Response:
        try:
            doc, truncated = parse_review(await request.text())
            deep = f"the review is nested deeper than {MAX_DEPTH} levels" if truncated else None
            answer = await self.webhook.review(doc, refuse=deep)
        except ValueError as exc:  # JSONDecodeError too
            return web.Response(status=400, text=f"bad admission review: {exc}")
        return web.json_response(answer)

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _: web.Request) -> web.Response:
        ready, detail = self.ready()
        return web.Response(status=200 if ready else 503, text=detail or ("ok" if ready else ""))
