"""PreBind's ResourceClaim writes on a cluster (`AllocateClaims`), as kube-scheduler v1.36's
DynamicResources plugin makes them, one claim after the other:

* a claim the scheduler allocated gets the finalizer `resource.kubernetes.io/delete-protection`
  first, in an update of the whole claim (its resourceVersion the precondition; skipped when
  the finalizer is there already, as after an interrupted attempt), so that the claim cannot
  disappear while devices are allocated to it;
* then one update of the claim's `status`: the `allocation` (with its `allocationTimestamp`,
  which kube v1.36 writes since device binding conditions are on by default) and the pod
  appended to `reservedFor` (`{resource: pods, name, uid}`). A claim allocated already only
  gets the pod appended.

A conflict (the claim changed meanwhile) is retried as kube's `retry.RetryOnConflict` with its
default backoff does: the first attempt starts from the informer's claim, every later one from
a fresh GET, at most five attempts 10 ms apart. A claim being deleted, or allocated by someone
else meanwhile, fails the write with kube's words (`claim <ns>/<name> got deleted in the
meantime`, `... got allocated elsewhere in the meantime`), as does any other refusal
(`add finalizer to claim <ns>/<name>: <error>`, `add allocation and reservation to claim ...`,
`add reservation to claim ...`).

When the pod's PreBind or its binding fails, kube's Unreserve takes the pod out of the
`reservedFor` of the claims reserved for it (their allocation stays; the claim controller or a
later attempt deals with it). Kube sends a strategic merge patch deleting the entry by uid; the
same change is sent here as a JSON patch testing the claim's uid and the entry's before
removing it, which every API server (the embedded one included) applies alike.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from apis.meta import KubeObject, format_time
from apis.registry import parse_as
from apis.resource import ResourceClaim
from controllers.addons.gateway import PodGateway
from controllers.kube.errors import ApiError, ConflictError, InvalidError, NotFoundError
from controllers.runtime.leader import NotLeaderError
from placement.pods.framework.events import AllocateClaims, ClaimAllocation

log = logging.getLogger(__name__)

__all__ = ["DELETE_PROTECTION", "ClaimWriteError", "ClaimWriter"]

Lookup = Callable[[str, str], KubeObject | None]

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
"""The finalizer kube-scheduler puts on a claim before writing its allocation."""

RETRY_STEPS = 5
RETRY_PAUSE = 0.01
"""client-go's `retry.DefaultRetry`: five attempts, 10 ms apart."""


class ClaimWriteError(Exception):
    """A claim could not be allocated or reserved for the pod (`str` is kube's message);
    `reserved` lists the claims of the action reserved for the pod before the failure."""

    def __init__(self, message: str, reserved: list[ResourceClaim]) -> None:
        super().__init__(message)
        self.reserved = reserved


class _FailedError(Exception):
    """A claim's write failed for good (not a conflict)."""


class _ConflictError(Exception):
    """A claim's write hit a conflict (`message` kube's, should it be the last attempt)."""


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


@dataclass
class ClaimWriter:
    """The writes of one scheduler (module docstring)."""

    gateway: PodGateway
    lookup: Lookup
    wall: Callable[[], datetime] = lambda: datetime.now(UTC)
    pause: float = RETRY_PAUSE
    reserved: dict[tuple[str, str], list[ResourceClaim]] = field(default_factory=dict)
    """The claims reserved per pod (key, uid) whose binding has not come back yet."""

    async def prebind(self, action: AllocateClaims) -> str | None:
        """The executor's `AllocateClaims`: None when every claim is reserved for the pod;
        else why not (kube's words), once the claims reserved before the failure are
        released again (kube's Unreserve)."""
        try:
            self.reserved[(action.key, action.uid)] = await self.reserve(action)
        except ClaimWriteError as exc:
            log.warning("claims of %s not reserved: %s", action.key, exc)
            await self.unreserve(exc.reserved, action.uid)
            return str(exc)
        return None

    async def bound(self, key: str, uid: str, ok: bool) -> None:
        """The pod's binding came back: its claims are released when it failed (kube's
        Unreserve after a failed binding), forgotten either way."""
        claims = self.reserved.pop((key, uid), None)
        if claims and not ok:
            await self.unreserve(claims, uid)

    async def reserve(self, action: AllocateClaims) -> list[ResourceClaim]:
        """Allocate and reserve every claim of `action` for its pod, in order; the claims as
        written. Raises `ClaimWriteError` at the first claim that fails."""
        done: list[ResourceClaim] = []
        pod = _split(action.key)[1]
        for entry in action.claims:
            try:
                done.append(await self._bind_claim(entry, pod, action.uid))
            except _FailedError as exc:
                raise ClaimWriteError(str(exc), done) from None
        return done

    async def _bind_claim(self, entry: ClaimAllocation, pod: str, pod_uid: str) -> ResourceClaim:
        namespace, name = _split(entry.key)
        cached = self.lookup(ResourceClaim.KIND, entry.key)
        claim = cached if isinstance(cached, ResourceClaim) else None
        last = ""
        for attempt in range(RETRY_STEPS):
            if attempt:
                await asyncio.sleep(self.pause)
            if claim is None or attempt:
                try:
                    claim = await self.gateway.get(ResourceClaim, name, namespace)
                except ApiError as exc:
                    # Not in the informer on a first attempt: gone since the scheduling cycle.
                    why = f"get updated claim {entry.key} after conflict: " if attempt else ""
                    raise _FailedError(f"{why}{exc}") from None
            try:
                return await self._attempt(claim, entry, pod, pod_uid)
            except _ConflictError as exc:
                last = str(exc)
        raise _FailedError(last)

    async def _attempt(
        self, claim: ResourceClaim, entry: ClaimAllocation, pod: str, pod_uid: str
    ) -> ResourceClaim:
        key = entry.key
        if claim.metadata.deletion_timestamp is not None:
            raise _FailedError(f"claim {key} got deleted in the meantime")
        doc = claim.to_wire()
        if entry.allocation is not None:
            if (doc.get("status") or {}).get("allocation"):
                raise _FailedError(f"claim {key} got allocated elsewhere in the meantime")
            finalizers = doc["metadata"].get("finalizers") or []
            if DELETE_PROTECTION not in finalizers:
                doc["metadata"]["finalizers"] = [*finalizers, DELETE_PROTECTION]
                try:
                    updated = await self.gateway.replace(parse_as(ResourceClaim, doc))
                except ConflictError as exc:
                    raise _ConflictError(f"add finalizer to claim {key}: {exc}") from None
                except ApiError as exc:
                    raise _FailedError(f"add finalizer to claim {key}: {exc}") from None
                doc = updated.to_wire()
            doc.setdefault("status", {})["allocation"] = dict(entry.allocation)
        status: dict[str, Any] = doc.setdefault("status", {})
        reference = {"resource": "pods", "name": pod, "uid": pod_uid}
        status["reservedFor"] = [*(status.get("reservedFor") or []), reference]
        allocation = status.get("allocation")
        if isinstance(allocation, dict) and not allocation.get("allocationTimestamp"):
            allocation["allocationTimestamp"] = format_time(self.wall())
        what = "allocation and reservation" if entry.allocation is not None else "reservation"
        try:
            return await self.gateway.replace_status(parse_as(ResourceClaim, doc))
        except ConflictError as exc:
            raise _ConflictError(f"add {what} to claim {key}: {exc}") from None
        except ApiError as exc:
            raise _FailedError(f"add {what} to claim {key}: {exc}") from None

    async def unreserve(self, claims: list[ResourceClaim], pod_uid: str) -> None:
        """Take the pod out of each claim's `reservedFor` (kube's Unreserve); a claim gone or
        no longer reserved for it is left alone, a failure only logged by the caller."""
        for claim in claims:
            try:
                await self._unreserve_one(claim, pod_uid)
            except (ApiError, NotLeaderError) as exc:  # kube only logs it: the next try will do
                log.warning("unreserve %s: %s", claim.key, exc)

    async def _unreserve_one(self, claim: ResourceClaim, pod_uid: str) -> None:
        current: ResourceClaim | None = claim
        for attempt in range(RETRY_STEPS):
            if current is None or attempt:
                if attempt:
                    await asyncio.sleep(self.pause)
                try:
                    current = await self.gateway.get(ResourceClaim, claim.name, claim.namespace)
                except NotFoundError:
                    return
            if current.metadata.uid != claim.metadata.uid:
                return  # replaced: not the claim reserved
            reserved = (current.status.reserved_for if current.status else None) or []
            index = next((i for i, r in enumerate(reserved) if r.uid == pod_uid), None)
            if index is None:
                return
            operations: list[dict[str, Any]] = [
                {"op": "test", "path": "/metadata/uid", "value": claim.metadata.uid},
                {"op": "test", "path": f"/status/reservedFor/{index}/uid", "value": pod_uid},
                {"op": "remove", "path": f"/status/reservedFor/{index}"},
            ]
            try:
                await self.gateway.json_patch(
                    ResourceClaim, claim.name, operations, claim.namespace, status=True
                )
                return
            except NotFoundError:
                return
            except (ConflictError, InvalidError):
                continue  # the list changed meanwhile: read it again
