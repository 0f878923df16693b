"""The one I/O seam to Kubernetes (docs/architecture.md): async, over kubernetes-asyncio's
`ApiClient` (without its generated models: `controllers.kube.client_import`), typed with our
`apis` models in and out.

The verbs live here: which URL path, query and body each one sends, which of them are reads
(retried) and which are writes (never retried), and how the answers become models (`ListResult`,
`WatchEvent`, the kind asked for). How a request travels and fails is `controllers.kube.transport`.
`observe_requests`, when set, hears the method and status code of every request (the runtime
counts them as `rest_client_requests_total`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit

import aiohttp

from apis.core import Binding, Eviction, ObjectReference, Pod
from apis.errors import ObjectValidationError
from apis.meta import KubeObject, ObjectMeta
from apis.registry import parse_as
from controllers.kube.answers import Answers, Rows
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.kube.errors import TransportError, error_from_status
from controllers.kube.paths import collection_path, object_path
from controllers.kube.transport import (
    InvalidResponseError,
    RequestObserver,
    open_response,
    read_env_once,
    read_json,
    retry_read,
)
from controllers.kube.unreadable import Unreadable, read_event, read_items

if TYPE_CHECKING:
    from kubernetes_asyncio import client

__all__ = [
    "EventType",
    "Gateway",
    "InvalidResponseError",
    "ListResult",
    "WatchEvent",
    "collection_path",
    "object_path",
]

ObjT = TypeVar("ObjT", bound=KubeObject)
R = TypeVar("R")
EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@dataclass(frozen=True)
class ListResult(Generic[ObjT]):
    """The items of a list and the resourceVersion to start watching from."""

    items: list[ObjT]
    resource_version: str


@dataclass(frozen=True)
class WatchEvent(Generic[ObjT]):
    """One watch event. A BOOKMARK carries no object, only the resourceVersion reached."""

    type: EventType
    object: ObjT | None
    resource_version: str
    key: str | None = None  # the object the models refused (`unreadable`), with object None


class Gateway:
    """Typed list, watch, get, create, replace, patch, delete, binding, eviction and events."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        read_attempts: int = 4,
        backoff: float = 0.05,
        max_backoff: float = 2.0,
        request_timeout: float = 30.0,
    ) -> None:
        self._client = api_client
        read_env_once(api_client)
        self.read_attempts = read_attempts
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.request_timeout = request_timeout
        self.observe_requests: RequestObserver | None = None
        self.answers: Answers | None = None  # shared by writes and their echoes: `Answers`

    @property
    def host(self) -> str:
        """`host:port` of the API server (the `host` label of client-go's request metrics)."""
        url = getattr(self._client.configuration, "host", "") or ""
        return urlsplit(url).netloc or url

    @classmethod
    async def connect(cls, access: ClusterAccess, **options: Any) -> Gateway:
        """A gateway for `access` (kubeconfig and context, in-cluster, or a URL)."""
        return cls(await new_api_client(access), **options)

    async def close(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> Gateway:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- raw requests (subclasses in tests wrap `_open`: every request goes through it) -------

    async def _open(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: aiohttp.ClientTimeout | float | None = None,
    ) -> aiohttp.ClientResponse:
        return await open_response(
            self._client,
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            timeout=timeout if timeout is not None else self.request_timeout,
            observe=self.observe_requests,
        )

    async def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        return await read_json(await self._open(method, path, **kwargs), method, path)

    async def _retrying(self, read: Callable[[], Awaitable[R]]) -> R:
        return await retry_read(
            read, attempts=self.read_attempts, backoff=self.backoff, max_backoff=self.max_backoff
        )

    @staticmethod
    def _typed(cls: type[ObjT], doc: Any) -> ObjT:
        if isinstance(doc, dict):
            # List items of core kinds come without their type meta.
            doc.setdefault("apiVersion", cls.api_version_string())
            doc.setdefault("kind", cls.KIND)
        try:
            return parse_as(cls, doc)
        except ObjectValidationError as exc:
            raise InvalidResponseError(f"server sent an invalid object: {exc}") from exc

    # --- reads -----------------------------------------------------------------------------

    async def get(self, cls: type[ObjT], name: str, namespace: str | None = None) -> ObjT:
        path = object_path(cls, name, namespace)
        return self._typed(cls, await self._retrying(lambda: self._request("GET", path)))

    async def list(
        self,
        cls: type[ObjT],
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ListResult[ObjT]:
        """Every matching object (all namespaces when `namespace` is None) and the list RV."""
        query = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        path = collection_path(cls, namespace)
        doc = await self._retrying(lambda: self._request("GET", path, query=query))
        items = [self._typed(cls, item) for item in doc.get("items") or []]
        return ListResult(items, str((doc.get("metadata") or {}).get("resourceVersion", "")))

    async def list_pages(
        self,
        cls: type[ObjT],
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 500,
        unreadable: Unreadable | None = None,
    ) -> AsyncIterator[ListResult[ObjT]]:
        """`list` in pages of at most `limit` objects (the server's continue tokens, as
        client-go's reflector lists), so that a big collection is never in memory at once, as
        JSON or as models. Every page carries the list's resourceVersion; an expired continue
        token raises GoneError (list again). `unreadable`: `controllers.kube.unreadable`."""
        query = {"limit": str(limit)}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        path = collection_path(cls, namespace)
        while True:
            doc = await self._retrying(partial(self._request, "GET", path, query=query))
            meta = doc.get("metadata") or {}
            items = read_items(cls, doc.get("items") or [], self._typed, unreadable)
            del doc  # the page's JSON, while the caller works on its models
            yield ListResult(items, str(meta.get("resourceVersion", "")))
            del items
            token = meta.get("continue")
            if not token:
                return
            query = {**query, "continue": token}

    async def watch(
        self,
        cls: type[ObjT],
        resource_version: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        bookmarks: bool = True,
        rows: Rows | None = None,
        unreadable: Unreadable | None = None,
    ) -> AsyncIterator[WatchEvent[ObjT]]:
        """Events after `resource_version` until the server ends the stream. With `rows`,
        an event echoing a write of ours in flight or answered (`answers`) may carry a row
        instead of a model (`Rows`). `unreadable`: `controllers.kube.unreadable.read_event`.

        Raises GoneError when that resourceVersion is compacted (relist, then watch again), and
        TransportError when the connection breaks (resume from the last RV seen).
        """
        query = {"watch": "true", "resourceVersion": resource_version}
        if bookmarks:
            query["allowWatchBookmarks"] = "true"
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        if timeout_seconds is not None:
            query["timeoutSeconds"] = str(timeout_seconds)
        path = collection_path(cls, namespace)
        # No read timeout: a quiet watch is healthy; the server ends it on timeoutSeconds.
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout)
        response = await self._open("GET", path, query=query, timeout=timeout)
        try:
            while True:
                try:
                    line = await response.content.readline()
                except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                    raise TransportError(f"watch {path}: {exc or type(exc).__name__}") from exc
                if not line:
                    return
                if line.strip():
                    read = (
                        partial(self._event, cls, line)
                        if rows is None
                        else partial(self._read_event, cls, line, rows)
                    )
                    yield read_event(cls, line, read, unreadable, WatchEvent)
        finally:
            response.release()

    def _event(self, cls: type[ObjT], line: bytes) -> WatchEvent[ObjT]:
        return self._read_event(cls, line, None)

    def _read_event(self, cls: type[ObjT], line: bytes, rows: Rows | None) -> WatchEvent[ObjT]:
        try:
            raw = json.loads(line)
        except ValueError as exc:
            raise InvalidResponseError(f"watch event is not JSON: {line[:200]!r}") from exc
        kind, doc = raw.get("type"), raw.get("object") or {}
        if kind == "ERROR":
            raise error_from_status(int(doc.get("code") or 500), doc)
        rv = str((doc.get("metadata") or {}).get("resourceVersion", ""))
        if kind == "BOOKMARK":
            return WatchEvent("BOOKMARK", None, rv)
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            raise InvalidResponseError(f"unknown watch event type {kind!r}")
        if self.answers is None or kind == "DELETED":
            return WatchEvent(kind, self._typed(cls, doc), rv)
        obj = self.answers.shared(cls, doc, rv, self._typed, rows=rows)
        return WatchEvent(kind, obj, rv)

    def _answer(self, cls: type[ObjT], doc: Any) -> ObjT:
        answer: ObjT = self._answer_as(cls, doc, None)
        return answer

    def _answer_as(self, cls: type[KubeObject], doc: Any, rows: Rows | None) -> Any:
        """A write's answer as a model (as a row with `rows`), shared with its watch echo
        when the gateway keeps `answers`."""
        if self.answers is None or not isinstance(doc, dict):
            return (rows(doc) if rows is not None else None) or self._typed(cls, doc)
        rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
        return self.answers.shared(cls, doc, rv, self._typed, rows=rows)

    # --- writes (never retried) --------------------------------------------------------------

    async def create(self, obj: ObjT) -> ObjT:
        return self._answer(type(obj), await self._post(obj))

    async def create_kept(self, obj: KubeObject, rows: Rows | None) -> Any:
        """`create`, answering with what `rows` makes of the object (else the model)."""
        return self._answer_as(type(obj), await self._post(obj), rows)

    async def _post(self, obj: KubeObject) -> Any:
        path = collection_path(type(obj), obj.namespace or None)
        return await self._request("POST", path, body=obj.to_wire())

    async def replace(self, obj: ObjT) -> ObjT:
        """PUT the whole object; 409 Conflict if its resourceVersion is stale."""
        cls = type(obj)
        path = object_path(cls, obj.name, obj.namespace or None)
        return self._answer(cls, await self._request("PUT", path, body=obj.to_wire()))

    async def replace_status(self, obj: ObjT) -> ObjT:
        """PUT the object's status subresource (the server ignores everything but status)."""
        cls = type(obj)
        path = object_path(cls, obj.name, obj.namespace or None, "status")
        return self._answer(cls, await self._request("PUT", path, body=obj.to_wire()))

    async def merge_patch(
        self,
        cls: type[ObjT],
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        status: bool = False,
    ) -> ObjT:
        """RFC 7386 merge patch of the object (or of its `/status` with `status=True`)."""
        return self._answer(cls, await self._merge(cls, name, patch, namespace, status))

    async def merge_patch_kept(
        self,
        cls: type[KubeObject],
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        status: bool = False,
        rows: Rows | None,
    ) -> Any:
        """`merge_patch`, answering with what `rows` makes of the object (`create_kept`)."""
        return self._answer_as(cls, await self._merge(cls, name, patch, namespace, status), rows)

    async def _merge(self, cls: type[KubeObject], name: str, patch: Any, ns: Any, sub: bool) -> Any:
        path = object_path(cls, name, ns, "status" if sub else "")
        return await self._request("PATCH", path, body=dict(patch), content_type=MERGE_PATCH)

    async def json_patch(
        self,
        cls: type[ObjT],
        name: str,
        operations: Sequence[Mapping[str, Any]],
        namespace: str | None = None,
        *,
        status: bool = False,
    ) -> ObjT:
        """RFC 6902 JSON patch; a `test` operation makes it a compare-and-swap."""
        path = object_path(cls, name, namespace, "status" if status else "")
        doc = await self._request(
            "PATCH", path, body=[dict(op) for op in operations], content_type=JSON_PATCH
        )
        return self._answer(cls, doc)

    async def patch_status(
        self, cls: type[ObjT], name: str, patch: Mapping[str, Any], namespace: str | None = None
    ) -> ObjT:
        """Merge patch of the `/status` subresource."""
        return await self.merge_patch(cls, name, patch, namespace, status=True)

    async def delete(
        self,
        cls: type[ObjT],
        name: str,
        namespace: str | None = None,
        *,
        propagation: Literal["Background", "Foreground", "Orphan"] | None = None,
        resource_version: str | None = None,
    ) -> ObjT | None:
        """Delete; returns the object while finalizers hold it, None once it is gone."""
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation:
            options["propagationPolicy"] = propagation
        if resource_version:
            options["preconditions"] = {"resourceVersion": resource_version}
        doc = await self._request("DELETE", object_path(cls, name, namespace), body=options)
        if isinstance(doc, dict) and doc.get("kind") != "Status":
            held = (doc.get("metadata") or {}).get("finalizers")
            return self._typed(cls, doc) if held else None
        return None

    async def bind(self, namespace: str, pod: str, node: str) -> None:
        """Assign a pod to a node (`pods/binding`); ConflictError if it is already bound."""
        binding = Binding(
            metadata=ObjectMeta(name=pod, namespace=namespace),
            target=ObjectReference(api_version="v1", kind="Node", name=node),
        )
        path = object_path(Pod, pod, namespace, "binding")
        await self._request("POST", path, body=binding.to_wire())

    async def evict(self, namespace: str, pod: str) -> None:
        """Evict a pod (`pods/eviction`); TooManyRequestsError if a disruption budget refuses."""
        eviction = Eviction(metadata=ObjectMeta(name=pod, namespace=namespace))
        path = object_path(Pod, pod, namespace, "eviction")
        await self._request("POST", path, body=eviction.to_wire())

    async def create_event(self, event: ObjT) -> ObjT:
        """Record an Event (core/v1 or events.k8s.io/v1)."""
        return await self.create(event)

    async def post_event(self, event: KubeObject) -> None:
        """Record an Event without reading the answer into a model (an event recorder sends
        tens of thousands at a cold start and never looks at what the server stored)."""
        await self.post_wire(type(event), event.namespace or None, event.to_wire())

    async def post_wire(
        self, cls: type[KubeObject], namespace: str | None, body: Mapping[str, Any]
    ) -> None:
        """POST `body` (an object of `cls` as on the wire) to its collection; the answer is
        not read into a model (`post_event` for a body built without one)."""
        await self._send("POST", collection_path(cls, namespace), body)

    async def patch_event(
        self, cls: type[KubeObject], name: str, namespace: str, patch: Mapping[str, Any]
    ) -> None:
        """Strategic merge patch of an Event, as client-go's broadcaster sends a series update;
        the answer is not read into a model."""
        path = object_path(cls, name, namespace)
        await self._send("PATCH", path, dict(patch), content_type=STRATEGIC_PATCH)

    async def _send(
        self, method: str, path: str, body: Any, content_type: str = "application/json"
    ) -> None:
        """A write whose answer is read off the connection but not into a model."""
        response = await self._open(method, path, body=body, content_type=content_type)
        try:
            await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(f"{method} {path}: {exc}") from exc
        finally:
            response.release()
