"""The pod scheduler's hands: performs the engine's actions against the API server.

The engine decides; this module only writes. Each action becomes one request:

* `BindPod` -> POST `pods/binding` whose metadata carries the pod's uid, as kube-scheduler's
  default binder sends it: a real API server refuses to bind a pod recreated under the same
  name. 409 (bound by someone else, or a stale uid) and 404 (gone) are a `conflict` result
  (forget the pod, no retry); any other failure is a plain failure (backoff and retry).
* `DeletePod` -> DELETE with a uid precondition, so that a victim replaced by a new pod of the
  same name is not deleted in its place. 404 and 409 mean the victim is gone already.
* `PatchPodStatus` -> a merge patch of `pods/status`. A merge patch replaces lists whole, so the
  patch carries every condition the pod has, with PodScheduled replaced (kube-scheduler sends a
  strategic merge patch, which merges conditions by type; this is the same outcome). Nothing is
  sent when the pod already shows what the patch would write.
* `PatchObjectStatus` -> a merge patch of the PodGroup's or ElasticQuota's `/status`.
* `EmitEvent` -> `EventEmitter`: events.k8s.io/v1 Events written in the background by a few
  workers, never holding scheduling or binding up (see its docstring).

Binding cycles run concurrently with scheduling: `submit` returns at once, and the writes run
as tasks, at most `concurrency` requests at a time. The actions of one pod run in the order they
were decided (a status patch decided before the bind lands before it), so a late
`Unschedulable` patch never overwrites the `PodScheduled=True` the binding wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from apis.core import Event, Pod
from apis.meta import KubeObject
from apis.registry import KINDS
from controllers.kube.errors import (
    ApiError,
    ConflictError,
    NotFoundError,
)
from controllers.kube.gateway import Gateway, WatchEvent, collection_path, object_path
from controllers.runtime.events import truncated_note
from placement.pods.events import (
    Action,
    BindPod,
    BindResult,
    DeletePod,
    EmitEvent,
    PatchObjectStatus,
    PatchPodStatus,
    WakeAt,
)

__all__ = [
    "ActionExecutor",
    "EventEmitter",
    "ExecutorCounts",
    "PodGateway",
    "pod_status_patch",
    "split_key",
]

log = logging.getLogger(__name__)

ObjT = TypeVar("ObjT", bound=KubeObject)

POD_SCHEDULED = "PodScheduled"


def split_key(key: str) -> tuple[str, str]:
    """`namespace/name` -> (namespace, name); a cluster-scoped `name` -> ("", name)."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else ("", namespace)


class PodGateway(Gateway):
    """The gateway plus the two pod writes the scheduler needs with a uid precondition, which
    `Gateway.bind` and `Gateway.delete` do not send. Bodies may be given as JSON bytes.

    Pods read from lists and watches are parsed once per resourceVersion: a binding shows up on
    both pod watches (DELETED from the pending pods' selector, ADDED to the assigned pods') with
    the same object, and the second is the model parsed for the first (`pods_reused`)."""

    POD_CACHE = 4096
    """Pod models kept by (uid, resourceVersion): the two watches never drift further apart."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pods: OrderedDict[tuple[str, str], Pod] = OrderedDict()
        self.pods_parsed = 0
        self.pods_reused = 0

    async def bind_pod(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST `pods/binding` with the pod's uid in the Binding's metadata."""
        meta: dict[str, str] = {"name": name, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = object_path(Pod, name, namespace, "binding")
        await self._send("POST", path, json.dumps(binding).encode())

    async def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        """DELETE the pod if it is still the one with `uid` (DeleteOptions preconditions)."""
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            options["preconditions"] = {"uid": uid}
        await self._request("DELETE", object_path(Pod, name, namespace), body=options)

    async def create_raw(self, cls: type[KubeObject], namespace: str | None, body: bytes) -> None:
        """POST a JSON body to `cls`'s collection; the answer is not read into a model."""
        await self._send("POST", collection_path(cls, namespace), body)

    def _event(self, cls: type[ObjT], line: bytes) -> WatchEvent[ObjT]:
        """A watch event as the gateway makes it; a Pod already seen on a watch at this
        resourceVersion is the same model (class docstring). Only watched pods are shared:
        they go to the informers' stores, which nobody changes."""
        if cls is not Pod:
            return super()._event(cls, line)
        try:
            raw = json.loads(line)
        except ValueError:
            return super()._event(cls, line)  # its error
        kind, doc = raw.get("type"), raw.get("object")
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        uid = meta.get("uid") if isinstance(meta, dict) else None
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if kind not in ("ADDED", "MODIFIED", "DELETED") or not uid or not version:
            return super()._event(cls, line)
        pod: Any = self._pods.get((uid, version))
        if pod is None:
            pod = self._typed(Pod, doc)
            self.pods_parsed += 1
            self._pods[(uid, version)] = pod
            if len(self._pods) > self.POD_CACHE:
                self._pods.popitem(last=False)
        else:
            self.pods_reused += 1
        return WatchEvent(kind, cast(ObjT, pod), str(version))


def _condition_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    if old is None:
        return True
    return any(old.get(k) != new.get(k) for k in ("status", "reason", "message"))


def pod_status_patch(pod: Pod | None, action: PatchPodStatus, now: datetime) -> dict[str, Any]:
    """The merge patch that makes `pod`'s status say what `action` decides; {} when it already
    does. `lastTransitionTime` moves only when the condition's status changes, as Kubernetes
    keeps it; `lastProbeTime` is null, as kube-scheduler writes it."""
    status: dict[str, Any] = {}
    current = pod.status if pod is not None else None
    if action.nominated_node is not None:
        have = (current.nominated_node_name if current else None) or ""
        if have != action.nominated_node:
            # A merge patch removes a field with null.
            status["nominatedNodeName"] = action.nominated_node or None
    if action.condition is not None:
        conditions = [dict(c) for c in ((current.conditions if current else None) or [])]
        old = next((c for c in conditions if c.get("type") == POD_SCHEDULED), None)
        if _condition_changed(old, action.condition):
            new = {"type": POD_SCHEDULED, "lastProbeTime": None, **action.condition}
            if old is not None and old.get("status") == new.get("status"):
                new.setdefault("lastTransitionTime", old.get("lastTransitionTime"))
            else:
                stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                new.setdefault("lastTransitionTime", stamp)
            kept = [c for c in conditions if c.get("type") != POD_SCHEDULED]
            status["conditions"] = [*kept, new]
    return {"status": status} if status else {}


_MAX_NAME = 253
_NAME_SUFFIX = 17  # "." and 16 hex digits
_MAX_FIELD = 128  # reportingInstance, action and reason
_EVENT_API = Event.api_version_string()


@dataclass
class _Queued:
    """One Event waiting for a worker; `count` > 1 once later identical ones were folded in."""

    namespace: str
    body: dict[str, Any]
    count: int = 1
    first: datetime = field(default_factory=lambda: datetime.now(UTC))


def _micro_time(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventEmitter:
    """The scheduler's Events (Scheduled, FailedScheduling, Preempted), written as
    events.k8s.io/v1 Events in the background, in the manner of client-go's event broadcaster:

    * `emit` never waits: the event joins a queue that `workers` tasks write from, one create
      at a time each, so events take a few of the API server's hands and binds the rest (events
      trail the bindings during a burst, and catch up after);
    * an event identical to one still queued (same object, type, reason, action, note, as
      client-go's series key) is folded into it: it is written once, with a `series` counting
      the repetitions (a pod retried while the queue is long reports FailedScheduling once);
    * beyond `max_queued` events waiting, new ones are dropped, counted and logged once per
      burst (client-go drops past 1,000 queued); writes that fail are logged, never retried;
    * the request is built as JSON directly and the server's answer is not parsed.

    `on_recorded(reason, outcome)` hears `created`, `failed` or `dropped` once per event
    emitted (a folded event is reported when its write ends)."""

    def __init__(
        self,
        gateway: PodGateway,
        *,
        controller: str,
        instance: str | None = None,
        wall: Callable[[], datetime] | None = None,
        workers: int = 4,
        max_queued: int = 10_000,
        on_recorded: Callable[[str, str], None] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"event workers must be at least 1 (got {workers})")
        self._gateway = gateway
        self.controller = controller[:_MAX_FIELD]
        self.instance = (instance if instance is not None else socket.gethostname())[:_MAX_FIELD]
        self._wall = wall or (lambda: datetime.now(UTC))
        self.workers = workers
        self.max_queued = max_queued
        self._on_recorded = on_recorded
        self._queue: deque[tuple[tuple[str, ...], _Queued]] = deque()
        self._waiting: dict[tuple[str, ...], _Queued] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_stamp = 0
        self._dropping = False
        self.created = 0
        self.failed = 0
        self.dropped = 0
        self.folded = 0

    @property
    def pending(self) -> int:
        """Events queued or being written."""
        return len(self._queue) + len(self._tasks)

    def emit(
        self,
        regarding: Mapping[str, Any],
        related: Mapping[str, Any] | None,
        type: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        """Queue one Event about `regarding` (an ObjectReference as JSON: apiVersion, kind,
        name, namespace, uid...); see the class docstring."""
        note = truncated_note(note)
        key = (
            str(regarding.get("kind", "")),
            str(regarding.get("namespace", "")),
            str(regarding.get("name", "")),
            str(regarding.get("uid", "")),
            type,
            reason,
            action,
            note,
        )
        queued = self._waiting.get(key)
        if queued is not None:
            queued.count += 1
            self.folded += 1
            return
        if len(self._queue) >= self.max_queued:
            self.dropped += 1
            if not self._dropping:
                log.warning(
                    "dropping event %s: %d events queued (max_queued)", reason, len(self._queue)
                )
            self._dropping = True
            self._report(reason, "dropped", 1)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.dropped += 1
            self._report(reason, "dropped", 1)
            return
        now = self._wall()
        namespace = str(regarding.get("namespace") or "default")
        body: dict[str, Any] = {
            "apiVersion": _EVENT_API,
            "kind": "Event",
            "metadata": {"name": self._name(str(regarding.get("name", "")), now)},
            "eventTime": _micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action[:_MAX_FIELD],
            "reason": reason[:_MAX_FIELD],
            "regarding": dict(regarding),
            "note": note,
            "type": type,
        }
        if related is not None:
            body["related"] = dict(related)
        queued = _Queued(namespace, body, first=now)
        self._waiting[key] = queued
        self._queue.append((key, queued))
        if len(self._tasks) < self.workers:
            task = loop.create_task(self._work(), name="scheduler events")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        """Wait until every event emitted so far (and meanwhile) is written or has failed."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def cancel(self) -> None:
        """Stop writing; the events still queued are dropped."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        while self._queue:
            key, queued = self._queue.popleft()
            self._waiting.pop(key, None)
            self.dropped += queued.count
            self._report(str(queued.body["reason"]), "dropped", queued.count)

    def _name(self, regarding: str, now: datetime) -> str:
        # client-go's `<name>.<UnixNano in hex>`, the stamp strictly increasing (no two alike
        # under a frozen clock).
        stamp = max(int(now.timestamp() * 1_000_000) * 1000, self._last_stamp + 1)
        self._last_stamp = stamp
        return f"{regarding[: _MAX_NAME - _NAME_SUFFIX]}.{stamp & (2**64 - 1):016x}"

    async def _work(self) -> None:
        while self._queue:
            key, queued = self._queue.popleft()
            self._waiting.pop(key, None)
            body = queued.body
            body["metadata"]["namespace"] = queued.namespace
            if queued.count > 1:
                body["series"] = {
                    "count": queued.count,
                    "lastObservedTime": _micro_time(self._wall()),
                }
            reason = str(body["reason"])
            try:
                await self._gateway.create_raw(Event, queued.namespace, json.dumps(body).encode())
            except Exception as exc:  # best effort: whatever went wrong, scheduling goes on
                self.failed += queued.count
                log.warning("event %s about %s not recorded: %s", reason, key[2], exc)
                self._report(reason, "failed", queued.count)
            else:
                self.created += 1
                self._dropping = False
                self._report(reason, "created", queued.count)

    def _report(self, reason: str, outcome: str, count: int) -> None:
        if self._on_recorded is None:
            return
        for _ in range(count):
            try:
                self._on_recorded(reason, outcome)
            except Exception:
                log.exception("on_recorded callback failed")


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
        self.counts = ExecutorCounts()

    @property
    def pending(self) -> int:
        """Writes queued or in flight."""
        return len(self._tasks)

    def submit(self, actions: Iterable[Action]) -> None:
        """Start performing `actions` (never waits). Events are recorded at once, writes
        queued behind the earlier writes of the same object."""
        for action in actions:
            if isinstance(action, WakeAt):
                continue  # the scheduling loop reads the engine's next_wake itself
            if isinstance(action, EmitEvent):
                self._emit(action)
                continue
            self._spawn(self._target(action), action)

    async def wait_room(self) -> None:
        """Wait while `max_pending` writes are queued: how scheduling slows down to the pace
        the API server takes binds at, instead of queueing without bound."""
        while len(self._tasks) >= self.max_pending:
            self._room.clear()
            await self._room.wait()

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for every write queued so far (a graceful stop lets binds in flight finish)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self._tasks:
                    await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def cancel(self) -> None:
        """Cancel what is still queued (a stop that cannot wait any longer)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # --- internals ---------------------------------------------------------------------------

    @staticmethod
    def _target(action: Action) -> str:
        if isinstance(action, PatchObjectStatus):
            return f"{action.kind}:{action.key}"
        assert isinstance(action, BindPod | DeletePod | PatchPodStatus)
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
        async with self._slots:
            if isinstance(action, BindPod):
                await self._bind(action)
            elif isinstance(action, DeletePod):
                await self._delete(action)
            elif isinstance(action, PatchPodStatus):
                await self._patch_pod(action)
            elif isinstance(action, PatchObjectStatus):
                await self._patch_object(action)

    async def _bind(self, action: BindPod) -> None:
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
            result = BindResult(action.key, action.uid, action.node, True)
        self._deliver(result)

    def _deliver(self, result: BindResult) -> None:
        try:
            self._on_bind_result(result)
        except Exception:
            log.exception("bind result handler failed for %s", result.key)

    async def _delete(self, action: DeletePod) -> None:
        namespace, name = split_key(action.key)
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
