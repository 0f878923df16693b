"""A controller's view of the objects it writes: the newest known version of each, fed by
watch events *and* by the controller's own writes.

Reading back its own writes at once (write-through) is what lets a reconcile that follows a
write see that write, so it does not write the same thing again; and it tells an event that
only echoes one of our writes (same resourceVersion) from news, so echoes re-queue nothing.
An event older than what we already know (its write was followed by one of ours) is ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Keyed", "Latest", "newer"]


class Keyed(Protocol):
    """What a view holds: a model or a row, found by its `namespace/name` key."""

    @property
    def key(self) -> str: ...


ObjT = TypeVar("ObjT", bound=Keyed)


def _model_version(obj: Any) -> str | None:
    return obj.metadata.resource_version  # type: ignore[no-any-return]


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
    """The newest known version of each object, by `namespace/name` key. `version` reads an
    object's resourceVersion (a model's metadata by default; a row's own field)."""

    def __init__(self, version: Callable[[ObjT], str | None] = _model_version) -> None:
        self._version = version
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
            version, known_version = self._version(obj), self._version(known)
            if not newer(version, known_version):
                if not ours and version == known_version:
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
