"""A mapping that snapshots share and the index keeps writing, copied a bucket at a time
(private, behind `FleetIndex`).

The decisions' rows per placement change for one placement at a time (a reconcile's write)
while every reconcile takes a snapshot holding them: copying the whole dict before the first
write after each snapshot made every reconcile copy ten thousand entries at a 10,000-placement
cold start. Here the entries live in a fixed number of dicts by key hash; a write after a
snapshot copies the one dict it changes (a view holds a tuple of the dicts, never the list).
The rule of `Cow` holds: what was made in the current epoch is in no snapshot yet and is
written in place.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from typing import Generic, TypeVar, overload

from placement.index.columns import Epoch

__all__ = ["BucketMap", "CowBuckets"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")
_BUCKETS = 64  # a power of two: the bucket is the hash's low bits
_MASK = _BUCKETS - 1


class BucketMap(Mapping[K, V]):
    """A read-only view of the buckets as they were when it was made (iteration goes bucket by
    bucket: no insertion order)."""

    __slots__ = ("_len", "_parts")

    def __init__(self, parts: tuple[dict[K, V], ...], length: int) -> None:
        self._parts = parts
        self._len = length

    def __getitem__(self, key: K) -> V:
        return self._parts[hash(key) & _MASK][key]

    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, default: V, /) -> V: ...
    @overload
    def get(self, key: K, default: T, /) -> V | T: ...
    def get(self, key: K, default: object = None, /) -> object:
        return self._parts[hash(key) & _MASK].get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._parts[hash(key) & _MASK]

    def __iter__(self) -> Iterator[K]:
        for part in self._parts:
            yield from part

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"BucketMap({dict(self.items())!r})"


class CowBuckets(Generic[K, V]):
    """The writable side: `view()` for a snapshot, writes copy what a snapshot may hold."""

    def __init__(self, epoch: Epoch) -> None:
        self._epoch = epoch
        self._parts: list[dict[K, V]] = [{} for _ in range(_BUCKETS)]
        self._made = [epoch.now] * _BUCKETS  # the epoch each bucket's dict was made in
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def get(self, key: K) -> V | None:
        return self._parts[hash(key) & _MASK].get(key)

    def view(self) -> BucketMap[K, V]:
        return BucketMap(tuple(self._parts), self._len)

    def _writable(self, bucket: int) -> dict[K, V]:
        now = self._epoch.now
        if self._made[bucket] != now:
            self._parts[bucket] = dict(self._parts[bucket])
            self._made[bucket] = now
        return self._parts[bucket]

    def __setitem__(self, key: K, value: V) -> None:
        bucket = hash(key) & _MASK
        part = self._writable(bucket)
        if key not in part:
            self._len += 1
        part[key] = value

    def pop(self, key: K) -> None:
        """Forget `key` (nothing when it is not there)."""
        bucket = hash(key) & _MASK
        if key in self._parts[bucket]:
            del self._writable(bucket)[key]
            self._len -= 1
