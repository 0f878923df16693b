"""The registry of writes in flight: a watch event carrying exactly the version one of our
writes produced re-queues nothing, even when it arrives before the write's response; any other
event (someone else's write, or one that meets a failed write) re-queues as it always did."""

from __future__ import annotations

from controllers.runtime.echoes import GONE, Echoes


def registry() -> tuple[Echoes, list[str]]:
    queued: list[str] = []
    return Echoes(queued.append), queued


def test_an_event_with_no_write_in_flight_is_not_held() -> None:
    echoes, queued = registry()
    assert not echoes.hold("Placement", "ns/p", "5", {"ns/p"})
    assert queued == []


def test_the_echo_of_a_write_requeues_nothing_even_before_its_response() -> None:
    echoes, queued = registry()
    echoes.expect("Placement", "ns/p")
    assert echoes.hold("Placement", "ns/p", "7", {"ns/p"})  # the echo, before the response
    echoes.settle("Placement", "ns/p", "7")
    assert queued == []
    assert len(echoes) == 0


def test_an_event_of_another_version_requeues_once_the_write_settles() -> None:
    echoes, queued = registry()
    echoes.expect("Placement", "ns/p")
    assert echoes.hold("Placement", "ns/p", "7", {"ns/p"})
    assert echoes.hold("Placement", "ns/p", "9", {"ns/p"})  # someone else's, after ours
    assert queued == []
    echoes.settle("Placement", "ns/p", "7")
    assert queued == ["ns/p"]


def test_after_a_failed_write_every_held_event_is_news() -> None:
    echoes, queued = registry()
    echoes.expect("PlacementDecision", "ns/p-decision-1")
    echoes.hold("PlacementDecision", "ns/p-decision-1", "4", {"ns/p"})
    echoes.settle("PlacementDecision", "ns/p-decision-1", None)
    assert queued == ["ns/p"]


def test_held_events_wait_for_the_last_write_in_flight_and_match_any_of_them() -> None:
    echoes, queued = registry()
    echoes.expect("PlacementDecision", "ns/d")
    echoes.expect("PlacementDecision", "ns/d")
    echoes.hold("PlacementDecision", "ns/d", "3", {"ns/p"})
    echoes.settle("PlacementDecision", "ns/d", "3")
    echoes.hold("PlacementDecision", "ns/d", GONE, {"ns/p"})
    assert queued == []
    echoes.settle("PlacementDecision", "ns/d", GONE)
    assert queued == []


def test_objects_of_different_kinds_with_the_same_key_are_apart() -> None:
    echoes, _ = registry()
    echoes.expect("PlacementDecision", "ns/p")
    assert not echoes.hold("Placement", "ns/p", "3", {"ns/p"})
