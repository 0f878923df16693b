"""Informer-style caches (docs/architecture.md): for each watched kind, list then watch
through the gateway, keep a typed in-memory store, and tell the controller what changed.

The store keeps the objects themselves or, with a `Keep`, a projection of each (what the
controller reads of it): at 100,000 clusters the models would take most of the controller's
memory. Lists are read in pages, so a big collection is never in memory at once as models.

After a dropped watch the informer resumes from the last resourceVersion it saw (events and
bookmarks both advance it), so no update is lost; after 410 Gone it relists and reconciles,
which is how it learns of deletions that happened while it was disconnected.

Any other exception (a watch event larger than the client's line limit, a bug in a
projection) never ends the informer: it is logged with its traceback and the informer relists
after a backoff; resuming would read the same event again, a list reads the collection whole.
While it backs off from any failure the informer is not `watching`, which the controller's
readiness reports, so a cache that stopped following the server is never silent.

An object the models refuse (a check OCM's admission webhook makes, on a hub where no webhook
runs) is one WARNING line naming it and why, and is left out: a new one is not added, an
update that cannot be read keeps the last version read, a deletion still deletes. One such
object never stops the cache of its kind.

Each failed list or watch is a WARNING line of its own, unless someone listens (`on_retry`, a
controller with several informers): then the informer logs it at DEBUG and tells the listener,
which says it once for all its informers (an unreachable server fails every kind at once).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, overload

from apis.meta import KubeObject
from controllers.kube.answers import Rows
from controllers.kube.errors import ApiError, GoneError
from controllers.kube.gateway import Gateway, WatchEvent

__all__ = ["PAGE_SIZE", "Informer", "Keep"]

log = logging.getLogger(__name__)

ObjT = TypeVar("ObjT", bound=KubeObject)
ItemT = TypeVar("ItemT")

PAGE_SIZE = 5000
"""Objects per list request: one page of cluster models is ~35 MiB (a whole list of 100,000 was
700 MiB). client-go pages by 500; the embedded server sorts the whole collection for every page,
so 100,000 clusters in pages of 1,000 took 8 s more to list than in pages of 5,000."""


@dataclass(frozen=True)
class Keep(Generic[ObjT, ItemT]):
    """What an informer keeps of each object: `project` makes it, `version` reads the object's
    resourceVersion back from it (a relist compares versions to find updates)."""

    project: Callable[[ObjT], ItemT]
    version: Callable[[ItemT], str | None]
    wire: Rows | None = None
    """Makes the item straight from an object's JSON, for the watch events echoing the
    controller's own writes (`Gateway.watch`'s `rows`); `project` must then take an item as
    itself."""


def _model_version(obj: KubeObject) -> str | None:
    return obj.metadata.resource_version


def _whole(obj: Any) -> Any:
    return obj


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + "..." if len(text) > 300 else text


class Informer(Generic[ObjT, ItemT]):
    """A list+watch cache of one kind; callbacks run on the event loop, in event order, and
    receive what the store keeps (`ItemT`: the objects, or their projections)."""

    @overload
    def __init__(
        self: Informer[ObjT, ObjT],
        gateway: Gateway,
        cls: type[ObjT],
        *,
        keep: None = None,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        on_add: Callable[[ObjT], None] | None = None,
        on_update: Callable[[ObjT, ObjT], None] | None = None,
        on_delete: Callable[[ObjT], None] | None = None,
        retry_delay: float = 0.05,
        max_retry_delay: float = 5.0,
        page_size: int = PAGE_SIZE,
    ) -> None: ...

    @overload
    def __init__(
        self,
        gateway: Gateway,
        cls: type[ObjT],
        *,
        keep: Keep[ObjT, ItemT],
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        on_add: Callable[[ItemT], None] | None = None,
        on_update: Callable[[ItemT, ItemT], None] | None = None,
        on_delete: Callable[[ItemT], None] | None = None,
        retry_delay: float = 0.05,
        max_retry_delay: float = 5.0,
        page_size: int = PAGE_SIZE,
    ) -> None: ...

    def __init__(
        self,
        gateway: Gateway,
        cls: type[ObjT],
        *,
        keep: Keep[ObjT, Any] | None = None,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        on_add: Callable[[Any], None] | None = None,
        on_update: Callable[[Any, Any], None] | None = None,
        on_delete: Callable[[Any], None] | None = None,
        retry_delay: float = 0.05,
        max_retry_delay: float = 5.0,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.gateway = gateway
        self.cls = cls
        self.keep: Keep[ObjT, Any] = keep or Keep(_whole, _model_version)
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.page_size = page_size
        self.resource_version = ""
        self.relists = 0  # how many lists it took (1 + one per 410 Gone)
        self.resumes = 0  # how many times a watch was reopened from the last resourceVersion
        self.last_error: Exception | None = None
        """Why the last list or watch failed (None once a list succeeds): what a controller
        whose caches do not sync reports. An `ApiError`, or any unexpected exception."""
        self.failures = 0  # list or watch failures, unexpected ones included
        self.failures_in_a_row = 0
        """Failures since the last list that succeeded or the last event: the retry round."""
        self.failed_verb = "list"  # what failed last: "list" or "watch"
        self.retry_in = 0.0  # the backoff after the last failure, in seconds
        self.on_retry: Callable[[Informer[Any, Any]], None] | None = None
        """Told of each failure and of the success that ends a run of them; when set, the
        failures are logged at DEBUG only, the listener says them."""
        self.unreadable: dict[str, str] = {}
        """The objects the models refuse, by key: why (`controllers.kube.unreadable`)."""
        self._backing_off = False
        self._store: dict[str, ItemT] = {}
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # --- the store ---------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """True once the first list is in the store."""
        return self._synced.is_set()

    @property
    def watching(self) -> bool:
        """Synced, running, and not backing off from a failed list or watch: the store
        follows the server."""
        running = self._task is not None and not self._task.done()
        return self.synced and running and not self._backing_off

    async def wait_synced(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self._synced.wait()

    def get(self, key: str) -> ItemT | None:
        """What is kept of `namespace/name` (or `name` for a cluster-scoped kind)."""
        return self._store.get(key)

    def list(self) -> list[ItemT]:
        """Everything kept, sorted by key."""
        return [self._store[key] for key in sorted(self._store)]

    def keys(self) -> set[str]:
        return set(self._store)

    # --- running -----------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name=f"informer {self.cls.KIND}")
        return self._task

    async def stop(self) -> None:
        """Cancel the list+watch loop; one that had already died of an error is only logged
        (a controller reports it when it happens during start-up)."""
        if self._task is not None:
            task, self._task = self._task, None
            task.cancel()
            await asyncio.wait({task})
            if not task.cancelled() and task.exception() is not None:
                log.error("%s informer had stopped: %s", self.cls.KIND, task.exception())

    async def run(self) -> None:
        """List, then watch forever; resume or relist as the failures require."""
        must_list = not self.resource_version
        delay = self.retry_delay
        while True:
            try:
                if must_list:
                    await self._relist()
                    must_list = False
                async for event in self.gateway.watch(
                    self.cls,
                    self.resource_version,
                    self.namespace,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    rows=self.keep.wire,
                    unreadable=self._refused,
                ):
                    self._apply(event)
                    delay = self.retry_delay
                    self._recovered()
                self.resumes += 1  # the server ended the stream cleanly (a timeout)
                self._recovered()  # a stream that worked to its end: the server answers
            except GoneError:
                log.info(
                    "%s watch: resourceVersion %s gone, relisting",
                    self.cls.KIND,
                    self.resource_version,
                )
                must_list = True
            except ApiError as exc:
                verb = "list" if must_list else "watch"
                level = logging.WARNING if self.on_retry is None else logging.DEBUG
                log.log(
                    level, "%s %s failed (%s); retrying in %.2fs", self.cls.KIND, verb, exc, delay
                )
                self.failed_verb = verb
                await self._back_off(exc, delay)
                delay = min(delay * 2, self.max_retry_delay)
                self.resumes += 1
            except Exception as exc:
                # Not the server's answer but ours failing on it: the same event would fail
                # again, so relist (a list is not read line by line) rather than resume.
                verb = "list" if must_list else "watch"
                log.error(
                    "%s %s failed unexpectedly (%s: %s); relisting in %.2fs",
                    self.cls.KIND,
                    verb,
                    type(exc).__name__,
                    _one_line(exc),
                    delay,
                    exc_info=exc,
                )
                must_list = True
                self.failed_verb = verb
                await self._back_off(exc, delay)
                delay = min(delay * 2, self.max_retry_delay)

    async def _back_off(self, error: Exception, delay: float) -> None:
        """Not watching for `delay` seconds, because of `error`."""
        self.last_error = error
        self.failures += 1
        self.failures_in_a_row += 1
        self.retry_in = delay
        self._tell()
        self._backing_off = True
        try:
            await asyncio.sleep(delay)
        finally:
            self._backing_off = False

    def _refused(self, key: str, why: str, also: set[str] | None = None) -> None:
        if also is not None:
            also.add(key)
        if self.unreadable.get(key) != why:
            log.warning("%s %s cannot be read, left out: %s", self.cls.KIND, key, why)
        self.unreadable[key] = why

    async def _relist(self) -> None:
        fresh: dict[str, ItemT] = {}
        project = self.keep.project
        resource_version = ""
        refused: set[str] = set()
        async for page in self.gateway.list_pages(
            self.cls,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=self.page_size,
            unreadable=partial(self._refused, also=refused),
        ):
            for obj in page.items:
                fresh[obj.key] = project(obj)
            resource_version = page.resource_version
        for key in refused & self._store.keys():
            fresh[key] = self._store[key]  # the last version read stays
        for key in self.unreadable.keys() - refused:
            del self.unreadable[key]
        self.relists += 1
        self.last_error = None
        old = self._store
        self._store = fresh
        self.resource_version = resource_version
        version = self.keep.version
        for key in sorted(old.keys() - fresh.keys()):
            self._call(self.on_delete, old[key])
        for key in sorted(fresh):
            if key not in old:
                self._call(self.on_add, fresh[key])
            elif version(old[key]) != version(fresh[key]):
                self._call(self.on_update, old[key], fresh[key])
        self._synced.set()
        self._recovered()

    def _recovered(self) -> None:
        if self.failures_in_a_row:
            self.failures_in_a_row = 0
            self._tell()

    def _tell(self) -> None:
        if self.on_retry is not None:
            try:
                self.on_retry(self)
            except Exception:
                log.exception("%s informer retry listener failed", self.cls.KIND)

    def _apply(self, event: WatchEvent[ObjT]) -> None:
        if event.resource_version:
            self.resource_version = event.resource_version
        obj = event.object
        if obj is None:
            # A bookmark only moves the resourceVersion on; so does an object that cannot be
            # read (`key`), unless it is deleted.
            if event.key is not None and event.type == "DELETED":
                self.unreadable.pop(event.key, None)
                if event.key in self._store:
                    self._call(self.on_delete, self._store.pop(event.key))
            return
        key = obj.key
        self.unreadable.pop(key, None)
        if event.type == "DELETED":
            gone = self._store.pop(key, None)
            self._call(self.on_delete, self.keep.project(obj) if gone is None else gone)
            return
        item = self.keep.project(obj)
        old = self._store.get(key)
        self._store[key] = item
        if old is None:
            self._call(self.on_add, item)
        else:
            self._call(self.on_update, old, item)

    def _call(self, callback: Callable[..., None] | None, *objs: ItemT) -> None:
        if callback is None:
            return
        try:
            callback(*objs)
        except Exception:
            # A broken handler must not stop the cache; the handler's owner sees the log.
            log.exception("%s informer callback failed", self.cls.KIND)
