"""The pod scheduler's hands: performs the engine's actions against the API server.

The engine decides; this module only writes. Each action becomes one request:

* `BindPod` -> POST `pods/binding` whose metadata carries the pod's uid, as kube-scheduler's
  default binder sends it: a real API server refuses to bind a pod recreated under the same
  name. 409 (bound by someone else, or a stale uid) and 404 (gone) are a `conflict` result
  (forget the pod, no retry); any other failure is a plain failure (backoff and retry).
* `BindVolumes` -> as kube-scheduler's VolumeBinding: each volume pre-bound (its `spec.claimRef`
  and the `bound-by-controller` annotation), then a wait, holding no write slot, until the PV
  controller has bound the claims (`controllers.addons.volume_binder`), queued behind the pod's
  earlier writes and ahead of its binding. A failed write or wait fails the pod's binding
  instead (a failed `BindResult`; the `BindPod` that follows is not sent).
* `AllocateClaims` -> as kube-scheduler's DynamicResources PreBind: each claim's finalizer, then
  its allocation and the pod in its `reservedFor` (`controllers.addons.claim_writer`), queued
  ahead of the binding; a failure fails the binding as for volumes, and a binding that fails
  takes the pod out of its claims' `reservedFor` again (kube's Unreserve).
* `DeletePod` -> first, as kube-scheduler does, a status patch giving the victim the condition
  the engine decided (`DisruptionTarget`, reason `PreemptionByScheduler`; kube does not delete a
  victim it could not mark, and neither do we; nothing is sent when the victim carries that
  condition already), then the DELETE with a uid precondition, so that a victim replaced by a
  new pod of the same name is not deleted in its place. 404 and 409 mean the victim is gone
  already.
* `PatchPodStatus` -> a merge patch of `pods/status`. A merge patch replaces lists whole, so the
  patch carries every condition the pod has, with PodScheduled replaced (kube-scheduler sends a
  strategic merge patch, which merges conditions by type; this is the same outcome). Nothing is
  sent when the pod already shows what the patch would write.
* `PatchObjectStatus` -> a merge patch of the PodGroup's or ElasticQuota's `/status`.
* `EmitEvent` -> `EventEmitter` (`controllers.addons.emitter`): events.k8s.io/v1 Events
  written in the background by a few workers, never holding scheduling or binding up.

Every write goes through the scheduler's fenced gateway (`PodGateway.fenced`, the Lease's
elector as the fence): past the lease deadline a queued write is not sent and one in flight is
cancelled. Such a write raises `NotLeaderError`: a bind refused so comes back as a failed
`BindResult` (the pod is still pending on the server, the next leader schedules it), the other
writes are counted as `fenced` and dropped.

Binding cycles run concurrently with scheduling: `submit` returns at once, and the writes run
as tasks, at most `concurrency` requests at a time. The actions of one pod run in the order they
were decided (a status patch decided before the bind lands before it), so a late
`Unschedulable` patch never overwrites the `PodScheduled=True` the binding wrote.

A stop (`stop`, on SIGTERM) sends nothing more: the writes queued are dropped (their pods stay
pending on the server), those on the wire get a short grace and are then cancelled, each a
single request that landed or did not (docs/pod-scheduler.md "Stopping").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from apis.core import Pod
from apis.meta import KubeObject
from apis.registry import KINDS
from controllers.addons.claim_writer import ClaimWriter
from controllers.addons.emitter import EventEmitter
from controllers.addons.gateway import PodGateway
from controllers.addons.pod_patches import disruption_patch, pod_status_patch
from controllers.addons.volume_binder import VolumeBinder, VolumeBindError
from controllers.kube.errors import (
    ApiError,
    ConflictError,
    NotFoundError,
)
from controllers.runtime.leader import NotLeaderError
from placement.pods.framework.events import (
    Action,
    AllocateClaims,
    BindPod,
    BindResult,
    BindVolumes,
    DeletePod,
    EmitEvent,
    PatchObjectStatus,
    PatchPodStatus,
    WakeAt,
)

__all__ = [
    "ActionExecutor",
    "ExecutorCounts",
    "disruption_patch",
    "pod_status_patch",
    "split_key",
]

log = logging.getLogger(__name__)


def split_key(key: str) -> tuple[str, str]:
    """`namespace/name` -> (namespace, name); a cluster-scoped `name` -> ("", name)."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else ("", namespace)


@dataclass
class ExecutorCounts:
    """What the executor did, by outcome (for metrics and tests)."""

    bound: int = 0
    bind_conflicts: int = 0
    bind_failures: int = 0
    deleted: int = 0
    delete_failures: int = 0
    status_patches: int = 0
    status_failures: int = 0
    events: int = 0
    fenced: int = 0
    """Writes not sent (or cancelled in flight): the lease deadline had passed."""
    unsent: int = 0
    """Writes not sent because the scheduler was stopping (their pods stay pending)."""
    abandoned: int = 0
    """Writes on the wire when the stop's grace ran out: cancelled, landed or not."""


class ActionExecutor:
    """Runs actions in the background; bind outcomes come back through `on_bind_result`.

    `lookup(kind, key)` returns the object as the caches know it (None when unknown): the pod a
    status patch starts from, the object an event is about."""

    def __init__(
        self,
        gateway: PodGateway,
        events: EventEmitter,
        *,
        on_bind_result: Callable[[BindResult], None],
        lookup: Callable[[str, str], KubeObject | None],
        wall: Callable[[], datetime] | None = None,
        concurrency: int = 32,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"bind concurrency must be at least 1 (got {concurrency})")
        self._gateway = gateway
        self.events = events
        self._on_bind_result = on_bind_result
        self._lookup = lookup
        self._wall = wall or (lambda: datetime.now(UTC))
        self.concurrency = concurrency
        self._slots = asyncio.Semaphore(concurrency)
        self._tails: dict[str, asyncio.Task[None]] = {}  # the last write queued per object
        self._tasks: set[asyncio.Task[None]] = set()
        self._room = asyncio.Event()
        self._room.set()
        self.max_pending = concurrency * 8
        self._closed = False
        self._sending = 0  # writes on the wire
        self.counts = ExecutorCounts()
        self._volumes_failed: set[tuple[str, str]] = set()  # pods whose BindVolumes failed
        self.volumes = VolumeBinder(gateway, lookup)
        self.claims = ClaimWriter(gateway, lookup, self._wall)

    @property
    def pending(self) -> int:
        """Writes queued or in flight."""
        return len(self._tasks)

    def submit(self, actions: Iterable[Action]) -> None:
        """Start performing `actions` (never waits). Events are recorded at once, writes
        queued behind the earlier writes of the same object. Once `close` was called, nothing is
        done: the scheduler is stopping."""
        if self._closed:
            self.counts.unsent += sum(1 for a in actions if not isinstance(a, WakeAt | EmitEvent))
            return
        for action in actions:
            if isinstance(action, WakeAt):
                continue  # the scheduling loop reads the engine's next_wake itself
            if isinstance(action, EmitEvent):
                self._emit(action)
                continue
            self._spawn(self._target(action), action)

    def busy(self) -> bool:
        """Whether the writes queued take every slot (the scheduler's events wait meanwhile)."""
        return len(self._tasks) >= self.concurrency

    async def wait_room(self) -> None:
        """Wait while `max_pending` writes are queued: how scheduling slows down to the pace
        the API server takes binds at, instead of queueing without bound."""
        while len(self._tasks) >= self.max_pending and not self._closed:
            self._room.clear()
            await self._room.wait()

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for every write queued so far (a graceful stop lets binds in flight finish)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):  # on time out the writes are left running
                while self._tasks:
                    done, _ = await asyncio.wait(set(self._tasks))
                    for task in done:
                        if not task.cancelled():
                            task.exception()  # retrieved (logged by the task itself)

    async def cancel(self) -> None:
        """Cancel what is still queued (a stop that cannot wait any longer)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def close(self) -> None:
        """Take no more work (a stop begins): what is submitted from now on is dropped, and a
        write queued but not yet sent is never sent, so its pod stays pending on the server for
        the next leader. `wait_room` no longer waits."""
        self._closed = True
        self._room.set()

    async def stop(self, grace: float) -> None:
        """`close`, give the writes already sent `grace` seconds to be answered, then cancel
        them. A cancelled POST of `pods/binding` either landed or did not: the pod is bound or
        still pending, nothing in between. A pod whose volumes were pre-bound but not the pod
        itself stays pending with its claims bound (or about to be, by the PV controller): the
        next leader places it where those volumes are, as after a failed binding."""
        self.close()
        await self.drain(grace)
        self.counts.abandoned += self._sending
        self.counts.unsent += len(self._tasks) - self._sending
        await self.cancel()
        log.info(
            "stopping: %d writes not sent (their pods stay pending), %d cancelled on the wire",
            *(self.counts.unsent, self.counts.abandoned),
        )

    # --- internals ---------------------------------------------------------------------------

    @staticmethod
    def _target(action: Action) -> str:
        if isinstance(action, PatchObjectStatus):
            return f"{action.kind}:{action.key}"
        assert not isinstance(action, WakeAt | EmitEvent)
        return f"Pod:{action.key}"

    def _spawn(self, target: str, action: Action) -> None:
        before = self._tails.get(target)
        task = asyncio.get_running_loop().create_task(self._run(before, action))
        self._tails[target] = task
        self._tasks.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._tasks.discard(finished)
            if self._tails.get(target) is finished:
                del self._tails[target]
            if len(self._tasks) < self.max_pending:
                self._room.set()

        task.add_done_callback(done)

    async def _run(self, before: asyncio.Task[None] | None, action: Action) -> None:
        if before is not None:
            await asyncio.wait({before})
        prebound: dict[str, str] | None = None
        async with self._slots:
            if self._closed:  # stopping: not sent
                self.counts.unsent += 1
                return
            self._sending += 1
            try:
                if isinstance(action, BindPod):
                    await self._bind(action)
                elif isinstance(action, BindVolumes):
                    prebound = await self._bind_volumes(action)
                elif isinstance(action, AllocateClaims):
                    if (problem := await self.claims.prebind(action)) is not None:
                        self.counts.bind_failures += 1
                        self._fail_binding(action, problem)
                elif isinstance(action, DeletePod):
                    await self._delete(action)
                elif isinstance(action, PatchPodStatus):
                    await self._patch_pod(action)
                elif isinstance(action, PatchObjectStatus):
                    await self._patch_object(action)
            except NotLeaderError as exc:
                self.counts.fenced += 1
                log.info("%s %s: %s", type(action).__name__, self._target(action), exc)
                if isinstance(action, BindPod | BindVolumes | AllocateClaims):
                    self._fail_binding(action, str(exc))
            finally:
                self._sending -= 1
        if isinstance(action, BindVolumes) and prebound is not None:
            problem = await self.volumes.wait_bound(action, prebound)  # no slot held
            if problem is not None:
                self.counts.bind_failures += 1
                log.warning("volumes of %s not bound: %s", action.key, problem)
                self._fail_binding(action, problem)

    def _fail_binding(self, action: BindPod | BindVolumes | AllocateClaims, message: str) -> None:
        """The pod's binding failed (once: after failed PreBind writes, its bind is dropped)."""
        volumes = not isinstance(action, BindPod)  # the failure of a PreBind's writes
        if volumes:
            self._volumes_failed.add((action.key, action.uid))
        self._deliver(
            BindResult(action.key, action.uid, action.node, False, False, message, volumes)
        )

    async def _bind_volumes(self, action: BindVolumes) -> dict[str, str] | None:
        """Pre-bind the volumes; what was written (for the wait), None when it failed."""
        try:
            return await self.volumes.prebind(action)
        except (ApiError, VolumeBindError) as exc:
            self.counts.bind_failures += 1
            log.warning("binding the volumes of %s failed: %s", action.key, exc)
            self._fail_binding(action, f"binding volumes: {exc}")
            return None

    async def _bind(self, action: BindPod) -> None:
        if (action.key, action.uid) in self._volumes_failed:
            self._volumes_failed.discard((action.key, action.uid))
            return  # its volumes are not bound: the failed result went out already
        namespace, name = split_key(action.key)
        try:
            await self._gateway.bind_pod(namespace, name, action.uid, action.node)
        except (ConflictError, NotFoundError) as exc:
            self.counts.bind_conflicts += 1
            log.info("binding %s to %s: %s (forgotten)", action.key, action.node, exc)
            result = BindResult(action.key, action.uid, action.node, False, True, str(exc))
        except ApiError as exc:
            self.counts.bind_failures += 1
            log.warning("binding %s to %s failed: %s", action.key, action.node, exc)
            result = BindResult(action.key, action.uid, action.node, False, False, str(exc))
        else:
            self.counts.bound += 1
            log.info("bound %s to %s", action.key, action.node)  # kube-scheduler's -v=2 line
            result = BindResult(action.key, action.uid, action.node, True)
        if self.claims.reserved:  # only pods with claims are there: the common path skips it
            await self.claims.bound(action.key, action.uid, result.ok)
        self._deliver(result)

    def _deliver(self, result: BindResult) -> None:
        try:
            self._on_bind_result(result)
        except Exception:
            log.exception("bind result handler failed for %s", result.key)

    async def _delete(self, action: DeletePod) -> None:
        namespace, name = split_key(action.key)
        if not await self._mark_victim(action, namespace, name):
            return
        try:
            await self._gateway.delete_pod(namespace, name, action.uid)
        except (NotFoundError, ConflictError):
            log.info("preemption victim %s is gone already", action.key)
        except ApiError as exc:
            self.counts.delete_failures += 1
            log.warning("deleting preemption victim %s failed: %s", action.key, exc)
        else:
            self.counts.deleted += 1
            log.info("deleted %s: %s", action.key, action.reason)

    async def _mark_victim(self, action: DeletePod, namespace: str, name: str) -> bool:
        """Give the victim its DisruptionTarget condition; False when it must not be deleted
        (the patch failed) or is gone already."""
        victim = self._lookup("Pod", action.key)
        if not isinstance(victim, Pod) or (action.uid and victim.metadata.uid != action.uid):
            return True  # not in the cache: the DELETE's uid precondition decides
        patch = disruption_patch(victim, action.condition, self._wall())
        if not patch:
            return True
        try:
            await self._gateway.patch_status(Pod, name, patch, namespace)
        except NotFoundError:
            log.info("preemption victim %s is gone already", action.key)
            return False
        except ApiError as exc:
            self.counts.delete_failures += 1
            log.warning("marking preemption victim %s failed, not deleted: %s", action.key, exc)
            return False
        return True

    async def _patch_pod(self, action: PatchPodStatus) -> None:
        pod = self._lookup("Pod", action.key)
        if not isinstance(pod, Pod) or (action.uid and pod.metadata.uid != action.uid):
            return  # the pod is gone or was replaced: nothing to report on
        patch = pod_status_patch(pod, action, self._wall())
        if not patch:
            return
        namespace, name = split_key(action.key)
        try:
            await self._gateway.patch_status(Pod, name, patch, namespace)
        except NotFoundError:
            pass
        except ApiError as exc:
            self.counts.status_failures += 1
            log.warning("status of %s not patched: %s", action.key, exc)
        else:
            self.counts.status_patches += 1
            condition = action.condition or {}
            if condition.get("reason") == "Unschedulable":
                # Once per change of the diagnosis: an unchanged one is not patched again.
                log.info("%s unschedulable: %s", action.key, condition.get("message", ""))

    async def _patch_object(self, action: PatchObjectStatus) -> None:
        cls = next((c for c in KINDS.values() if action.kind == c.KIND), None)
        if cls is None:
            log.error("cannot patch the status of unknown kind %s", action.kind)
            return
        namespace, name = split_key(action.key)
        try:
            await self._gateway.patch_status(
                cls, name, {"status": action.status}, namespace or None
            )
        except ApiError as exc:
            self.counts.status_failures += 1
            log.warning("status of %s %s not patched: %s", action.kind, action.key, exc)
        else:
            self.counts.status_patches += 1

    def _emit(self, action: EmitEvent) -> None:
        related = self._reference(action.related) if action.related else None
        self.events.emit(
            self._reference(action.regarding),
            related,
            action.type,
            action.reason,
            action.action,
            action.message,
        )
        self.counts.events += 1

    def _reference(self, ref: tuple[str, str, str]) -> dict[str, str]:
        """The ObjectReference (as JSON) of what an event is about: with the cached object's
        resourceVersion when the caches know it under that uid, else its kind, name and uid."""
        kind, key, uid = ref
        namespace, name = split_key(key)
        cls = next((c for c in KINDS.values() if kind == c.KIND), Pod) if kind != "Pod" else Pod
        out = {"apiVersion": cls.api_version_string(), "kind": kind or cls.KIND, "name": name}
        if namespace:
            out["namespace"] = namespace
        known = self._lookup(kind, key)
        if known is not None and (not uid or known.metadata.uid == uid):
            uid = known.metadata.uid or ""
            if known.metadata.resource_version:
                out["resourceVersion"] = known.metadata.resource_version
        if uid:
            out["uid"] = uid
        return out
