"""Echoes: telling the watch event that merely echoes one of our own writes from news.

`Echoes` holds the re-queues that watch events ask for while a write of their object is in
flight; `EchoedGateway` is the gateway a controller writes through, announcing each write to
`Echoes` before it is sent and settling it with the version it produced.

With leader election the gateway is also fenced (`WriteFence`, the `LeaderElector`): a write
is refused once this replica's lease deadline has passed, and one in flight when it passes is
cancelled, both raising `NotLeaderError`. A leader cut off from the server (a partition, its
requests held) thus stops writing before another replica can acquire the lease, instead of
landing stale writes on the new leader's decisions when the partition heals. `fenced` and
`refuse_if_fenced` are that fence for any write, for writers that do not go through
`EchoedGateway`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from apis.meta import KubeObject
from controllers.kube.answers import Rows
from controllers.kube.errors import ConflictError
from controllers.kube.gateway import Gateway
from controllers.kube.paths import object_key
from controllers.runtime.leader import NotLeaderError

__all__ = ["GONE", "EchoedGateway", "Echoes", "WriteFence", "fenced", "refuse_if_fenced"]

ObjT = TypeVar("ObjT", bound=KubeObject)
R = TypeVar("R")

GONE = "<deleted>"
"""The version a DELETED event and a successful delete are matched by (a delete answers with
no resourceVersion)."""


class WriteFence(Protocol):
    """How long writes are still allowed (a `LeaderElector` is one)."""

    def remaining(self) -> float:
        """Seconds writes are still allowed for; 0: refuse them."""
        ...

    async def wait_deadline(self) -> None:
        """Return once writes are no longer allowed."""
        ...


@dataclass
class _InFlight:
    writes: int = 0
    versions: set[str] = field(default_factory=set)  # what the settled writes produced
    held: list[tuple[str, set[str]]] = field(default_factory=list)  # (event version, keys)


class Echoes:
    """Writes in flight, to tell the watch event echoing one of them from news.

    The echo of a write can arrive before the write's response: then the views do not know the
    version yet, take it as news and would re-queue the placement once more for nothing (about
    one reconcile in two against a separate server). So while a write to an object is in
    flight, the re-queue that a watch event of that object asks for waits (the views and the
    index take the event at once); when the write settles, an event carrying exactly the
    version the write produced was its echo and re-queues nothing, any other event re-queues as
    it would have. A failed write makes every held event count as news.

    `requeue(key)` queues a key of the controller's work queue again.
    """

    def __init__(self, requeue: Callable[[str], None]) -> None:
        self.requeue = requeue
        self._writes: dict[tuple[str, str], _InFlight] = {}

    def __len__(self) -> int:
        return len(self._writes)

    def expect(self, kind: str, key: str) -> None:
        """A write of object `key` of `kind` is about to be sent."""
        self._writes.setdefault((kind, key), _InFlight()).writes += 1

    def settle(self, kind: str, key: str, version: str | None) -> None:
        """The write answered with `version` (GONE for a delete; None: it failed); once no write
        to the object is in flight, re-queue what the held events asked for, echoes aside."""
        flight = self._writes[(kind, key)]
        flight.writes -= 1
        if version is not None:
            flight.versions.add(version)
        if flight.writes:
            return
        del self._writes[(kind, key)]
        for held, keys in flight.held:
            if held not in flight.versions:
                for queued in sorted(keys):
                    self.requeue(queued)

    def hold(self, kind: str, key: str, version: str | None, keys: set[str]) -> bool:
        """An event of object `key` (at `version`) asks to re-queue `keys`: False when no write
        to the object is in flight (re-queue now), True when the decision waits for it."""
        flight = self._writes.get((kind, key))
        if flight is None:
            return False
        flight.held.append((version or "", keys))
        return True


class EchoedGateway(Gateway):
    """A writer's gateway: the same connection, with every create, patch and delete
    announced to `echoes` before it is sent and settled with the version it produced, so that
    the watch event echoing it is recognised even when it arrives before the response. Creates
    and merge patches are announced to the gateway's `answers` too (when it keeps them), so an
    echo read before the answer lends the answer its model."""

    def __init__(
        self,
        gateway: Gateway,
        echoes: Echoes,
        *,
        requeue_on_conflict: Iterable[str] = (),
        fence: WriteFence | None = None,
    ) -> None:
        vars(self).update(vars(gateway))  # its client and settings: one connection pool
        self.echoes = echoes
        # Kinds whose object keys are the work queue's keys (the hub's Placements).
        self.requeue_on_conflict = frozenset(requeue_on_conflict)
        self.fence = fence

    async def create(self, obj: ObjT) -> ObjT:
        return await self._announced(obj.KIND, obj.key, super().create(obj))

    async def replace(self, obj: ObjT) -> ObjT:
        return await self._fenced(super().replace(obj))

    async def replace_status(self, obj: ObjT) -> ObjT:
        return await self._fenced(super().replace_status(obj))

    async def json_patch(
        self,
        cls: type[ObjT],
        name: str,
        operations: Sequence[Mapping[str, Any]],
        namespace: str | None = None,
        *,
        status: bool = False,
    ) -> ObjT:
        return await self._fenced(
            super().json_patch(cls, name, operations, namespace, status=status)
        )

    async def merge_patch(
        self,
        cls: type[ObjT],
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        status: bool = False,
    ) -> ObjT:
        key = object_key(cls, name, namespace)
        written = super().merge_patch(cls, name, patch, namespace, status=status)
        return await self._announced(cls.KIND, key, written)

    async def create_kept(self, obj: KubeObject, rows: Rows | None) -> Any:
        written = super().create_kept(obj, rows)
        return await self._announced(obj.KIND, obj.key, written)

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
        key = object_key(cls, name, namespace)
        written = super().merge_patch_kept(cls, name, patch, namespace, status=status, rows=rows)
        return await self._announced(cls.KIND, key, written)

    async def delete(
        self,
        cls: type[ObjT],
        name: str,
        namespace: str | None = None,
        *,
        propagation: Literal["Background", "Foreground", "Orphan"] | None = None,
        resource_version: str | None = None,
    ) -> ObjT | None:
        key = object_key(cls, name, namespace)
        deleting = super().delete(
            cls, name, namespace, propagation=propagation, resource_version=resource_version
        )
        self._refuse_if_fenced(deleting)
        self.echoes.expect(cls.KIND, key)
        version: str | None = None
        try:
            held = await self._fenced(deleting)
            # Held by finalizers: its DELETED event comes later and is news.
            version = GONE if held is None else held.metadata.resource_version
            return held
        finally:
            self.echoes.settle(cls.KIND, key, version)

    async def _announced(
        self,
        kind: str,
        key: str,
        write: Coroutine[Any, Any, R],
    ) -> R:
        self._refuse_if_fenced(write)
        self.echoes.expect(kind, key)
        if self.answers is not None:
            self.answers.begin(kind, key)
        version: str | None = None
        try:
            written = await self._fenced(write)
            version = _version_of(written)
            return written
        except ConflictError:
            if kind in self.requeue_on_conflict:
                # Someone else wrote the object since the reconcile read it: whatever the
                # writer does next, it is reconciled again on what is there now.
                self.echoes.requeue(key)
            raise
        finally:
            self.echoes.settle(kind, key, version)
            if self.answers is not None:
                self.answers.end(kind, key)

    # --- the fence ---------------------------------------------------------------------------

    def _refuse_if_fenced(self, write: Coroutine[Any, Any, Any]) -> None:
        refuse_if_fenced(self.fence, write)

    async def _fenced(self, write: Coroutine[Any, Any, R]) -> R:
        return await fenced(self.fence, write)


def _version_of(written: Any) -> str | None:
    """The resourceVersion of a write's answer, a model or a row (`Rows`)."""
    meta = getattr(written, "metadata", None)
    version = meta.resource_version if meta is not None else written.resource_version
    return version if isinstance(version, str) else None


def refuse_if_fenced(fence: WriteFence | None, write: Coroutine[Any, Any, Any]) -> None:
    """NotLeaderError, the write never sent (its coroutine closed), when `fence` says writes
    are over; nothing without a fence."""
    if fence is not None and fence.remaining() <= 0:
        write.close()
        raise NotLeaderError("not the leader (lease deadline passed): write not sent")


async def fenced(fence: WriteFence | None, write: Coroutine[Any, Any, R]) -> R:
    """The write's answer; NotLeaderError if `fence` is closed already (the write is never
    sent) or closes while it is in flight (the request is cancelled)."""
    refuse_if_fenced(fence, write)
    if fence is None:
        return await write
    task = asyncio.ensure_future(write)
    deadline = asyncio.ensure_future(fence.wait_deadline())
    try:
        await asyncio.wait({task, deadline}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        deadline.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
    if task.cancelled():
        raise NotLeaderError("not the leader (lease deadline passed): write abandoned")
    return task.result()
