"""The scheduling queue on its own: order, backoff, moves, flush, gates, no duplicates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from apis.core import Pod
from placement.pods.backend.queue import SchedulingQueue, backoff_duration
from placement.pods.framework.interface import PodInfo

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def info(name: str, priority: int = 0, **spec: Any) -> PodInfo:
    pod = Pod.model_validate(
        {"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": [], **spec}}
    )
    return PodInfo.of(pod, priority=priority)


def sort_key(pod: PodInfo, queued_at: datetime) -> tuple[int, datetime, str]:
    return (-pod.priority, queued_at, pod.key)


def queue(**options: Any) -> SchedulingQueue:
    return SchedulingQueue(sort_key, **options)


def drain(q: SchedulingQueue) -> list[str]:
    out = []
    while (item := q.pop()) is not None:
        out.append(item.info.name)
    return out


def test_active_order_is_the_sort_key() -> None:
    q = queue()
    q.add(info("late-low", 1), T0 + timedelta(seconds=2))
    q.add(info("early-low", 1), T0)
    q.add(info("high", 9), T0 + timedelta(seconds=5))
    assert drain(q) == ["high", "early-low", "late-low"]
    assert q.sizes() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_no_duplicates_and_removal() -> None:
    q = queue()
    q.add(info("a"), T0)
    q.add(info("a"), T0)
    q.add(info("b"), T0)
    q.remove("ns/b")
    assert q.sizes()["active"] == 1
    assert drain(q) == ["a"]
    assert q.remove("ns/zzz") is None


def test_backoff_durations() -> None:
    one, ten = timedelta(seconds=1), timedelta(seconds=10)
    assert [backoff_duration(n, one, ten) for n in (1, 2, 5)] == [one, 2 * one, ten]
    assert backoff_duration(3, timedelta(seconds=2), timedelta(seconds=60)) == timedelta(seconds=8)


def test_error_goes_to_backoff_and_returns_when_it_expires() -> None:
    q = queue(backoff_initial=timedelta(seconds=2), backoff_max=timedelta(seconds=5))
    q.add(info("a"), T0)
    a = q.pop()
    assert a is not None
    q.requeue(a.info, T0, unschedulable=False)
    assert q.sizes()["backoff"] == 1 and q.next_wake() == T0 + timedelta(seconds=2)
    q.flush(T0 + timedelta(seconds=1))
    assert q.pop() is None
    q.flush(T0 + timedelta(seconds=2))
    again = q.pop()
    assert again is not None and again.attempts == 2
    q.requeue(again.info, T0 + timedelta(seconds=2), unschedulable=False)
    assert q.next_wake() == T0 + timedelta(seconds=6)  # 2 s doubled


def test_unschedulable_moves_to_backoff_or_active_by_backoff() -> None:
    q = queue()
    for name in ("a", "b"):
        q.add(info(name), T0)
    for item in (q.pop(), q.pop()):
        assert item is not None
        q.requeue(item.info, T0, unschedulable=True, rejected_by=("Fit",))
    assert q.sizes()["unschedulable"] == 2
    assert q.move_unschedulable(T0 + timedelta(milliseconds=500)) == 2
    assert q.sizes()["backoff"] == 2
    q.flush(T0 + timedelta(seconds=1))
    assert drain(q) == ["a", "b"]


def test_moves_can_be_limited_to_the_rejecting_plugin() -> None:
    q = queue()
    for name in ("a", "b"):
        q.add(info(name), T0)
    first, second = q.pop(), q.pop()
    assert first is not None and second is not None
    q.requeue(first.info, T0, unschedulable=True, rejected_by=("Gang",))
    q.requeue(second.info, T0, unschedulable=True, rejected_by=("Fit",))
    moved = q.move_unschedulable(T0 + timedelta(seconds=30), lambda p: "Gang" in p.rejected_by)
    assert moved == 1 and drain(q) == ["a"]


def test_unschedulable_pods_are_flushed_after_the_interval() -> None:
    q = queue(unschedulable_flush=timedelta(minutes=5))
    q.add(info("a"), T0)
    a = q.pop()
    assert a is not None
    q.requeue(a.info, T0, unschedulable=True)
    assert q.next_wake() == T0 + timedelta(minutes=5)
    q.flush(T0 + timedelta(minutes=4))
    assert q.sizes()["unschedulable"] == 1
    q.flush(T0 + timedelta(minutes=5))
    assert drain(q) == ["a"]


def test_gated_pods_are_held_until_the_gates_go() -> None:
    q = queue()
    q.add(info("g", schedulingGates=[{"name": "x"}]), T0)
    assert q.sizes()["gated"] == 1 and q.pop() is None
    q.update(info("g"), T0)
    assert q.sizes() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert drain(q) == ["g"]


def test_an_update_with_a_new_priority_reorders_active() -> None:
    q = queue()
    q.add(info("a", 1), T0)
    q.add(info("b", 2), T0)
    q.update(info("a", 5), T0)
    assert drain(q) == ["a", "b"]


def test_activation_respects_backoff() -> None:
    q = queue()
    for name in ("a", "b", "c"):
        q.add(info(name), T0)
    a, b, c = q.pop(), q.pop(), q.pop()
    assert a is not None and b is not None and c is not None
    q.requeue(a.info, T0, unschedulable=True, rejected_by=("Gang",))  # backoff until T0 + 1 s
    q.requeue(b.info, T0, unschedulable=False)  # in backoff until T0 + 1 s
    q.requeue(c.info, T0, unschedulable=True, rejected_by=("Gang",))
    # Activated while backing off: to backoff (a) or left there (b), not to active.
    assert not q.activate("ns/a", T0 + timedelta(milliseconds=500))
    assert not q.activate("ns/b", T0 + timedelta(milliseconds=500))
    assert q.sizes() == {"active": 0, "backoff": 2, "unschedulable": 1, "gated": 0}
    assert q.pop() is None
    assert q.next_wake() == T0 + timedelta(seconds=1)
    # Once the backoff is over, activation moves to active at once (c), and the backoff queue
    # releases the others at their time.
    assert q.activate("ns/c", T0 + timedelta(seconds=1))
    q.flush(T0 + timedelta(seconds=1))
    assert drain(q) == ["a", "b", "c"]
    assert not q.activate("ns/a", T0 + timedelta(seconds=1))  # in flight: nothing to do
    assert not q.activate("ns/unknown", T0)


def test_activation_cannot_make_a_pod_try_more_than_once_per_backoff() -> None:
    """A pod activated again and again at one instant (a gang's members activating each other)
    is tried once, then once per backoff period."""
    q = queue()
    q.add(info("a"), T0)
    tries: list[datetime] = []
    now = T0
    while now < T0 + timedelta(seconds=60):
        q.flush(now)
        for _ in range(100):
            q.activate("ns/a", now)
            item = q.pop()
            if item is None:
                break
            tries.append(now)
            q.requeue(item.info, now, unschedulable=True, rejected_by=("Gang",))
        now += timedelta(milliseconds=250)
    gaps = [(later - earlier).total_seconds() for earlier, later in pairwise(tries)]
    assert gaps == [1, 2, 4, 8, 10, 10, 10, 10]  # 1 s doubled per attempt, at most 10 s


# --- popping from backoff when the active queue is empty (kube's SchedulerPopFromBackoffQ) ----


def failed_then_moved(q: SchedulingQueue, name: str, failed: datetime, moved: datetime) -> None:
    """`name` tried and found unschedulable at `failed`, then moved by an event at `moved`
    (its backoff of 1 s still running: it goes to backoff)."""
    q.add(info(name), failed)
    assert q.pop() is not None
    q.requeue(info(name), failed, unschedulable=True, rejected_by=("NodeResourcesFit",))
    q.move_unschedulable(moved)


def test_an_idle_queue_pops_the_backoff_pod_whose_backoff_ends_first() -> None:
    """Ends in an earlier second: first, whatever the sort key says."""
    q = queue(pop_from_backoff=True)
    failed_then_moved(q, "a-later", T0 + timedelta(seconds=1.2), T0 + timedelta(seconds=1.4))
    failed_then_moved(q, "first", T0 + timedelta(seconds=0.5), T0 + timedelta(seconds=1.4))
    now = T0 + timedelta(seconds=1.4)  # the backoffs run until 1.5 s and 2.2 s
    assert q.sizes()["backoff"] == 2
    first = q.pop(now)
    assert first is not None and first.info.name == "first" and first.attempts == 2
    assert [p.info.name for p in (q.pop(now), q.pop(now)) if p is not None] == ["a-later"]
    assert q.sizes() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_backoffs_ending_in_one_second_pop_in_the_queue_sort_order() -> None:
    q = queue(pop_from_backoff=True)
    failed_then_moved(q, "low", T0, T0 + timedelta(seconds=0.5))
    q.add(info("high", 9), T0 + timedelta(seconds=0.3))
    assert q.pop() is not None
    q.requeue(info("high", 9), T0 + timedelta(seconds=0.3), unschedulable=True)
    q.move_unschedulable(T0 + timedelta(seconds=0.5))
    now = T0 + timedelta(seconds=0.5)  # backoffs until 1 s (low) and 1.3 s (high): one second
    assert [q.pop(now).info.name, q.pop(now).info.name] == ["high", "low"]  # type: ignore[union-attr]


def test_active_pods_go_before_backoff_pods() -> None:
    q = queue(pop_from_backoff=True)
    failed_then_moved(q, "waiting", T0, T0 + timedelta(seconds=0.5))
    q.add(info("new"), T0 + timedelta(seconds=0.5))
    now = T0 + timedelta(seconds=0.5)
    assert [q.pop(now).info.name, q.pop(now).info.name] == ["new", "waiting"]  # type: ignore[union-attr]


def test_no_early_pop_without_a_clock_or_when_turned_off() -> None:
    q = queue()  # on by default, as in kube >= 1.33
    failed_then_moved(q, "p", T0, T0 + timedelta(seconds=0.5))
    assert q.pop() is None  # no `now`: active only
    assert q.pop(T0 + timedelta(seconds=0.5)) is not None
    off = queue(pop_from_backoff=False)  # kube <= 1.32
    failed_then_moved(off, "p", T0, T0 + timedelta(seconds=0.5))
    assert off.pop(T0 + timedelta(seconds=0.5)) is None
    off.flush(T0 + timedelta(seconds=1))
    assert off.pop(T0 + timedelta(seconds=1)) is not None  # after its backoff, as before


def test_errors_and_failures_of_this_instant_wait_their_backoff_out() -> None:
    q = queue(pop_from_backoff=True)
    q.add(info("error"), T0)
    assert q.pop() is not None
    q.requeue(info("error"), T0, unschedulable=False)  # an error: straight to backoff
    now = T0 + timedelta(seconds=0.5)
    failed_then_moved(q, "just-now", now, now)  # failed and moved at this very instant
    assert q.sizes()["backoff"] == 2
    assert q.pop(now) is None
    assert q.sizes()["backoff"] == 2  # both still there, in order
    later = now + timedelta(seconds=0.1)
    popped = q.pop(later)
    assert popped is not None and popped.info.name == "just-now"  # the error still waits
    q.flush(T0 + timedelta(seconds=1))
    popped = q.pop(T0 + timedelta(seconds=1))
    assert popped is not None and popped.info.name == "error"


def test_the_early_order_does_not_keep_the_pods_that_left_backoff() -> None:
    q = queue(pop_from_backoff=True)
    for i in range(200):  # each through backoff, to active by the flush, then bound (gone)
        start = T0 + timedelta(seconds=10 * i)
        failed_then_moved(q, f"p{i}", start, start + timedelta(seconds=0.5))
        assert q.sizes()["backoff"] == 1
        q.flush(start + timedelta(seconds=1))
        popped = q.pop()
        assert popped is not None and popped.info.name == f"p{i}"
        q.remove(popped.info.key)
    assert q.sizes() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert len(q._early) <= 65  # stale entries pruned, not piled up


def unschedulable(q: SchedulingQueue, name: str, at: datetime, *plugins: str) -> None:
    q.add(info(name), at)
    assert q.pop() is not None
    q.requeue(info(name), at, unschedulable=True, rejected_by=plugins)


def test_an_event_moves_only_the_pods_a_listening_plugin_rejected() -> None:
    """kube's requeueing by plugin: a pod rejected only by plugins deaf to the event stays; one
    that a listening plugin also rejected, or that no plugin named, moves."""
    q = queue()
    unschedulable(q, "gang-only", T0, "Coscheduling")
    unschedulable(q, "gang-and-fit", T0, "Coscheduling", "NodeResourcesFit")
    unschedulable(q, "fit", T0, "NodeResourcesFit")
    unschedulable(q, "nobody", T0)
    moved = q.move_unschedulable(T0 + timedelta(seconds=5), deaf=frozenset({"Coscheduling"}))
    assert moved == 3
    assert [p.info.name for p in q.pods("unschedulable")] == ["gang-only"]
    later = T0 + timedelta(seconds=5)
    assert q.move_rejected_by(later, "Coscheduling", frozenset({"ns/another-gang"})) == 0
    assert q.move_rejected_by(later, "Coscheduling", frozenset({"ns/gang-only"})) == 1
    assert q.sizes()["unschedulable"] == 0


def test_a_held_pod_waits_in_backoff_until_its_refusal_lapses_even_popped_early() -> None:
    q = queue()
    unschedulable(q, "member", T0, "Coscheduling")
    q.hold_until("ns/member", T0 + timedelta(seconds=5), T0)
    assert q.sizes()["backoff"] == 1
    assert q.next_wake() == T0 + timedelta(seconds=5)
    q.flush(T0 + timedelta(seconds=2))  # its own 1 s backoff is over, the hold is not
    assert q.pop(T0 + timedelta(seconds=2)) is None
    q.flush(T0 + timedelta(seconds=5))
    popped = q.pop(T0 + timedelta(seconds=5))
    assert popped is not None and popped.info.name == "member"
    # A new failure clears the hold; holding a pod that is not unschedulable does nothing.
    q.requeue(info("member"), T0 + timedelta(seconds=5), unschedulable=True)
    assert q.get("ns/member").not_before is None  # type: ignore[union-attr]
    q.hold_until("ns/member", T0 + timedelta(seconds=4), T0 + timedelta(seconds=5))  # past
    assert q.sizes()["unschedulable"] == 1


def test_an_activated_sibling_is_popped_early_before_other_backoff_pods() -> None:
    """kube's activation puts a pod in the active queue: ours, still in its backoff, comes
    first among the pods taken early, though another's backoff ends sooner."""
    q = queue()
    failed_then_moved(q, "other", T0, T0 + timedelta(seconds=0.1))  # until T0 + 1 s
    unschedulable(q, "sibling", T0 + timedelta(seconds=0.5), "Coscheduling")  # until 1.5 s
    now = T0 + timedelta(seconds=0.8)
    assert not q.activate("ns/sibling", now)  # still backing off
    assert [q.pop(now).info.name, q.pop(now).info.name] == ["sibling", "other"]  # type: ignore[union-attr]
