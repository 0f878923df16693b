"""Echoes: telling the watch event that merely echoes one of our own writes from news.

`Echoes` holds the re-queues that watch events ask for while a write of their object is in
flight; `EchoedGateway` is the gateway a controller writes through, announcing each write to
`Echoes` before it is sent and settling it with the version it produced.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from apis.meta import KubeObject
from controllers.kube.errors import ConflictError
from controllers.kube.gateway import Gateway

__all__ = ["GONE", "EchoedGateway", "Echoes"]

ObjT = TypeVar("ObjT", bound=KubeObject)

GONE = "<deleted>"
"""The version a DELETED event and a successful delete are matched by (a delete answers with
no resourceVersion)."""


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
    the watch event echoing it is recognised even when it arrives before the response."""

    def __init__(
        self, gateway: Gateway, echoes: Echoes, *, requeue_on_conflict: Iterable[str] = ()
    ) -> None:
        vars(self).update(vars(gateway))  # its client and settings: one connection pool
        self.echoes = echoes
        # Kinds whose object keys are the work queue's keys (the hub's Placements).
        self.requeue_on_conflict = frozenset(requeue_on_conflict)

    async def create(self, obj: ObjT) -> ObjT:
        return await self._announced(obj.KIND, obj.key, super().create(obj))

    async def merge_patch(
        self,
        cls: type[ObjT],
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        status: bool = False,
    ) -> ObjT:
        key = f"{namespace}/{name}" if cls.NAMESPACED else name
        written = super().merge_patch(cls, name, patch, namespace, status=status)
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
        key = f"{namespace}/{name}" if cls.NAMESPACED else name
        self.echoes.expect(cls.KIND, key)
        version: str | None = None
        try:
            held = await super().delete(
                cls, name, namespace, propagation=propagation, resource_version=resource_version
            )
            # Held by finalizers: its DELETED event comes later and is news.
            version = GONE if held is None else held.metadata.resource_version
            return held
        finally:
            self.echoes.settle(cls.KIND, key, version)

    async def _announced(self, kind: str, key: str, write: Awaitable[ObjT]) -> ObjT:
        self.echoes.expect(kind, key)
        version: str | None = None
        try:
            written = await write
            version = written.metadata.resource_version
            return written
        except ConflictError:
            if kind in self.requeue_on_conflict:
                # Someone else wrote the object since the reconcile read it: whatever the
                # writer does next, it is reconciled again on what is there now.
                self.echoes.requeue(key)
            raise
        finally:
            self.echoes.settle(kind, key, version)
