"""The PodGroup and ElasticQuota status controllers: one controller running status rules
(`placement.pods.status.rule`; the rules are `placement.pods.status.podgroups` and
`placement.pods.status.elasticquotas`).

Informers keep every pod, the nodes (when a rule reads them) and the objects of each rule's
kind. A pod change queues the objects the rule says it concerns (its old and new labels both);
an object change queues that object, or every object of its kind when the rule couples them
(Σmin over all ElasticQuotas); a node change queues every object of the rules that read nodes.
Reconciling a key runs the rule on the informers' view and, when the status it wants differs
from the object's, writes the difference as a merge patch of the `/status` subresource (nulls
remove fields the rule dropped) and records the rule's events. A rule's `requeue_at` comes back
as the delay of the key (the PodGroup rule's 48-hour mark: the Timeout warning comes on time
even if nothing else happens to the group).

A rule's notices (the PodGroup 48-hour `Timeout` warning) stand as long as their condition
does; each is emitted once per object (uid) and reason. Within the process a set remembers
which were emitted; across restarts and changes of leader the Event's name does: it is derived
from the object's uid and the reason (`<name>.<16 hex digits>`, the shape of client-go's
names), so the server refuses a second one (AlreadyExists, not logged) while the first is
stored. kube-apiserver keeps Events for an hour by default (`--event-ttl`): a restart later
than that warns once more about a group still waiting. (The anchor's controller records the
warning at every reconcile of the group.)

Writes (status patches and events) are fenced by this controller's own Lease: they go through
`PodGateway.fenced` with its elector, so past the lease deadline nothing more is sent.

It runs inside `placement scheduler run` (its own client, so request metrics stay apart; its own
Lease with `--leader-elect`) and alone as `placement scheduler status run`. A kind whose CRD is
not served is not watched (its rule idles).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from apis.core import Node, Pod
from apis.meta import KubeObject
from apis.scheduling import ElasticQuota, PodGroup
from controllers.addons.gateway import PodGateway
from controllers.kube.errors import NotFoundError
from controllers.kube.gateway import Gateway
from controllers.runtime.cache import Informer
from controllers.runtime.controller import Controller, ControllerOptions
from controllers.runtime.discovery import served_kinds
from controllers.runtime.events import EventRecorder, EventType
from controllers.runtime.leader import LeaderConfig
from controllers.runtime.metrics import MetricsRegistry
from controllers.runtime.patches import merge_patch_between, without_nulls
from controllers.runtime.queue import Clock, Handler
from placement.pods.status.rule import StatusEvent, StatusOutcome, StatusRule
from placement.pods.status.rules import status_rules

__all__ = ["DEFAULT_RULES", "STATUS_CONTROLLER", "StatusController", "key_of", "notice_name"]

log = logging.getLogger(__name__)

STATUS_CONTROLLER = "pod-status-controller"
"""The controller's name (events' reportingController, work queue and log names)."""

DEFAULT_RULES: tuple[StatusRule, ...] = status_rules()

_CLASSES: dict[str, type[KubeObject]] = {"PodGroup": PodGroup, "ElasticQuota": ElasticQuota}


def key_of(obj: KubeObject) -> str:
    return f"{obj.metadata.namespace}/{obj.metadata.name}"


def notice_name(obj: KubeObject, reason: str) -> str:
    """The name of the one Event of a notice about `obj` (module docstring)."""
    digest = hashlib.sha256(f"{obj.metadata.uid}/{reason}".encode()).hexdigest()[:16]
    return f"{(obj.metadata.name or '')[:236]}.{digest}"


class _World:
    """The StatusWorld the rules read: the informers' stores, pods indexed by namespace."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Pod]] = {}
        self.kinds: dict[str, Informer[Any, Any]] = {}
        self.node_informer: Informer[Any, Any] | None = None

    def put(self, pod: Pod) -> None:
        self.pods.setdefault(pod.metadata.namespace or "", {})[pod.metadata.name or ""] = pod

    def drop(self, pod: Pod) -> None:
        namespace = self.pods.get(pod.metadata.namespace or "", {})
        namespace.pop(pod.metadata.name or "", None)

    def pods_in(self, namespace: str) -> Iterable[Pod]:
        return list(self.pods.get(namespace, {}).values())

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        informer = self.kinds.get(kind)
        if informer is None:
            return {}
        return {key_of(o): o for o in informer.list()}

    def nodes(self) -> Iterable[Node]:
        return self.node_informer.list() if self.node_informer is not None else []


class StatusController(Controller):
    """Keeps the status of every object of the rules' kinds (module docstring)."""

    def __init__(
        self,
        gateway: Gateway,
        rules: Sequence[StatusRule] = DEFAULT_RULES,
        *,
        http_addr: str | None = None,
        leader: LeaderConfig | None = None,
        workers: int = 2,
        clock: Clock | None = None,
        wall: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(
            gateway,
            ControllerOptions(workers=workers, resync=600.0, http_addr=http_addr, leader=leader),
            name=STATUS_CONTROLLER,
            metrics=MetricsRegistry(),
            clock=clock,
            wall=wall,
        )
        self.rules = {rule.kind: rule for rule in rules}
        self.world = _World()
        self.writes = 0  # status patches sent (tests read it)
        # Status patches and events pass the Lease's fence (module docstring).
        self.writer = PodGateway.fenced(gateway, self.fence)
        self.recorder = EventRecorder(
            self.writer,
            controller=STATUS_CONTROLLER,
            wall=self.wall,
            on_recorded=self.event_recorded,
        )
        self._noticed: dict[str, set[tuple[str, str]]] = {}  # kind|key -> {(uid, reason)}
        # The status each object got from our last write, by kind|key, with the version the
        # server gave it, until the informer shows that version: we are the only writer of
        # these statuses, so ours is the freshest one meanwhile (a reconcile on the informer's
        # older copy would redo the same transitions and repeat their events).
        self._written: dict[str, tuple[str | None, dict[str, Any]]] = {}

    # --- informers ---------------------------------------------------------------------------

    async def start(self, sync_timeout: float | None = 60.0) -> None:
        """Watch the kinds the server serves, then the runtime's start."""
        informers: list[Informer[Any, Any]] = []
        classes = [_CLASSES[kind] for kind in self.rules]
        served, sync_timeout = await served_kinds(self.gateway, classes, timeout=sync_timeout)
        for kind in list(self.rules):
            cls = _CLASSES[kind]
            if cls not in served:
                log.info("%s is not served (CRD not installed): its status is not kept", kind)
                del self.rules[kind]
                continue
            informer: Informer[Any, Any] = Informer(
                self.gateway,
                cls,
                on_add=self._object_changed,
                on_update=lambda _old, new: self._object_changed(new),
                on_delete=self._object_changed,
            )
            self.world.kinds[kind] = informer
            informers.append(informer)
        if any(rule.watches_nodes for rule in self.rules.values()):
            self.world.node_informer = Informer(
                self.gateway,
                Node,
                on_add=self._node_changed,
                on_update=lambda _old, new: self._node_changed(new),
                on_delete=self._node_changed,
            )
            informers.append(self.world.node_informer)
        informers.append(
            Informer(
                self.gateway,
                Pod,
                on_add=self._pod_added,
                on_update=self._pod_updated,
                on_delete=self._pod_deleted,
            )
        )
        self.informers = informers
        await super().start(sync_timeout)

    def _queue(self, kind: str, key: str) -> None:
        if self.working:
            self.queue.add(f"{kind}|{key}")

    def _queue_all(self, kind: str) -> None:
        for key in self.world.objects(kind):
            self._queue(kind, key)

    def _object_changed(self, obj: KubeObject) -> None:
        item = f"{obj.KIND}|{key_of(obj)}"
        written = self._written.get(item)
        if written is not None and written[0] == obj.metadata.resource_version:
            del self._written[item]  # the informer caught up with our write
        rule = self.rules.get(obj.KIND)
        if rule is None:
            return
        if rule.couples_objects:
            self._queue_all(obj.KIND)
        else:
            self._queue(obj.KIND, key_of(obj))

    def _node_changed(self, _: Node) -> None:
        for kind, rule in self.rules.items():
            if rule.watches_nodes:
                self._queue_all(kind)

    def _concerned(self, pod: Pod) -> None:
        for kind, rule in self.rules.items():
            for key in rule.affected(pod, self.world.objects(kind)):
                self._queue(kind, key)

    def _pod_added(self, pod: Pod) -> None:
        self.world.put(pod)
        self._concerned(pod)

    def _pod_updated(self, old: Pod, new: Pod) -> None:
        self.world.put(new)
        self._concerned(old)
        self._concerned(new)

    def _pod_deleted(self, pod: Pod) -> None:
        self.world.drop(pod)
        self._concerned(pod)

    # --- the runtime's hooks -------------------------------------------------------------------

    def keys(self) -> Iterable[str]:
        return [f"{kind}|{key}" for kind in self.rules for key in self.world.objects(kind)]

    @property
    def handler(self) -> Handler:
        return self.reconcile

    def synced_message(self) -> str:
        counts = ", ".join(f"{len(self.world.objects(k))} {k}s" for k in self.rules)
        pods = sum(len(p) for p in self.world.pods.values())
        return f"caches synced: {counts or 'no kinds served'}, {pods} pods"

    async def reconcile(self, item: str) -> float | None:
        kind, key = item.split("|", 1)
        rule = self.rules.get(kind)
        informer = self.world.kinds.get(kind)
        obj = informer.get(key) if informer is not None else None
        if rule is None or obj is None:
            self._written.pop(item, None)
            self._noticed.pop(item, None)
            return None  # gone: nothing to keep
        written = self._written.get(item)
        if written is not None:
            obj = type(obj).model_validate({**obj.to_wire(), "status": written[1]})
        now: datetime = self.wall()
        outcome = rule.compute(obj, self.world, now)
        if outcome.status is not None:
            current = without_nulls(obj.to_wire().get("status") or {})
            wanted = without_nulls(dict(outcome.status))
            if wanted != current and self.may_write():
                patch = merge_patch_between(current, wanted)
                try:
                    name, namespace = obj.metadata.name or "", obj.metadata.namespace
                    saved = await self.writer.patch_status(
                        type(obj), name, {"status": patch}, namespace
                    )
                except NotFoundError:
                    return None  # deleted meanwhile
                self.writes += 1
                status = without_nulls(saved.to_wire().get("status") or {})
                self._written[item] = (saved.metadata.resource_version, status)
                for event in outcome.events:
                    self._record(obj, event)
        self._notify(item, obj, outcome)
        if outcome.requeue_at is None:
            return None
        return max(0.0, (outcome.requeue_at - now).total_seconds())

    def _notify(self, item: str, obj: KubeObject, outcome: StatusOutcome) -> None:
        """Emit the outcome's notices not emitted yet for this object (module docstring)."""
        if not outcome.notices:
            return
        emitted = self._noticed.setdefault(item, set())
        for notice in outcome.notices:
            seen = (obj.metadata.uid or "", notice.reason)
            if seen in emitted or not self.may_write():
                continue
            emitted.add(seen)
            self._record(obj, notice, name=notice_name(obj, notice.reason))

    def _record(self, obj: KubeObject, event: StatusEvent, name: str | None = None) -> None:
        kind = cast(EventType, event.type)
        self.recorder.record(obj, None, kind, event.reason, "StatusUpdate", event.message, name)
