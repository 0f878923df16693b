"""Informer-style caches (DESIGN §7): for each watched kind, list then watch through the gateway,
keep a typed in-memory store, and tell the controller what changed.

After a dropped watch the informer resumes from the last resourceVersion it saw (events and
bookmarks both advance it), so no update is lost; after 410 Gone it relists and reconciles,
which is how it learns of deletions that happened while it was disconnected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from apis.meta import KubeObject
from controllers.kube.errors import ApiError, GoneError
from controllers.kube.gateway import Gateway, WatchEvent

__all__ = ["Informer"]

log = logging.getLogger(__name__)

ObjT = TypeVar("ObjT", bound=KubeObject)


class Informer(Generic[ObjT]):
    """A list+watch cache of one kind; callbacks run on the event loop, in event order."""

    def __init__(
        self,
        gateway: Gateway,
        cls: type[ObjT],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        on_add: Callable[[ObjT], None] | None = None,
        on_update: Callable[[ObjT, ObjT], None] | None = None,
        on_delete: Callable[[ObjT], None] | None = None,
        retry_delay: float = 0.05,
        max_retry_delay: float = 5.0,
    ) -> None:
        self.gateway = gateway
        self.cls = cls
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.resource_version = ""
        self.relists = 0  # how many lists it took (1 + one per 410 Gone)
        self.resumes = 0  # how many times a watch was reopened from the last resourceVersion
        self._store: dict[str, ObjT] = {}
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # --- the store ---------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """True once the first list is in the store."""
        return self._synced.is_set()

    async def wait_synced(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self._synced.wait()

    def get(self, key: str) -> ObjT | None:
        """The object of `namespace/name` (or `name` for a cluster-scoped kind)."""
        return self._store.get(key)

    def list(self) -> list[ObjT]:
        """Every cached object, sorted by key."""
        return [self._store[key] for key in sorted(self._store)]

    def keys(self) -> set[str]:
        return set(self._store)

    # --- running -----------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name=f"informer {self.cls.KIND}")
        return self._task

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

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
                ):
                    self._apply(event)
                    delay = self.retry_delay
                self.resumes += 1  # the server ended the stream cleanly (a timeout)
            except GoneError:
                log.info(
                    "%s watch: resourceVersion %s gone, relisting",
                    self.cls.KIND,
                    self.resource_version,
                )
                must_list = True
            except ApiError as exc:
                log.warning("%s watch failed (%s); retrying in %.2fs", self.cls.KIND, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_retry_delay)
                self.resumes += 1

    async def _relist(self) -> None:
        result = await self.gateway.list(
            self.cls,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )
        self.relists += 1
        fresh = {obj.key: obj for obj in result.items}
        old = self._store
        self._store = fresh
        self.resource_version = result.resource_version
        for key in sorted(old.keys() - fresh.keys()):
            self._call(self.on_delete, old[key])
        for key in sorted(fresh):
            if key not in old:
                self._call(self.on_add, fresh[key])
            elif old[key].metadata.resource_version != fresh[key].metadata.resource_version:
                self._call(self.on_update, old[key], fresh[key])
        self._synced.set()

    def _apply(self, event: WatchEvent[ObjT]) -> None:
        if event.resource_version:
            self.resource_version = event.resource_version
        obj = event.object
        if obj is None:
            return  # a bookmark only moves the resourceVersion on
        key = obj.key
        if event.type == "DELETED":
            gone = self._store.pop(key, None)
            self._call(self.on_delete, gone or obj)
            return
        old = self._store.get(key)
        self._store[key] = obj
        if old is None:
            self._call(self.on_add, obj)
        else:
            self._call(self.on_update, old, obj)

    def _call(self, callback: Callable[..., None] | None, *objs: ObjT) -> None:
        if callback is None:
            return
        try:
            callback(*objs)
        except Exception:
            # A broken handler must not stop the cache; the handler's owner sees the log.
            log.exception("%s informer callback failed", self.cls.KIND)
