"""Quota preemption counts the victims already on their way out once (issue 27, item 2).

A second preemptor arriving while the first one's victims are still terminating used to see
their quota's use as if they stayed: it took the headroom they free a second time, evicting a
high-priority pod where none was needed and leaving the quota reclaimed from below its min.
Here preemptors arrive one after the other with the engine's deletions held back (in flight)
on an injected clock; what each step deletes, and what each quota keeps, is checked."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from apis.core import Pod
from placement.pods.cluster.requests import pod_requests
from placement.pods.framework.events import DeletePod, PatchPodStatus
from placement.pods.framework.interface import PodInfo
from plugins.pods.capacityscheduling.elasticquota import InFlight, QuotaBook
from plugins.pods.capacityscheduling.preemption import RULE_OWN, RULE_RECLAIM, QuotaPreemption
from tests.placement.pods.test_engine import T0, terminating
from tests.placement.pods.test_quota_world import GPU, QuotaWorld, gpu_node, qpod, quota


def arrive(world: QuotaWorld, pod: Pod) -> list[DeletePod]:
    """The pod is created and scheduled once; its victims' deletions are held back."""
    world.add_pods(pod)
    actions = world.engine.schedule(world.now)
    world.apply([a for a in actions if not isinstance(a, DeletePod)])
    world.now += timedelta(seconds=1)
    return [a for a in actions if isinstance(a, DeletePod)]


def gone(world: QuotaWorld, deletions: list[DeletePod]) -> None:
    """The held victims go; then the cluster settles."""
    world.apply(deletions)
    world.settle(600)


def kept(world: QuotaWorld, namespace: str, deletions: list[DeletePod]) -> int:
    """What the namespace's quota uses once the victims in flight are gone."""
    leaving = {d.key for d in deletions if d.key in world.pods}
    return world.used(namespace) - sum(
        pod_requests(world.pods[key]).get(GPU, 0)
        for key in leaving
        if key.startswith(f"{namespace}/")
    )


# --- the regression: two preemptors of one quota, one after the other -----------------------


def across_nodes() -> QuotaWorld:
    """n1 (4 GPUs, 1 cpu): A's a-low (2 GPUs, priority 0) and B's b1 (2); n2 (4 GPUs): A's
    a-high (2, priority 100), 2 GPUs free. A (min 2) borrows 2 of B's min (4): Σused = Σmin."""
    world = QuotaWorld.of()
    world.add_nodes(gpu_node("n1", gpus=4, cpu=1), gpu_node("n2", gpus=4))
    world.add_quotas(quota("a", {GPU: 2}, {GPU: 8}), quota("b", {GPU: 4}, {GPU: 8}))
    world.add_pods(
        qpod("a-low", "a", gpu=2, node="n1", priority=0, started=T0),
        qpod("b1", "b", gpu=2, node="n1", priority=100, started=T0),
        qpod("a-high", "a", gpu=2, node="n2", priority=100, started=T0),
    )
    return world


@pytest.mark.parametrize(
    ("second", "runs", "waits"),
    [
        pytest.param(20, "b/p2", "b/p1", id="higher-priority-second-takes-the-room"),
        pytest.param(10, "b/p1", "b/p2", id="equal-priority-second-waits-its-turn"),
    ],
)
def test_a_second_preemptor_does_not_evict_again_the_headroom_a_leaving_victim_frees(
    second: int, runs: str, waits: str
) -> None:
    world = across_nodes()
    first = arrive(world, qpod("p1", "b", gpu=2, priority=10))
    assert [d.key for d in first] == ["a/a-low"]  # B within its min reclaims A's borrowed 2
    assert kept(world, "a", first) == 2
    # p2 fits only n2 (its cpu), where only quota headroom is lacking: a-low's going gives it.
    again = arrive(world, qpod("p2", "b", gpu=2, cpu=2, priority=second))
    assert again == []  # before: a-high (priority 100) too, and A at 0 under its min 2
    assert kept(world, "a", first) == 2
    gone(world, first)
    assert world.preempted() == ["a/a-low"]
    assert world.running("a") == ["a/a-high"] and world.used("a") == 2
    # B gets its min, no more: the other preemptor waits, rejected by Σmin.
    assert runs in world.running() and world.pending() == [waits]
    assert world.used("b") == 4
    assert "total ElasticQuota used is more than min" in world.message(waits)


def test_a_preemptor_relying_on_a_leaving_pod_waits_for_it_instead_of_preempting_again() -> None:
    world = across_nodes()
    first = arrive(world, qpod("p1", "b", gpu=2, priority=10))
    assert arrive(world, qpod("p2", "b", gpu=2, cpu=2, priority=20)) == []
    assert len(world.capacity.preemptions) == 2  # p2 nominated to n2, no victim of its own
    world.now += timedelta(minutes=5, seconds=1)  # both retried while a-low is still going
    again = world.engine.schedule(world.now)
    world.apply([a for a in again if not isinstance(a, DeletePod)])
    assert not any(isinstance(a, DeletePod) for a in again)
    assert len(world.capacity.preemptions) == 2
    assert "not eligible due to a terminating pod" in world.message("b/p2")
    gone(world, first)
    assert world.running("b") == ["b/b1", "b/p2"]


def one_node() -> QuotaWorld:
    """8 GPUs: A (min 3) runs a-low (1 GPU, priority 0), a-mid (2, 50), a-high (2, 100),
    borrowing 2 of B's min (5); B runs b1 (3, priority 100): Σused = Σmin = 8."""
    world = QuotaWorld.of()
    world.add_nodes(gpu_node("n1", gpus=8))
    world.add_quotas(quota("a", {GPU: 3}, {GPU: 8}), quota("b", {GPU: 5}, {GPU: 8}))
    world.add_pods(
        qpod("a-low", "a", gpu=1, node="n1", priority=0, started=T0),
        qpod("a-mid", "a", gpu=2, node="n1", priority=50, started=T0),
        qpod("a-high", "a", gpu=2, node="n1", priority=100, started=T0),
        qpod("b1", "b", gpu=3, node="n1", priority=100, started=T0),
    )
    return world


def test_a_higher_priority_second_preemptor_takes_the_leaving_room_without_new_victims() -> None:
    """p1 needs 2 GPUs: a-low's 1 is too little, a-mid goes and A is at its min. p2 (1 GPU,
    higher priority, so p1's nomination does not hold the node against it) arrives while
    a-mid is terminating: a-mid's room is enough, A (at its min) gives nothing more."""
    world = one_node()
    first = arrive(world, qpod("p1", "b", gpu=2, priority=10))
    assert [d.key for d in first] == ["a/a-mid"]
    again = arrive(world, qpod("p2", "b", gpu=1, priority=20))
    assert again == []  # before: a-low too, and A at 2 under its min 3
    [record] = world.capacity.preemptions[1:]
    assert (record.preemptor, record.victims, record.elsewhere) == ("b/p2", ("a/a-mid",), ())
    gone(world, first)
    assert world.preempted() == ["a/a-mid"]
    assert world.used("a") == 3 and world.used("b") == 4
    assert world.running("b") == ["b/b1", "b/p2"] and world.pending() == ["b/p1"]


def test_a_pod_terminating_on_its_own_counts_as_gone_and_is_waited_for() -> None:
    """a-low is being deleted by its owner (deletionTimestamp set): a reclaiming preemptor
    counts A without it (at its min, no source of victims) and waits for its room."""
    world = QuotaWorld.of()
    world.add_nodes(gpu_node("n1", gpus=10))
    world.add_quotas(quota("a", {GPU: 4}, {GPU: 6}), quota("b", {GPU: 6}, {GPU: 8}))
    world.add_pods(
        qpod("a-low", "a", gpu=2, node="n1", priority=0, started=T0),
        qpod("a-mid", "a", gpu=2, node="n1", priority=50, started=T0),
        qpod("a-high", "a", gpu=2, node="n1", priority=100, started=T0),
        qpod("b1", "b", gpu=4, node="n1", priority=100, started=T0),
    )
    world.add_pods(terminating(world.pods["a/a-low"]))
    deletions = arrive(world, qpod("p1", "b", gpu=2, priority=10))
    assert {d.key for d in deletions} <= {"a/a-low"}  # never a-mid or a-high
    assert world.engine.nominated() == {"b/p1": "n1"}
    world.now += timedelta(minutes=5, seconds=1)  # retried while a-low is still there
    again = arrive(world, qpod("p2", "b", gpu=2, priority=10))
    assert again == [] and "a/a-low" in world.pods
    world.delete("a/a-low")
    world.settle(600)
    assert world.running("b") == ["b/b1", "b/p1"] and world.pending() == ["b/p2"]
    assert world.used("a") == 4


def test_a_leaving_pod_is_never_reprieved_in_favour_of_one_that_is_not_going() -> None:
    """On a full node, a-high (more important) is terminating and a-low is not: either one's
    room is enough. The reprieve puts back the most important first, which would keep a-high
    (going anyway) and evict a-low; a leaving pod is not put back, so a-low stays."""
    world = QuotaWorld.of()
    world.add_nodes(gpu_node("n1", gpus=4))
    world.add_quotas(quota("a", {GPU: 0}, {GPU: 8}), quota("b", {GPU: 4}, {GPU: 8}))
    world.add_pods(
        qpod("a-high", "a", gpu=2, node="n1", priority=50, started=T0),
        qpod("a-low", "a", gpu=2, node="n1", priority=0, started=T0),
    )
    world.add_pods(terminating(world.pods["a/a-high"]))
    deletions = arrive(world, qpod("p", "b", gpu=2, priority=10))
    assert "a/a-low" not in {d.key for d in deletions}
    [record] = world.capacity.preemptions
    assert record.victims == ("a/a-high",)
    world.delete("a/a-high")
    world.settle(600)
    assert world.running() == ["a/a-low", "b/p"] and world.preempted() == []


# --- nominations: the room a preemptor is owed -------------------------------------------


def test_an_update_older_than_the_nomination_patch_keeps_the_nomination() -> None:
    """p1's nomination patch is not seen yet when an older update of p1 (a label change)
    arrives: the book keeps p1's nomination as the engine's nominator does, so p2 of the same
    priority counts p1's request (PreFilter and preemption)."""
    world = across_nodes()
    p1 = qpod("p1", "b", gpu=2, priority=10)
    world.add_pods(p1)
    actions = world.engine.schedule(world.now)
    world.apply([a for a in actions if not isinstance(a, DeletePod | PatchPodStatus)])
    meta = p1.metadata.model_copy(update={"labels": {"team": "b"}})
    world.add_pods(p1.model_copy(update={"metadata": meta}))
    assert world.engine.nominated() == {"b/p1": "n1"}
    p2 = PodInfo.of(qpod("p2", "b", gpu=1, priority=10))
    world.capacity.book.sync_nominations(world.engine.cluster)
    assert list(world.capacity.book.nominated()) == ["uid-b-p1"]
    quota_b = world.capacity.quota("b")
    assert quota_b is not None
    in_eq, _ = world.capacity.book.with_nominated(p2, quota_b)
    assert in_eq == {GPU: 3}


def test_a_nomination_the_engine_clears_stops_holding_room_before_its_patch_is_seen() -> None:
    """p2 (higher priority) takes the node p1 was nominated to: the engine clears p1's
    nomination; the book follows at once, not when p1's update comes back."""
    world = one_node()
    first = arrive(world, qpod("p1", "b", gpu=2, priority=10))
    world.add_pods(qpod("p2", "b", gpu=1, priority=20))
    actions = world.engine.schedule(world.now)
    cleared = [a for a in actions if isinstance(a, PatchPodStatus) and a.key == "b/p1"]
    assert [a.nominated_node for a in cleared] == [""]
    assert "b/p1" not in world.engine.nominated()
    world.capacity.book.sync_nominations(world.engine.cluster)
    assert sorted(p.key for p in world.capacity.book.nominated().values()) == ["b/p2"]
    gone(world, first)


# --- the accounting, unit by unit ----------------------------------------------------------


def book_with(*pods: Pod) -> tuple[QuotaWorld, QuotaBook]:
    world = QuotaWorld.of()
    world.add_nodes(gpu_node("n1", gpus=10))
    world.add_quotas(quota("a", {GPU: 2}, {GPU: 8}), quota("b", {GPU: 4}, {GPU: 8}))
    world.add_pods(*pods)
    return world, world.capacity.book


def info(world: QuotaWorld, key: str) -> PodInfo:
    found = world.engine.cluster.pod(key)
    assert found is not None
    return found


def test_leaving_pods_are_remembered_until_they_go_and_only_while_going() -> None:
    world, book = book_with(
        qpod("a1", "a", gpu=2, node="n1"), qpod("a2", "a", gpu=1, node="n1", priority=5)
    )
    assert book.in_flight(lambda key: True) == InFlight()  # nothing marked
    world.add_pods(terminating(world.pods["a/a1"]))
    flight = book.in_flight(lambda key: True)
    assert flight.uids == {"uid-a-a1"} and flight.held == {"a": {GPU: 2}}
    assert flight.used(book.quota("a")) == {GPU: 1}  # type: ignore[arg-type]
    assert book.quota("a").used == {GPU: 3}  # type: ignore[union-attr]  # PreFilter still counts it
    assert book.in_flight(lambda key: False) == InFlight()
    book.nominate(info(world, "a/a2"), "n1", [info(world, "a/a2")])
    assert book.in_flight(lambda key: True).uids == {"uid-a-a1", "uid-a-a2"}
    world.delete("a/a1")
    assert book.in_flight(lambda key: True).uids == {"uid-a-a2"}


def test_a_quota_back_at_its_min_without_its_leaving_pods_is_no_source_of_victims() -> None:
    world, book = book_with(
        qpod("a1", "a", gpu=2, node="n1", priority=0),
        qpod("a2", "a", gpu=2, node="n1", priority=100),
        qpod("b1", "b", gpu=2, node="n1", priority=100),
    )
    preemptor = PodInfo.of(qpod("p", "b", gpu=2, priority=10))
    leaving = InFlight({"uid-a-a1": info(world, "a/a1")}, {"a": {GPU: 2}})
    context = QuotaPreemption.of(book, preemptor, leaving)
    assert context.rule == RULE_RECLAIM and context.over == ()
    assert context.used["a"] == {GPU: 2}
    assert context.allowed(info(world, "a/a1"))  # going anyway: removable on its node
    assert not context.allowed(info(world, "a/a2"))
    assert context.short_min == {GPU: 0}  # Σused 6 - 2 leaving + 2 asked - Σmin 6
    # The leaving pod frees nothing more when listed as a victim again.
    assert context.short([info(world, "a/a1")]) == ({}, {})
    # Counting it as staying (as before) made A a source, over its min by 2.
    stale = QuotaPreemption.of(book, preemptor, InFlight())
    assert [q.namespace for q in stale.over] == ["a"] and stale.short_min == {GPU: 2}


def test_complete_skips_leaving_pods_and_never_takes_a_quota_below_its_min() -> None:
    world, book = book_with(
        qpod("a1", "a", gpu=1, node="n1", priority=0),
        qpod("a2", "a", gpu=2, node="n1", priority=5),
        qpod("a3", "a", gpu=2, node="n1", priority=100),
    )
    preemptor = PodInfo.of(qpod("p", "b", gpu=4, priority=10))  # B 0 + 4 <= min 4
    a1, a2, a3 = (info(world, k) for k in ("a/a1", "a/a2", "a/a3"))
    # Σused 5 + 4 - Σmin 6: 3 lacking; A (5, min 2) gives a1 and a2 and stays at its min.
    context = QuotaPreemption.of(book, preemptor, InFlight())
    assert context.rule == RULE_RECLAIM
    taken = context.complete((), lambda: iter([a1, a2, a3]))
    assert taken is not None and sorted(p.key for p in taken) == ["a/a1", "a/a2"]
    # With a2 leaving, 1 is lacking: a1 only (a2 is never taken twice).
    leaving = InFlight({"uid-a-a2": a2}, {"a": {GPU: 2}})
    context = QuotaPreemption.of(book, preemptor, leaving)
    taken = context.complete((), lambda: iter([a1, a2, a3]))
    assert taken is not None and [p.key for p in taken] == ["a/a1"]
    # Without a1 to take, a3 would leave A (3 once a2 is gone) at 1, under its min 2: None.
    assert context.complete((), lambda: iter([a2, a3])) is None


def test_the_rule_counts_the_own_quota_s_leaving_pods_and_its_shortfall_does_not() -> None:
    """B's own b1 leaving: B is still above its min for the rule (b1 stays removable on its
    node, as a lower-priority pod of B), but what B lacks is counted without b1."""
    world, book = book_with(
        qpod("a1", "a", gpu=2, node="n1", priority=0),
        qpod("b1", "b", gpu=4, node="n1", priority=0),
    )
    preemptor = PodInfo.of(qpod("p", "b", gpu=2, priority=10))
    b1 = info(world, "b/b1")
    stale = QuotaPreemption.of(book, preemptor, InFlight())
    assert stale.rule == RULE_OWN and stale.short_min == {GPU: 2}  # 6 + 2 - 6
    context = QuotaPreemption.of(book, preemptor, InFlight({"uid-b-b1": b1}, {"b": {GPU: 4}}))
    assert context.rule == RULE_OWN and context.allowed(b1)
    assert context.short_min == {GPU: -2} and context.short([b1]) == ({}, {})


def test_a_preemptor_relies_only_on_the_leaving_pods_its_headroom_needs() -> None:
    world, book = book_with(
        qpod("a1", "a", gpu=2, node="n1", priority=0),
        qpod("a2", "a", gpu=2, node="n1", priority=100),
        qpod("b1", "b", gpu=1, node="n1", priority=100),
    )
    leaving = InFlight({"uid-a-a1": info(world, "a/a1")}, {"a": {GPU: 2}})
    # Σused 5 + 2 > Σmin 6 with a1 staying: the headroom comes from a1's going.
    needs = QuotaPreemption.of(book, PodInfo.of(qpod("p", "b", gpu=2)), leaving)
    assert [p.key for p in needs.relied_on()] == ["a/a1"]
    # 5 + 1 fits Σmin with a1 staying: nothing to wait for.
    fits = QuotaPreemption.of(book, PodInfo.of(qpod("q", "b", gpu=1)), leaving)
    assert fits.relied_on() == []
    # Asking only for what no quota governs: nothing either.
    cpu = QuotaPreemption.of(book, PodInfo.of(qpod("r", "b", cpu=4)), leaving)
    assert cpu.relied_on() == []


# --- the property: with deletions in flight, reclaiming never double counts -----------------

quota_specs = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=2, max_size=3)
running_specs = st.lists(
    st.tuples(st.integers(0, 2), st.integers(1, 3), st.sampled_from([0, 5, 10])),
    min_size=2,
    max_size=12,
)
arrival_specs = st.lists(
    st.tuples(st.integers(0, 2), st.integers(1, 3), st.sampled_from([0, 5, 10, 20]), st.booleans()),
    min_size=2,
    max_size=6,
)


@settings(max_examples=100, deadline=None)
@example(  # found against the old accounting: q2's r1 goes for p0, then r0 for p1 too
    quotas=[(2, 0), (0, 0), (3, 1)],
    gpus=[4],
    running=[(2, 3, 0), (2, 1, 0)],
    arrivals=[(0, 1, 0, False), (0, 1, 0, False)],
)
@given(
    quota_specs, st.lists(st.integers(2, 6), min_size=1, max_size=3), running_specs, arrival_specs
)
def test_with_victims_in_flight_reclaim_takes_only_from_quotas_still_over_their_min(
    quotas: list[tuple[int, int]],
    gpus: list[int],
    running: list[tuple[int, int, int]],
    arrivals: list[tuple[int, int, int, bool]],
) -> None:
    """Preemptors arrive one at a time; victims' deletions are held back and released at
    random points. Every victim a reclaim newly evicts belongs to a quota over its min with
    the victims in flight gone; a victim taken elsewhere for headroom never takes its quota
    under its min; no pod is deleted twice."""
    world = QuotaWorld.of()
    world.add_nodes(*(gpu_node(f"n{i + 1}", gpus=g) for i, g in enumerate(gpus)))
    names = [f"q{i}" for i in range(len(quotas))]
    world.add_quotas(
        *(quota(ns, {GPU: low}, {GPU: low + e}) for ns, (low, e) in zip(names, quotas, strict=True))
    )
    mins = {ns: low for ns, (low, _) in zip(names, quotas, strict=True)}
    free = dict(enumerate(gpus))
    used = dict.fromkeys(names, 0)
    for i, (ns_index, gpu, priority) in enumerate(running):
        ns = names[ns_index % len(names)]
        low, extra = quotas[ns_index % len(names)]
        if used[ns] + gpu > low + extra or sum(used.values()) + gpu > sum(mins.values()):
            continue
        row = next((r for r, left in free.items() if left >= gpu), None)
        if row is None:
            continue
        free[row] -= gpu
        used[ns] += gpu
        world.add_pods(
            qpod(f"r{i}", ns, gpu=gpu, priority=priority, node=f"n{row + 1}", started=T0)
        )
    held: list[DeletePod] = []
    deleted: list[str] = []
    for i, (ns_index, gpu, priority, release) in enumerate(arrivals):
        if release and held:
            world.apply(held)
            held = []
        world.add_pods(qpod(f"p{i}", names[ns_index % len(names)], gpu=gpu, priority=priority))
        for _ in range(30):  # one cycle at a time, deletions held back
            if not world.engine.queue_sizes()["active"]:
                break
            before = {n: kept(world, n, held) for n in names}
            records = len(world.capacity.preemptions)
            actions = world.engine.schedule(world.now, 1)
            world.apply([a for a in actions if not isinstance(a, DeletePod)])
            new = {a.key for a in actions if isinstance(a, DeletePod)}
            deleted += new
            held += [a for a in actions if isinstance(a, DeletePod)]
            for record in world.capacity.preemptions[records:]:
                if record.rule != RULE_RECLAIM:
                    continue
                for victim in new & {*record.victims, *record.elsewhere}:
                    victim_ns = victim.split("/")[0]
                    assert before[victim_ns] > mins[victim_ns], f"{victim}: {victim_ns} at min"
                on_node = {v.split("/")[0] for v in record.victims}
                for victim in record.elsewhere:
                    victim_ns = victim.split("/")[0]
                    if victim_ns not in on_node:  # the node's victims may (the KEP's rule)
                        assert kept(world, victim_ns, held) >= mins[victim_ns], victim
        world.now += timedelta(seconds=1)
    assert len(deleted) == len(set(deleted))
