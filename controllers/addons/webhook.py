"""The spot/on-demand mutating webhook server: AdmissionReview v1 over
HTTPS, the rules of `placement.spot.mutation`, the exact count of `placement.spot.ledger`.

`SpotWebhook.review` answers one AdmissionReview: the response echoes the request's uid and
apiVersion, is always `allowed` (this webhook places pods, it never refuses one), carries a
base64 JSONPatch only when the pod changes, and surfaces the rules' warnings (a bad
annotation), which kubectl prints. It reads the workload from the informers, so an admission
makes no API call in the steady state; with several replicas (`shared` set) the on-demand
admissions, at most M per workload plus replacements, also settle their reservations through a
Lease (group commit: one read and one write settle every admission of that workload waiting at
that moment). dryRun admissions are decided like the others and reserve nothing.

An on-demand place is granted only by an answer the API server can still use. The API server
hangs up at the configuration's `timeoutSeconds` and then creates the pod unmutated (`Ignore`)
or not at all (`Fail`, its controller retries): the server cancels the handler of a caller gone
and the place is given back at once. An answer not ready within `deadline` seconds (set it below
`timeoutSeconds`; kube does not send it) gives its place back and sends the pod to spot; an
answer that reaches the API server therefore never holds a place another pod needed. `AnswerDelay`
holds answers for tests (fault injection: `placement webhook run --fault-delay`).

`controllers.addons.webhook_server` serves it over HTTPS. Metrics (admissions by decision,
latency histogram, reservation conflicts) are served on the plain `--http-addr` with the
runtime's probes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from controllers.addons.webhook_input import (
    log_decision,
    pod_problems,
    with_identity,
)
from controllers.addons.webhook_metrics import WebhookMetrics
from controllers.addons.webhook_state import LeaseReservations, WorkloadSource
from controllers.kube.errors import ApiError
from placement.spot.ledger import Ledger, Settlement
from placement.spot.mutation import (
    Capacity,
    MutationConfig,
    Verdict,
    Workload,
    WorkloadRef,
    decide,
    min_available,
    patch,
    workload_of,
)

__all__ = [
    "DEFAULT_DEADLINE",
    "MUTATE_PATH",
    "AnswerDelay",
    "SpotWebhook",
    "WebhookMetrics",
]

log = logging.getLogger(__name__)

MUTATE_PATH: Final = "/mutate"
MAX_SETTLE_ATTEMPTS: Final = 20
DEFAULT_DEADLINE: Final = 3.0
"""Seconds within which an answer must be ready to grant an on-demand place: below the
API server's default `timeoutSeconds` (10) and our manifest's (5)."""


@dataclass(frozen=True)
class AnswerDelay:
    """Fault injection, for tests only: hold each of the first `first` answers (0: every
    answer) `seconds` after deciding it, as a loaded machine answers late."""

    seconds: float
    first: int = 0


@dataclass
class _Outcome:
    capacity: Capacity | None
    warnings: list[str] = field(default_factory=list)
    token: str | None = None
    workload: Workload | None = None  # whose place `token` holds


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
        deadline: float = DEFAULT_DEADLINE,
        delay: AnswerDelay | None = None,
        recount: Callable[[WorkloadRef], Awaitable[int]] | None = None,
    ) -> None:
        self.workloads = workloads
        self.recount = recount
        self.ledger = ledger
        self.config = config or MutationConfig()
        self.clock = clock
        self.shared = shared
        self.metrics = metrics or WebhookMetrics()
        self._locks: dict[str, asyncio.Lock] = {}
        self._settled: dict[str, bool] = {}
        self.deadline = deadline
        self.delay = delay
        self._delayed = 0
        self._background: set[asyncio.Future[Any]] = set()

    async def review(self, doc: Any, *, refuse: str | None = None) -> dict[str, Any]:
        """The AdmissionReview answering `doc`; ValueError if `doc` is not one. `refuse`: a
        problem found before (the body nested too deep): allowed unchanged, with it as the
        warning."""
        answer = await self.answer(doc, refuse=refuse)
        assert answer is not None  # a caller that is always there
        return answer

    async def answer(
        self,
        doc: Any,
        *,
        refuse: str | None = None,
        connected: Callable[[], bool] = lambda: True,
    ) -> dict[str, Any] | None:
        """`review`, for a caller that may hang up (`connected` turns False: the API server's
        `timeoutSeconds` passed): then None, and the on-demand place the answer held is given
        back, since the pod is created without it or not at all. An on-demand answer not ready
        within `deadline` seconds is sent to spot instead, its place given back too."""
        started = time.perf_counter()
        request = doc.get("request") if isinstance(doc, dict) else None
        if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
            self.metrics.admissions.labels("invalid").inc()
            raise ValueError("expected an AdmissionReview with request.uid")
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        outcome = _Outcome(None, [f"pod not placed: {refuse}"] if refuse is not None else [])
        try:
            if refuse is None:
                outcome = await self._safe_outcome(request, started)
            await self._hold()
        except asyncio.CancelledError:  # the server cancels the answer of a caller gone
            self._abandon(request, outcome, started)
            raise
        elapsed = time.perf_counter() - started
        if not connected():
            self._abandon(request, outcome, started)
            return None
        if outcome.token is not None and elapsed > self.deadline:
            self._release(outcome.workload, outcome.token, "late")
            outcome.token = None
            outcome.capacity = Capacity.SPOT
            outcome.warnings.append(
                f"sent to spot: the answer was ready after the webhook's deadline of "
                f"{self.deadline:g}s"
            )
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
            log_decision(log, request, decision, outcome.warnings)
        self.metrics.admissions.labels(decision).inc()
        self.metrics.latency.observe(time.perf_counter() - started)
        return {
            "apiVersion": doc.get("apiVersion") or "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }

    def _abandon(self, request: dict[str, Any], outcome: _Outcome, started: float) -> None:
        """The caller hung up before the answer: give its on-demand place back."""
        self._release(outcome.workload, outcome.token, "gone")
        outcome.token = None
        self.metrics.admissions.labels("abandoned").inc()
        elapsed = time.perf_counter() - started
        log_decision(log, request, "abandoned", [f"the API server hung up after {elapsed:.2f}s"])

    def _release(self, workload: Workload | None, token: str | None, reason: str) -> None:
        """Give back the place `token` reserved (no pod will carry it); with shared
        reservations, drop it from the Lease too, in the background."""
        if workload is None or token is None:
            return
        self.ledger.release(workload.ref.key, token, self.clock())
        self.metrics.released.labels(reason).inc()
        ref = workload.ref
        what = f"{ref.kind} {ref.namespace}/{ref.name}"
        log.info("on-demand place of %s given back: its answer was not used (%s)", what, reason)
        if self.shared is not None:
            self._keep(asyncio.ensure_future(self._publish(workload)))

    def _keep(self, task: asyncio.Future[Any]) -> None:
        """Let `task` finish in the background (a failure is logged; the place it would have
        settled is dropped from the Lease by the next settlement, or expires)."""
        self._background.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("shared on-demand count not settled: %s", task.exception())

    async def _publish(self, workload: Workload) -> None:
        limit, _ = min_available(workload, self.config)
        if limit is not None:
            async with self._locks.setdefault(workload.ref.key, asyncio.Lock()):
                await self._settle_all(workload, limit, [])

    async def _hold(self) -> None:
        delay = self.delay
        if delay is None or (delay.first and self._delayed >= delay.first):
            return
        self._delayed += 1
        await asyncio.sleep(delay.seconds)

    async def _safe_outcome(self, request: dict[str, Any], started: float) -> _Outcome:
        """`_outcome`, with a pod that is not one (wrong types) placed nowhere and named in a
        warning, and any other failure answered the same way rather than with a 500."""
        try:
            return await self._outcome(request, started)
        except Exception as exc:  # a well-formed answer whatever the review held
            log.exception("admission review %s: pod not placed", request.get("uid"))
            return _Outcome(None, [f"pod not placed: {type(exc).__name__}: {exc}"[:500]])

    async def _outcome(self, request: dict[str, Any], started: float) -> _Outcome:
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
        pod = with_identity(pod, request)
        ref = workload_of(pod, self.workloads.replica_set_owner)
        workload = self.workloads.workload(ref) if ref is not None else None
        if ref is not None and workload is None:
            warning = f"{ref.kind} {ref.namespace}/{ref.name} is not known yet; pod not placed"
            return _Outcome(None, [warning])
        now = self.clock()
        shared = self.shared is not None
        count = self.ledger.count(ref.key, now, shared=shared) if ref is not None else 0
        verdict = decide(pod, workload, count, self.config)
        full = workload is not None and self._full(verdict, workload, count, request)
        if full and workload is not None and await self._freed(workload, started):
            now = self.clock()
            count = self.ledger.count(workload.ref.key, now, shared=shared)
            verdict = decide(pod, workload, count, self.config)
            if verdict.counted:
                self.metrics.recounted.inc()
        outcome = _Outcome(verdict.capacity, list(verdict.warnings))
        if verdict.counted and workload is not None and not request.get("dryRun"):
            await self._reserve(workload, outcome, now, started)
        return outcome

    def _full(
        self, verdict: Verdict, workload: Workload, count: int, request: dict[str, Any]
    ) -> bool:
        """Whether a counted workload's pod is sent to spot because its count is full (the
        case a fresh read can overturn); dryRun admissions trust the cache."""
        if self.recount is None or request.get("dryRun"):
            return False
        limit, _ = min_available(workload, self.config)
        return (
            verdict.capacity is Capacity.SPOT
            and workload.ref.kind != "StatefulSet"
            and limit is not None
            and count >= limit
        )

    async def _freed(self, workload: Workload, started: float) -> bool:
        """Ask the API server whether places the cache counts are free (`recount`), within
        the deadline: past it, or if the read fails, the cache's count stands."""
        assert self.recount is not None
        left = self.deadline - (time.perf_counter() - started)
        try:
            freed = await asyncio.wait_for(self.recount(workload.ref), max(left, 0.0))
        except (ApiError, OSError, TimeoutError) as exc:
            reason = str(exc) or "past the deadline"
            log.warning("on-demand pods of %s not re-read: %s", workload.ref.key, reason)
            return False
        return freed > 0

    async def _reserve(
        self, workload: Workload, outcome: _Outcome, now: float, started: float
    ) -> None:
        """Take one of the workload's M places for this pod, or send it to spot: also when the
        shared count is not settled by the deadline (the place is then given back)."""
        limit, _ = min_available(workload, self.config)
        assert limit is not None  # a counted verdict read it
        key = workload.ref.key
        token = uuid.uuid4().hex
        shared = self.shared is not None
        if not self.ledger.try_reserve(key, token, limit, now, shared=shared):
            outcome.capacity = Capacity.SPOT
            return
        if shared:
            settling = asyncio.ensure_future(self._settle(workload, token, limit, outcome))
            left = self.deadline - (time.perf_counter() - started)
            try:
                done, _ = await asyncio.wait({settling}, timeout=max(left, 0.0))
            except asyncio.CancelledError:  # the caller hung up
                self._keep(settling)
                self._release(workload, token, "gone")
                raise
            if settling not in done:
                self._keep(settling)
                self._release(workload, token, "late")
                outcome.capacity = Capacity.SPOT
                outcome.warnings.append(
                    f"sent to spot: the on-demand count was not settled within the webhook's "
                    f"deadline of {self.deadline:g}s"
                )
                return
            if not settling.result():
                outcome.capacity = Capacity.SPOT
                return
        outcome.token, outcome.workload = token, workload

    async def _settle(self, workload: Workload, token: str, limit: int, outcome: _Outcome) -> bool:
        """Settle this replica's pending reservations of the workload through the Lease; True
        if `token` was granted."""
        async with self._locks.setdefault(workload.ref.key, asyncio.Lock()):
            if token not in self._settled:
                await self._settle_all(workload, limit, outcome.warnings)
            return self._settled.pop(token, False)

    async def _settle_all(self, workload: Workload, limit: int, warnings: list[str]) -> None:
        """Settle every pending reservation of the workload (and drop released ones from the
        Lease), the results into `_settled`; the caller holds the workload's lock."""
        assert self.shared is not None
        key = workload.ref.key
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
            self._adopt(key, settlement)
            return
        # The Lease failed: decide on this replica's own count rather than leave the
        # workload below its minimum (see the ledger's limits).
        self.metrics.fallbacks.inc()
        local = self.ledger.reserved(key)
        self._adopt(
            key, self.ledger.settle(key, local, self.ledger.pending(key), limit, self.clock())
        )
        warnings.append(
            f"on-demand count of {workload.ref.kind} {workload.ref.namespace}/"
            f"{workload.ref.name} not shared with other webhook replicas: {problem}"
        )

    def _adopt(self, key: str, settlement: Settlement) -> None:
        self.ledger.adopt(key, settlement, self.clock())
        self._settled.update(dict.fromkeys(settlement.granted, True))
        self._settled.update(dict.fromkeys(settlement.refused, False))
