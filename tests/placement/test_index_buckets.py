"""The decisions' per-placement mapping, copied a bucket at a time after a snapshot."""

from __future__ import annotations

from placement.index.buckets import CowBuckets
from placement.index.columns import Epoch


def _filled(epoch: Epoch, n: int) -> CowBuckets[tuple[str, str], int]:
    buckets: CowBuckets[tuple[str, str], int] = CowBuckets(epoch)
    for i in range(n):
        buckets[("ns", f"p{i}")] = i
    return buckets


def test_a_view_keeps_what_it_saw_while_later_epochs_write() -> None:
    epoch = Epoch()
    buckets = _filled(epoch, 500)
    before = buckets.view()
    epoch.now += 1  # a snapshot holds `before`
    buckets[("ns", "p1")] = -1
    buckets[("ns", "new")] = 7
    buckets.pop(("ns", "p2"))
    buckets.pop(("ns", "absent"))
    assert before[("ns", "p1")] == 1 and ("ns", "new") not in before
    assert before.get(("ns", "p2")) == 2 and len(before) == 500
    assert dict(before.items()) == {("ns", f"p{i}"): i for i in range(500)}
    after = buckets.view()
    assert after[("ns", "p1")] == -1 and after.get(("ns", "new")) == 7
    assert ("ns", "p2") not in after and after.get(("ns", "p2"), 0) == 0
    assert len(after) == len(buckets) == 500
    assert sorted(after) == sorted(
        [("ns", f"p{i}") for i in range(500) if i != 2] + [("ns", "new")]
    )


def test_writes_in_the_same_epoch_go_in_place_and_copy_only_the_bucket_written() -> None:
    epoch = Epoch()
    buckets = _filled(epoch, 500)
    first = buckets.view()
    buckets[("ns", "p1")] = -1  # no snapshot since: nobody holds `first`, written in place
    assert first[("ns", "p1")] == -1
    epoch.now += 1
    held = buckets.view()
    buckets[("ns", "p3")] = -3
    now = buckets.view()
    assert held[("ns", "p3")] == 3 and now[("ns", "p3")] == -3
    shared = [a is b for a, b in zip(held._parts, now._parts, strict=True)]
    assert shared.count(False) == 1  # one bucket copied, the others still shared
