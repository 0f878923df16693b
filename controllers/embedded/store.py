"""The state of the embedded API server: objects by resource, a global resourceVersion, the
event history that watches replay, and the writes' rules (admission, optimistic concurrency,
status isolation, finalizers, garbage collection of dependents and of namespaces' contents).

Stored objects are never mutated: every write stores a new dict, so events and list results can
share them safely. The events themselves and the open watches they are offered to are in
`history`. Everything runs on the event loop's thread, so no locks are needed.
"""

from __future__ import annotations

import builtins
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from apis.kubevalidation import MAX_OBJECT_BYTES
from apis.meta import format_time
from controllers.embedded.admission import (
    admit,
    check_size,
    encode_within,
    invalid_name,
    valid_name,
    validate,
)
from controllers.embedded.eventviews import to_core, to_events
from controllers.embedded.history import StoredEvent, Watcher
from controllers.embedded.patch import copy_json
from controllers.embedded.resources import Resource
from controllers.embedded.selectors import Predicate
from controllers.embedded.status import StatusError

__all__ = ["Propagation", "Store"]

Propagation = Literal["Background", "Foreground", "Orphan"]
ObjKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
JsonObj = dict[str, Any]
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what Kubernetes uses for generateName suffixes
_GENERATE_ATTEMPTS = 8  # names tried for one generateName create, as kube-apiserver


def _now() -> str:
    return format_time(datetime.now(UTC))


class Store:
    """Objects, resourceVersions, history and watchers of every served resource."""

    def __init__(self, resources: list[Resource], history: int = 200_000) -> None:
        self.resources = resources
        self.rv = 0
        self.objects: dict[tuple[str, str], dict[ObjKey, dict[str, Any]]] = {
            res.key: {} for res in resources
        }
        self.history: deque[StoredEvent] = deque(maxlen=history)
        # etcd's `--max-request-bytes`: a larger object is refused as etcd refuses it.
        self.max_object_bytes = MAX_OBJECT_BYTES
        self.compacted = 0  # events at or below this RV are gone from history
        self.watchers: set[Watcher] = set()
        self.last: StoredEvent | None = None  # the latest change (a twin's aside)
        # Called with every change after it is stored (the kubelet simulation listens); a
        # listener must not write to the store from the call, only schedule work.
        self.listeners: builtins.list[Callable[[StoredEvent], None]] = []
        self._by_uid: dict[str, tuple[Resource, ObjKey]] = {}
        self._dependents: dict[str, set[tuple[Resource, ObjKey]]] = {}
        # Each resource's keys in list order, kept until one is added or removed (a list of
        # thousands of pods polled several times a second sorted them every time).
        self._sorted: dict[tuple[str, str], builtins.list[ObjKey]] = {}
        self.namespaces = next(
            (res for res in resources if res.kind == "Namespace" and not res.group), None
        )
        # Resources that are two views of one store: a write to one is mirrored in the other.
        self._twins: dict[Resource, tuple[Resource, Callable[[JsonObj], JsonObj]]] = {}
        by_key = {res.key: res for res in resources}
        core, events = by_key.get(("", "events")), by_key.get(("events.k8s.io", "events"))
        if core is not None and events is not None:
            self._twins = {core: (events, to_events), events: (core, to_core)}

    # --- reads -------------------------------------------------------------------------------

    def _key(self, res: Resource, namespace: str, name: str) -> ObjKey:
        return (namespace if res.namespaced else "", name)

    def get(self, res: Resource, namespace: str, name: str) -> dict[str, Any]:
        obj = self.objects[res.key].get(self._key(res, namespace, name))
        if obj is None:
            raise StatusError.not_found(res.group, res.plural, name)
        return obj

    def list(
        self, res: Resource, namespace: str, predicate: Predicate | None
    ) -> Iterator[dict[str, Any]]:
        """Matching objects sorted by namespace and name."""
        objects = self.objects[res.key]
        keys = self._sorted.get(res.key)
        if keys is None or len(keys) != len(objects):
            keys = self._sorted[res.key] = sorted(objects)
        for key in keys:
            if namespace and key[0] != namespace:
                continue
            obj = objects.get(key)
            if obj is not None and (predicate is None or predicate(obj)):
                yield obj

    def has_namespace(self, name: str) -> bool:
        """Whether the Namespace exists (always true when Namespaces are not served)."""
        return self.namespaces is None or ("", name) in self.objects[self.namespaces.key]

    def watch(self, res: Resource, namespace: str, predicate: Predicate | None) -> Watcher:
        watcher = Watcher(res, namespace, predicate)
        self.watchers.add(watcher)
        return watcher

    def history_since(self, rv: int) -> builtins.list[StoredEvent]:
        """Events after `rv`; raises 410 Gone if some of them were compacted away."""
        if rv < self.compacted:
            raise StatusError(410, f"too old resource version: {rv} ({self.compacted + 1})")
        return [event for event in self.history if event.rv > rv]

    def compact(self) -> None:
        """Forget the history, as etcd compaction does: older watches get 410 Gone."""
        self.history.clear()
        self.compacted = self.rv

    # --- the write path ------------------------------------------------------------------------

    def _commit(
        self,
        res: Resource,
        kind: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        encoded: bytes | None = None,
    ) -> dict[str, Any]:
        self.rv += 1
        meta = obj["metadata"]
        if meta.get("resourceVersion") != str(self.rv):
            encoded = None  # `obj` encoded (by the size check) with another resourceVersion
        meta["resourceVersion"] = str(self.rv)
        key = self._key(res, meta.get("namespace", ""), meta["name"])
        if old is not None:
            self._unindex(res, key, old)
        objects = self.objects[res.key]
        if kind == "DELETED":
            del objects[key]
            self._sorted.pop(res.key, None)
        else:
            if key not in objects:
                self._sorted.pop(res.key, None)
            objects[key] = obj
            self._index(res, key, obj)
        event = self.last = StoredEvent(self.rv, res, kind, obj, old, _object=encoded)
        self._record(event)
        twin = self._twins.get(res)
        if twin is not None:
            twin_res, view = twin
            twin_obj, twin_objects = view(obj), self.objects[twin_res.key]
            twin_old = twin_objects.get(key)
            if kind == "DELETED" or key not in twin_objects:
                self._sorted.pop(twin_res.key, None)
            if kind == "DELETED":
                twin_objects.pop(key, None)
            else:
                twin_objects[key] = twin_obj
            self._record(StoredEvent(self.rv, twin_res, kind, twin_obj, twin_old))
        return obj

    def _record(self, event: StoredEvent) -> None:
        if len(self.history) == self.history.maxlen:
            self.compacted = self.history[0].rv
        self.history.append(event)
        resource = event.resource
        for watcher in self.watchers:
            if watcher.resource is resource:  # most watches are of another resource
                watcher.offer(event)
        for listener in self.listeners:
            listener(event)

    def _index(self, res: Resource, key: ObjKey, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self._by_uid[meta["uid"]] = (res, key)
        for ref in meta.get("ownerReferences") or ():
            self._dependents.setdefault(ref.get("uid", ""), set()).add((res, key))

    def _unindex(self, res: Resource, key: ObjKey, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self._by_uid.pop(meta["uid"], None)
        for ref in meta.get("ownerReferences") or ():
            self._dependents.get(ref.get("uid", ""), set()).discard((res, key))

    def create(
        self,
        res: Resource,
        obj: dict[str, Any],
        namespace: str = "",
        *,
        keep_status: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Store a new object: name, uid, timestamps, admission; 409 if the name is taken, 404
        if its namespace does not exist. A `dry_run` does all that and stores nothing."""
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise StatusError(400, "metadata must be an object")
        if res.namespaced:
            body_ns = meta.get("namespace") or namespace
            if namespace and body_ns != namespace:
                raise StatusError(
                    400,
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request",
                )
            if not body_ns:
                raise StatusError(400, "a namespace is required for a namespaced resource")
            if not self.has_namespace(body_ns):
                raise StatusError.not_found("", "namespaces", body_ns)
            meta["namespace"] = body_ns
        else:
            meta.pop("namespace", None)
        for key in ("name", "generateName", "namespace"):
            if not isinstance(meta.get(key) or "", str):
                # What Go's decoder says of a number where ObjectMeta has a string.
                raise StatusError(
                    400,
                    f"json: cannot unmarshal {type(meta[key]).__name__} into Go struct field "
                    f"ObjectMeta.metadata.{key} of type string",
                )
        generated = not meta.get("name") and bool(meta.get("generateName"))
        if generated:
            meta["name"] = meta["generateName"] + self._suffix()
        name = meta.get("name")
        if not valid_name(name):
            raise invalid_name(res, name, str(meta["generateName"]) if generated else "")
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        taken = self.objects[res.key]
        for _ in range(_GENERATE_ATTEMPTS - 1):
            # As kube-apiserver (RetryGenerateName, GA in 1.32): a generated name that is taken
            # is generated again, so that only the eighth collision in a row fails the create.
            if not generated or self._key(res, meta.get("namespace", ""), name) not in taken:
                break
            name = meta["name"] = meta["generateName"] + self._suffix()
        if self._key(res, meta.get("namespace", ""), name) in taken:
            qualified = f"{res.plural}.{res.group}" if res.group else res.plural
            details = {"name": name, "group": res.group, "kind": res.plural}
            raise StatusError(409, f'{qualified} "{name}" already exists', "AlreadyExists", details)
        for stale in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(stale, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = _now()
        if res.generation:
            meta["generation"] = 1
        if res.has_status and not keep_status and res.kind != "Node":
            # Create cannot set status on a status subresource (Nodes are the exception).
            obj.pop("status", None)
        if res.kind == "Namespace":
            obj["status"] = {"phase": "Active"}
        if res.kind == "VolumeAttachment":
            obj["status"] = {"attached": False}  # kube resets it: the attacher reports it
        if dry_run:
            return admit(res, obj, self.max_object_bytes)
        validate(res, obj)
        # The resourceVersion the commit gives it, set before the size check: the encoding
        # checked is the one stored, shared by the watch lines and the answer.
        meta["resourceVersion"] = str(self.rv + 1)
        return self._commit(res, "ADDED", obj, None, encode_within(obj, self.max_object_bytes))

    @staticmethod
    def _suffix() -> str:
        """Five characters of Kubernetes' generateName alphabet."""
        return "".join(_ALPHABET[b % len(_ALPHABET)] for b in uuid.uuid4().bytes[:5])

    def update(
        self,
        res: Resource,
        namespace: str,
        name: str,
        new: dict[str, Any],
        *,
        status: bool = False,
        internal: bool = False,
        dry_run: bool = False,
        revalidate: bool = True,
    ) -> dict[str, Any]:
        """Replace an object (or only its status); 409 if `new` carries a stale RV.

        `internal` writes are the server's own (binding a pod): spec and status together; one
        that only sets fields the server itself fills (a binding's node and condition) may skip
        the kind's validation (`revalidate=False`, as kube's binding stores the pod without
        validating it again), never the size limit. A `dry_run` answers the object as it would
        be stored, and stores nothing.
        """
        old = self.get(res, namespace, name)
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            raise StatusError(400, "metadata must be an object")
        if (sent := meta.get("name", name)) != name:
            why = f"the name of the object ({sent}) does not match the name on the URL ({name})"
            raise StatusError(400, why)
        expected = meta.get("resourceVersion")
        if expected and expected != old["metadata"]["resourceVersion"]:
            raise StatusError.conflict(
                res.group,
                res.plural,
                name,
                "the object has been modified; please apply your changes to the latest version "
                "and try again",
            )
        if status:
            obj = copy_json(old)
            obj.pop("status", None)
            if "status" in new:
                obj["status"] = new["status"]
        elif internal:
            obj = new
        else:
            obj = new
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
            kept = {k: v for k, v in old["metadata"].items() if k in _SERVER_OWNED}
            meta.update(kept)
            if res.has_status:
                obj.pop("status", None)
                if "status" in old:
                    obj["status"] = copy_json(old["status"])
            if res.generation and _spec_of(obj) != _spec_of(old):
                meta["generation"] = old["metadata"].get("generation", 1) + 1
        obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if not internal or revalidate:
            validate(res, obj, status=status)
        if obj == old:
            return old  # a no-op write changes nothing, not even the resourceVersion (nor size)
        if dry_run or (_finally_deleted(old) and not obj["metadata"].get("finalizers")):
            obj = check_size(obj, self.max_object_bytes)
            return obj if dry_run else self._remove(res, obj, old, "Background")
        obj["metadata"]["resourceVersion"] = str(self.rv + 1)  # the commit's, as on create
        return self._commit(res, "MODIFIED", obj, old, encode_within(obj, self.max_object_bytes))

    # --- deletion ------------------------------------------------------------------------------

    def delete(
        self,
        res: Resource,
        namespace: str,
        name: str,
        propagation: Propagation = "Background",
        precondition_rv: str | None = None,
        *,
        dry_run: bool = False,
        grace: int = 0,
        precondition_uid: str | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Delete, or mark for deletion while finalizers hold it or a grace period runs (`grace`
        seconds, pods only: the object stays, terminating, until deleted again with a shorter
        one, as the kubelet does when its containers are gone); (object, gone). A second delete
        may shorten a running grace period, never lengthen it. A `dry_run` answers the same
        and changes nothing (no dependent is touched either)."""
        old = self.get(res, namespace, name)
        if precondition_uid and precondition_uid != (uid := old["metadata"]["uid"]):
            args = (res.group, res.kind, res.plural, name, precondition_uid, uid)
            raise StatusError.uid_mismatch(*args)
        if precondition_rv and precondition_rv != old["metadata"]["resourceVersion"]:
            raise StatusError.conflict(res.group, res.plural, name, "precondition failed")
        held = bool(old["metadata"].get("finalizers"))
        running = old["metadata"].get("deletionGracePeriodSeconds")
        current = running if isinstance(running, int) else 0
        if old["metadata"].get("deletionTimestamp") and (held or current > 0):
            if grace >= current:
                return old, False
            if grace > 0 or held:  # a shorter grace period, or finalizers still to run
                obj = copy_json(old)
                obj["metadata"]["deletionTimestamp"] = _after(grace)
                obj["metadata"]["deletionGracePeriodSeconds"] = grace
                if dry_run:
                    return obj, False
                return self._commit(res, "MODIFIED", obj, old), False
        elif grace > 0 or held:
            obj = copy_json(old)
            obj["metadata"]["deletionTimestamp"] = _after(grace)
            obj["metadata"]["deletionGracePeriodSeconds"] = grace
            if dry_run:
                return obj, False
            return self._commit(res, "MODIFIED", obj, old), False
        if dry_run:
            return old, True
        return self._remove(res, copy_json(old), old, propagation), True

    def _remove(
        self, res: Resource, obj: dict[str, Any], old: dict[str, Any], propagation: Propagation
    ) -> dict[str, Any]:
        uid = old["metadata"]["uid"]
        if propagation == "Foreground":
            self._collect(uid, "Background")
        gone = self._commit(res, "DELETED", obj, old)
        # What the garbage collector and the namespace controller do in a real cluster, here
        # synchronously, so that a test sees the cascade as soon as the delete returns.
        self._collect(uid, propagation)
        if res.kind == "Namespace" and not res.group:
            for other in self.resources:
                if other.namespaced:
                    for dep in list(self.list(other, obj["metadata"]["name"], None)):
                        meta = dep["metadata"]
                        self.delete(other, meta["namespace"], meta["name"])
        return gone

    def _collect(self, owner_uid: str, propagation: Propagation) -> None:
        for res, key in sorted(self._dependents.pop(owner_uid, set()), key=_dep_order):
            dep = self.objects[res.key].get(key)
            if dep is None:
                continue
            refs = dep["metadata"].get("ownerReferences") or []
            alive = [r for r in refs if r.get("uid") != owner_uid and r.get("uid") in self._by_uid]
            if propagation == "Orphan" or alive:
                obj = copy_json(dep)
                kept = [r for r in refs if r.get("uid") != owner_uid]
                if kept:
                    obj["metadata"]["ownerReferences"] = kept
                else:
                    obj["metadata"].pop("ownerReferences", None)
                self._commit(res, "MODIFIED", obj, dep)
            else:
                self.delete(res, key[0], key[1], propagation)


_SERVER_OWNED = (
    *("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"),
    *("generation", "namespace"),
)


def _after(seconds: int) -> str:
    return format_time(datetime.now(UTC) + timedelta(seconds=seconds))


def _finally_deleted(old: dict[str, Any]) -> bool:
    """Whether the object waits only for its finalizers: marked for deletion with no grace
    period left (a pod still in its grace period is not removed by an update)."""
    meta = old["metadata"]
    return bool(meta.get("deletionTimestamp")) and not meta.get("deletionGracePeriodSeconds")


def _spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _dep_order(item: tuple[Resource, ObjKey]) -> tuple[str, str, ObjKey]:
    return (item[0].group, item[0].plural, item[1])
