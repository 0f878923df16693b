"""The pod scheduler's gateway: the runtime's `Gateway` plus what the scheduler writes with a uid
precondition, cheap reads of the pods its two watches share, and the lease fence on its writes.

Writes are fenced as the hub's are (`controllers.runtime.echoes`): `PodGateway.fenced(gateway,
fence)` is the same connection with every request but a GET passed through `echoes.fenced`, so
once the replica's lease deadline has passed (the `LeaderElector` is the fence) a write is
refused before it is sent and one in flight is cancelled, both raising `NotLeaderError`. The
scheduler's bindings, victim deletions, status patches and events, and the status
controller's status patches and events, go through such a copy; reads, watches and the
elector's own Lease requests use the unfenced gateway (a standby must be able to take the
Lease).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from json.encoder import encode_basestring_ascii as _quoted
from typing import Any, TypeVar, cast

import aiohttp
from pydantic_core import from_json

from apis.core import Pod
from apis.meta import KubeObject
from controllers.addons.pod_docs import PodVersions
from controllers.kube.gateway import Gateway, WatchEvent, collection_path, object_path
from controllers.runtime import echoes
from controllers.runtime.echoes import WriteFence

__all__ = ["PodGateway", "binding_body"]

ObjT = TypeVar("ObjT", bound=KubeObject)

# A watch line's head as API servers write it (Go: no spaces; ours: json.dumps's).
_EVENT_HEAD = re.compile(rb'\{\s*"type"\s*:\s*"(ADDED|MODIFIED|DELETED)"\s*,\s*"object"\s*:\s*')


def binding_body(namespace: str, name: str, uid: str, node: str) -> bytes:
    """The Binding `bind_pod` sends, as the bytes json.dumps writes for it (`{"apiVersion":
    "v1", "kind": "Binding", "metadata": {name, namespace, uid when known}, "target": the
    Node}`), each string escaped as json.dumps escapes it: one per pod scheduled."""
    meta = f'{_quoted(name)}, "namespace": {_quoted(namespace)}'
    if uid:
        meta += f', "uid": {_quoted(uid)}'
    return (
        f'{{"apiVersion": "v1", "kind": "Binding", "metadata": {{"name": {meta}}}, '
        f'"target": {{"apiVersion": "v1", "kind": "Node", "name": {_quoted(node)}}}}}'
    ).encode()


class PodGateway(Gateway):
    """The gateway plus the two pod writes the scheduler needs with a uid precondition, which
    `Gateway.bind` and `Gateway.delete` do not send. Bodies may be given as JSON bytes.

    Pods read from lists and watches are parsed once per resourceVersion: a binding shows up on
    both pod watches (DELETED from the pending pods' selector, ADDED to the assigned pods'),
    and the second is the model parsed for the first when it carries the same object
    (`pods_reused`). kube-apiserver's DELETED carries the pod as it was before the binding, at
    the binding's resourceVersion: a DELETED is never kept by resourceVersion. A pod's
    next version that differs only in what a binding or a status write changes is derived from
    the model of the one before (`pods_derived`), and the quantities of the pods and nodes it
    reads are parsed once per value (`controllers.addons.pod_docs`)."""

    POD_CACHE = 4096
    """Pod models kept by (uid, resourceVersion): the two watches never drift further apart."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pods: OrderedDict[tuple[str, str], Pod] = OrderedDict()
        self._lines: dict[bytes, Pod] = {}  # a watch line's object part -> its model
        self._versions = PodVersions(self.POD_CACHE)
        self.pods_parsed = 0
        self.pods_reused = 0
        self.fence: WriteFence | None = None

    @classmethod
    def fenced(cls, gateway: Gateway, fence: WriteFence | None) -> PodGateway:
        """`gateway`'s connection (any `Gateway`: one pool, the same request metrics) as a
        PodGateway whose writes pass `fence` (module docstring); without a fence, writes are
        never refused."""
        copy = cls.__new__(cls)
        vars(copy).update(vars(gateway))
        if not isinstance(gateway, PodGateway):
            copy._pods, copy.pods_parsed, copy.pods_reused = OrderedDict(), 0, 0
            copy._lines, copy._versions = {}, PodVersions(cls.POD_CACHE)
        copy.fence = fence
        return copy

    async def _open(self, method: str, path: str, **kwargs: Any) -> aiohttp.ClientResponse:
        """Every request goes through here: a write (any method but GET) passes the fence."""
        if self.fence is None or method == "GET":
            return await super()._open(method, path, **kwargs)
        return await echoes.fenced(self.fence, super()._open(method, path, **kwargs))

    @property
    def pods_derived(self) -> int:
        """Watched pods derived from their previous version instead of parsed (class docs)."""
        return self._versions.derived

    async def bind_pod(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST `pods/binding` with the pod's uid in the Binding's metadata."""
        path = object_path(Pod, name, namespace, "binding")
        await self._send("POST", path, binding_body(namespace, name, uid, node))

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
        they go to the informers' stores, which nobody changes. The second watch's line
        differs from the first's only in its type, so the object's bytes find the model
        without decoding the JSON again."""
        if cls is not Pod:
            return super()._event(cls, line)
        head = _EVENT_HEAD.match(line)
        body = line[head.end() :].rstrip() if head is not None else b""
        if head is not None:
            seen = self._lines.get(body)
            if seen is not None:
                self.pods_reused += 1
                kind_seen: Any = head.group(1).decode()
                version_seen = seen.metadata.resource_version or ""
                if kind_seen != "DELETED" and seen.metadata.uid:
                    self._pods[(seen.metadata.uid, version_seen)] = seen
                return WatchEvent(kind_seen, cast(ObjT, seen), version_seen)
        try:
            # pydantic's JSON parser: the same values as json.loads in half its time; what it
            # refuses (a lone surrogate escape, a byte-order mark) goes the gateway's way.
            raw = from_json(line)
        except ValueError:
            return super()._event(cls, line)  # its error, or json.loads's reading
        kind, doc = raw.get("type"), raw.get("object")
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        uid = meta.get("uid") if isinstance(meta, dict) else None
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if kind not in ("ADDED", "MODIFIED", "DELETED") or not uid or not version:
            return super()._event(cls, line)
        pod: Any = self._pods.get((uid, version))
        # A DELETED line may carry the pod as it was before the change at its resourceVersion
        # (kube-apiserver's watch cache sends that when a change moves the pod out of the
        # watch's selector, as a binding does for the pending pods): it is never kept by
        # (uid, resourceVersion), where the ADDED of the pod as it now is would find it.
        deleted = kind == "DELETED"
        if pod is None:
            if isinstance(uid, str) and isinstance(version, str):
                pod = self._versions.derive(uid, version, doc)
            if pod is None:
                pod = self._typed(Pod, doc)
                self.pods_parsed += 1
            if isinstance(uid, str):
                self._versions.remember(uid, doc, pod)  # by content: a DELETED's is as good
            if not deleted:
                self._pods[(uid, version)] = pod
                if len(self._pods) > self.POD_CACHE:
                    self._pods.popitem(last=False)
        else:
            self.pods_reused += 1
        if head is not None and pod.metadata.resource_version == str(version):
            self._lines[body] = pod
            if len(self._lines) > self.POD_CACHE:
                del self._lines[next(iter(self._lines))]
        return WatchEvent(kind, cast(ObjT, pod), str(version))
