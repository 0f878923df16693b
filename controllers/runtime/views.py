"""The controller's view of the objects it writes: the newest known version of each Placement
and PlacementDecision, fed by watch events *and* by the controller's own writes.

Reading back its own writes at once (write-through) is what lets a reconcile that follows a
write see that write, so it does not write the same thing again; and it tells an event that
only echoes one of our writes (same resourceVersion) from news, so echoes re-queue nothing.
An event older than what we already know (its write was followed by one of ours) is ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from apis.meta import KubeObject
from apis.placements import PLACEMENT_LABEL, PlacementDecision

__all__ = ["GONE", "DecisionView", "Echoes", "Latest", "newer"]

ObjT = TypeVar("ObjT", bound=KubeObject)


def newer(candidate: str | None, known: str | None) -> bool:
    """Whether resourceVersion `candidate` is news compared to `known`. resourceVersions are
    opaque in general; when both are integers (as etcd's and the embedded server's are), an
    older one is recognised, otherwise any difference counts as news."""
    if not known:
        return True
    if candidate == known:
        return False
    if candidate and candidate.isdigit() and known.isdigit():
        return int(candidate) > int(known)
    return True


class Latest(Generic[ObjT]):
    """The newest known version of each object, by `namespace/name` key."""

    def __init__(self) -> None:
        self._objects: dict[str, ObjT] = {}
        # Keys we deleted ourselves: watch events about them until their DELETED event are
        # stale (they predate the deletion) and must not bring them back.
        self._deleted: set[str] = set()

    def __len__(self) -> int:
        return len(self._objects)

    def __iter__(self) -> Iterator[ObjT]:
        return iter(list(self._objects.values()))

    def get(self, key: str) -> ObjT | None:
        return self._objects.get(key)

    def observe(self, obj: ObjT, *, ours: bool = False) -> bool:
        """Take a version from a watch event (or, with `ours`, from our own write); True when
        it is news, i.e. the view changed because of it."""
        key = obj.key
        if ours:
            self._deleted.discard(key)
        elif key in self._deleted:
            return False
        known = self._objects.get(key)
        if known is not None:
            version = obj.metadata.resource_version
            if not newer(version, known.metadata.resource_version):
                if not ours and version == known.metadata.resource_version:
                    # The echo of our write: the same version, so keep the informer's copy
                    # and let the write's response go (one copy of each object, not two).
                    self._objects[key] = obj
                return False
        self._objects[key] = obj
        return True

    def observe_deleted(self, key: str, *, ours: bool = False) -> ObjT | None:
        """Forget an object; returns what was known of it (None: nothing, so no news)."""
        gone = self._objects.pop(key, None)
        if not ours:
            self._deleted.discard(key)
        elif gone is not None:
            # Our delete answered before its DELETED event: events until then are stale. When
            # the event came first, nothing is pending, and a mark would hide a later object
            # of the same name.
            self._deleted.add(key)
        return gone


class DecisionView(Latest[PlacementDecision]):
    """PlacementDecisions, also indexed by the placement named in their label."""

    def __init__(self) -> None:
        super().__init__()
        self._by_placement: dict[tuple[str, str], set[str]] = {}

    def of(self, namespace: str, placement: str) -> list[PlacementDecision]:
        """The decisions labelled with placement `namespace/placement`, by name."""
        keys = sorted(self._by_placement.get((namespace, placement), ()))
        return [self._objects[k] for k in keys]

    def observe(self, obj: PlacementDecision, *, ours: bool = False) -> bool:
        old = self._objects.get(obj.key)
        if not super().observe(obj, ours=ours):
            return False
        if old is not None:
            self._unindex(old)
        owner = (obj.metadata.labels or {}).get(PLACEMENT_LABEL)
        if owner:
            self._by_placement.setdefault((obj.namespace, owner), set()).add(obj.key)
        return True

    def observe_deleted(self, key: str, *, ours: bool = False) -> PlacementDecision | None:
        gone = super().observe_deleted(key, ours=ours)
        if gone is not None:
            self._unindex(gone)
        return gone

    def _unindex(self, obj: PlacementDecision) -> None:
        owner = (obj.metadata.labels or {}).get(PLACEMENT_LABEL)
        if not owner:
            return
        keys = self._by_placement.get((obj.namespace, owner))
        if keys is not None:
            keys.discard(obj.key)
            if not keys:
                del self._by_placement[(obj.namespace, owner)]


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
                for placement in sorted(keys):
                    self.requeue(placement)

    def hold(self, kind: str, key: str, version: str | None, keys: set[str]) -> bool:
        """An event of object `key` (at `version`) asks to re-queue `keys`: False when no write
        to the object is in flight (re-queue now), True when the decision waits for it."""
        flight = self._writes.get((kind, key))
        if flight is None:
            return False
        flight.held.append((version or "", keys))
        return True
