"""The on-demand ledger: exactly M places under concurrent admissions, in one process and
across replicas sharing their reservations by compare-and-swap; reservations that expire,
pods seen alive counted once, deletions giving places back, and the places of answers the API
server never used given back at once, here and in the shared set."""

from __future__ import annotations

import asyncio
import random

from placement.spot.ledger import Ledger, Settlement, decode, encode

W = "Deployment/ns/web"
M = 5


def test_500_concurrent_reservations_in_one_process_give_exactly_m() -> None:
    ledger = Ledger()
    results: list[bool] = []

    async def admit(i: int) -> None:
        await asyncio.sleep(0)  # interleave the admissions as a server's handlers are
        results.append(ledger.try_reserve(W, f"t{i}", M, now=0.0))

    async def main() -> None:
        await asyncio.gather(*(admit(i) for i in range(500)))

    asyncio.run(main())
    assert sum(results) == M
    assert ledger.count(W, 0.0) == M


def test_a_pod_seen_alive_is_counted_once_not_twice() -> None:
    ledger = Ledger()
    assert ledger.try_reserve(W, "t1", M, 0.0)
    ledger.observe("ns/p1", W, alive=True, token="t1", now=1.0)
    assert ledger.count(W, 1.0) == 1


def test_an_unused_reservation_expires_after_the_ttl() -> None:
    ledger = Ledger(ttl=30.0)
    for i in range(M):
        assert ledger.try_reserve(W, f"t{i}", M, 0.0)
    assert not ledger.try_reserve(W, "late", M, 29.9)
    assert ledger.count(W, 30.0) == 0  # the pods never came
    assert ledger.try_reserve(W, "late", M, 30.0)


def test_a_pod_seen_alive_outlives_its_reservation() -> None:
    ledger = Ledger(ttl=30.0)
    ledger.try_reserve(W, "t1", M, 0.0)
    ledger.observe("ns/p1", W, alive=True, token="t1", now=1.0)
    assert ledger.count(W, 100.0) == 1


def test_deleting_on_demand_pods_restores_m_with_replacements() -> None:
    ledger = Ledger()
    for i in range(M):
        assert ledger.try_reserve(W, f"t{i}", M, 0.0)
        ledger.observe(f"ns/p{i}", W, alive=True, token=f"t{i}", now=0.5)
    # two deleted within the reservations' TTL: their places come back at once
    ledger.forget("ns/p0", 1.0)
    ledger.observe("ns/p1", W, alive=False, token="t1", now=1.0)  # terminating
    assert ledger.count(W, 1.0) == M - 2
    granted = [ledger.try_reserve(W, f"r{i}", M, 1.0) for i in range(10)]
    assert sum(granted) == 2
    assert ledger.count(W, 1.0) == M


def test_pods_alive_without_a_token_count_too() -> None:
    # pods admitted before a restart, or labelled by their template
    ledger = Ledger()
    for i in range(3):
        ledger.observe(f"ns/p{i}", W, alive=True, token=None, now=0.0)
    assert sum(ledger.try_reserve(W, f"t{i}", M, 0.0) for i in range(10)) == 2


def test_a_pod_moving_to_another_workload_leaves_the_first_book() -> None:
    ledger = Ledger()
    ledger.observe("ns/p", "Deployment/ns/old", alive=True, token=None, now=0.0)
    ledger.observe("ns/p", W, alive=True, token=None, now=0.0)
    assert ledger.count("Deployment/ns/old", 0.0) == 0
    assert ledger.count(W, 0.0) == 1


def test_released_reservation_gives_its_place_back() -> None:
    ledger = Ledger()
    ledger.try_reserve(W, "t", 1, 0.0)
    ledger.release(W, "t", 0.0)
    assert ledger.count(W, 0.0) == 0
    assert ledger.try_reserve(W, "u", 1, 0.0)


def test_late_answers_released_at_once_let_later_pods_fill_m() -> None:
    """Issue 48: the first M answers reach the API server after its timeout, their pods are
    created unmutated; released, their places go to the next pods, not to nobody for a TTL."""
    ledger = Ledger(ttl=60.0)
    late = [f"late{i}" for i in range(M)]
    for token in late:
        assert ledger.try_reserve(W, token, M, 0.0)
    for token in late:
        ledger.release(W, token, 1.0)
    granted = [t for t in (f"t{i}" for i in range(10)) if ledger.try_reserve(W, t, M, 1.5)]
    assert len(granted) == M
    for i, token in enumerate(granted):
        ledger.observe(f"ns/p{i}", W, alive=True, token=token, now=2.0)
    assert ledger.count(W, 2.0) == M
    assert ledger.count(W, 100.0) == M  # after every TTL: the pods alive


# --- several replicas: the shared reservations ------------------------------------------------


class SharedObject:
    """The API object holding the shared reservations: a value and a resourceVersion, written
    only with the version read (what a PUT with a resourceVersion does)."""

    def __init__(self) -> None:
        self.text = ""
        self.version = 0
        self.conflicts = 0

    def read(self) -> tuple[str, int]:
        return self.text, self.version

    def write(self, text: str, version: int) -> bool:
        if version != self.version:
            self.conflicts += 1
            return False
        self.text, self.version = text, version + 1
        return True


async def replica_admit(
    ledger: Ledger, shared: SharedObject, token: str, now: float, rng: random.Random
) -> bool:
    """What the webhook shell does for one admission with several replicas."""
    if not ledger.try_reserve(W, token, M, now, shared=True):
        return False
    while token in ledger.pending(W):
        text, version = shared.read()
        await asyncio.sleep(rng.random() * 0.001)  # the read and the write are two requests
        settlement = ledger.settle(W, decode(text), ledger.pending(W), M, now)
        if settlement.changed and not shared.write(encode(settlement.shared), version):
            continue
        ledger.adopt(W, settlement, now)
        if token in settlement.granted:
            return True
        if token in settlement.refused:
            return False
    return token in ledger.pending(W) or token in decode(shared.text)


def test_two_replicas_with_250_concurrent_admissions_each_give_exactly_m() -> None:
    shared = SharedObject()
    replicas = [Ledger(), Ledger()]
    rng = random.Random(7)

    async def main() -> list[bool]:
        return await asyncio.gather(
            *(replica_admit(replicas[i % 2], shared, f"t{i}", 0.0, rng) for i in range(500))
        )

    results = asyncio.run(main())
    assert sum(results) == M
    assert len(decode(shared.text)) == M
    assert shared.conflicts > 0  # the replicas did race


def test_settle_counts_pods_alive_and_ignores_stale_cache() -> None:
    ledger = Ledger()
    ledger.observe("ns/p0", W, alive=True, token="a0", now=0.0)
    # another replica granted a1..a3, not yet seen here as pods
    shared = {"a0": 60.0, "a1": 60.0, "a2": 60.0, "a3": 60.0}
    for t in ("x", "y", "z"):
        ledger.try_reserve(W, t, M, 0.0, shared=True)
    settlement = ledger.settle(W, shared, ledger.pending(W), M, 0.0)
    assert settlement.granted == ("x",)
    assert settlement.refused == ("y", "z")
    assert set(settlement.shared) == {"a0", "a1", "a2", "a3", "x"}
    ledger.adopt(W, settlement, 0.0)
    assert ledger.count(W, 0.0) == M
    assert ledger.pending(W) == []


def test_settle_drops_expired_shared_entries_and_regrants_a_lost_answer() -> None:
    ledger = Ledger(ttl=10.0)
    ledger.try_reserve(W, "mine", M, 20.0, shared=True)
    shared = {"old": 5.0, "mine": 30.0}  # our own write landed, its answer was lost
    settlement = ledger.settle(W, shared, ledger.pending(W), M, 20.0)
    assert settlement.granted == ("mine",)
    assert settlement.shared == {"mine": 30.0}
    assert settlement.changed


def test_a_released_token_read_back_from_the_shared_set_is_not_counted_and_is_dropped() -> None:
    ledger = Ledger()
    ledger.try_reserve(W, "gone", M, 0.0, shared=True)
    first = ledger.settle(W, {}, ledger.pending(W), M, 0.0)
    ledger.adopt(W, first, 0.0)
    assert first.shared.keys() == {"gone"}
    ledger.release(W, "gone", 1.0)  # its answer was never used
    others = {f"o{i}": 60.0 for i in range(M - 1)}  # another replica's grants
    shared = {**first.shared, **others}
    ledger.try_reserve(W, "next", M, 1.0, shared=True)
    settlement = ledger.settle(W, shared, ledger.pending(W), M, 1.0)
    assert settlement.granted == ("next",)  # the released place counts for nothing
    assert "gone" not in settlement.shared and settlement.changed
    # A settlement with nothing pending still writes the released token out.
    assert ledger.settle(W, shared, [], M, 1.0).changed


def test_a_place_released_by_another_replica_is_seen_once_the_cache_is_a_refresh_old() -> None:
    """Replica B cached the shared set holding A's grants; A releases one (its answer came after
    the API server's timeout) and writes the set without it. B's own count is full only through
    its cache: within `refresh` it trusts the cache, after it asks the shared object."""
    a, b = Ledger(refresh=1.0), Ledger(refresh=1.0)
    for i in range(M):
        a.try_reserve(W, f"a{i}", M, 0.0, shared=True)
    granted = a.settle(W, {}, a.pending(W), M, 0.0)
    a.adopt(W, granted, 0.0)
    b.adopt(W, b.settle(W, granted.shared, [], M, 0.0), 0.0)
    assert b.count(W, 0.0) == M
    a.release(W, "a0", 0.5)
    shared = a.settle(W, granted.shared, [], M, 0.5).shared
    assert "a0" not in shared
    assert not b.try_reserve(W, "early", M, 0.5, shared=True)  # the cache is fresh
    assert b.try_reserve(W, "b0", M, 1.5, shared=True)  # a second old: ask the shared set
    assert b.settle(W, shared, b.pending(W), M, 1.5).granted == ("b0",)
    # With its pods alive the count is full whatever the cache's age: nothing to ask.
    for i in range(M):
        b.observe(f"ns/p{i}", W, alive=True, token=None, now=2.0)
    assert not b.try_reserve(W, "b1", M, 10.0, shared=True)


def test_settle_with_nothing_to_change_needs_no_write() -> None:
    ledger = Ledger()
    settlement = ledger.settle(W, {"a": 60.0}, [], M, 0.0)
    assert settlement == Settlement({"a": 60.0}, (), (), changed=False)


def test_a_replica_that_saw_a_deletion_regrants_the_place() -> None:
    ledger = Ledger()
    shared = {f"t{i}": 60.0 for i in range(M)}
    for i in range(M):
        ledger.observe(f"ns/p{i}", W, alive=True, token=f"t{i}", now=1.0)
    ledger.forget("ns/p0", 2.0)
    ledger.try_reserve(W, "r", M, 2.0, shared=True)
    assert ledger.settle(W, shared, ["r"], M, 2.0).granted == ("r",)


def test_confirm_forgets_pods_a_fresh_read_no_longer_holds() -> None:
    ledger = Ledger()
    for pod in ("a", "b", "c"):
        ledger.observe(f"ns/{pod}", "w", True, None, 0.0)
    before = ledger.alive("w")
    ledger.observe("ns/d", "w", True, None, 1.0)  # seen after the read was sent: kept
    # The read holds `a` only: `b` and `c` were deleted while the watch lagged.
    assert ledger.confirm("w", before, ["ns/a"], 2.0) == 2
    assert ledger.alive("w") == {"ns/a", "ns/d"}
    assert ledger.count("w", 2.0) == 2
    assert ledger.try_reserve("w", "t1", 3, 2.0)
    assert not ledger.try_reserve("w", "t2", 3, 2.0)
    # The lagging watch then delivers the deletions: nothing changes twice.
    ledger.forget("ns/b", 3.0)
    assert ledger.count("w", 3.0) == 3
    assert ledger.confirm("w", ledger.alive("w"), ledger.alive("w"), 3.0) == 0
    assert ledger.confirm("other", frozenset({"ns/x"}), [], 3.0) == 0


def test_encode_decode_round_trip_and_garbage() -> None:
    assert decode(encode({"b": 2.0, "a": 1.5})) == {"a": 1.5, "b": 2.0}
    assert decode(None) == {}
    assert decode("not json") == {}
    assert decode("[1]") == {}
    assert decode('{"a": "x", "b": true, "c": 3}') == {"c": 3.0}
