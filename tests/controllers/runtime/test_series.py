"""client-go's event series (`tools/events`), on an injected clock: the book alone (what to
create, what to patch, when), then the recorder writing it to the embedded API server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from apis.core import Event
from apis.placements import Placement
from controllers.runtime.events import EventRecorder
from controllers.runtime.series import FINISH, REFRESH, SeriesBook, reference_key
from tests.controllers.embedded.hub import hub, placement

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def book() -> SeriesBook[str]:
    return SeriesBook(T0)


def test_the_first_event_of_a_key_is_created() -> None:
    b = book()
    write = b.observe("k", T0, "event-1", "team", "p.1")
    assert write is not None and not write.patch
    assert (write.entry.event, write.entry.namespace, write.entry.name) == (
        "event-1",
        "team",
        "p.1",
    )


def test_the_second_is_a_patch_of_the_first_with_count_two() -> None:
    b = book()
    b.observe("k", T0, "event-1", "team", "p.1")
    write = b.observe("k", T0 + S, "event-2", "team", "p.2")
    assert write is not None and write.patch
    assert (write.entry.name, write.entry.event) == ("p.1", "event-1")  # the first one's Event
    assert (write.count, write.last_observed) == (2, T0 + S)


def test_later_ones_only_count() -> None:
    b = book()
    for i in range(5):
        b.observe("k", T0 + i * S, f"e{i}", "team", f"p.{i}")
    assert b.observe("k", T0 + 5 * S, "e5", "team", "p.5") is None
    entry = b.entry("k")
    assert entry is not None and (entry.count, entry.last_observed) == (6, T0 + 5 * S)


def test_other_keys_are_other_events() -> None:
    b = book()
    b.observe("a", T0, "a", "team", "p.a")
    write = b.observe("b", T0, "b", "team", "p.b")
    assert write is not None and not write.patch and len(b) == 2


def test_series_are_refreshed_every_30_minutes_while_they_go_on() -> None:
    b = book()
    b.observe("k", T0, "e", "team", "p.1")
    b.observe("k", T0 + S, "e", "team", "p.1")
    # Observed again every 5 minutes, the series never finishes; the refresh re-sends it.
    for minute in range(5, 30, 5):
        now = T0 + timedelta(minutes=minute)
        b.observe("k", now, "e", "team", "p.1")
        assert [w for w in b.due(now) if w.entry.name == "p.1"] == []
    at = T0 + REFRESH
    b.observe("k", at - S, "e", "team", "p.1")
    (write,) = b.due(at)
    assert write.patch and (write.count, write.last_observed) == (8, at - S)
    assert "k" in b  # a refresh does not end the series
    assert b.due(at + S) == []  # the next refresh is 30 minutes on


def test_a_series_is_finished_6_minutes_after_its_last_one() -> None:
    b = book()
    b.observe("k", T0, "e", "team", "p.1")
    b.observe("k", T0 + S, "e", "team", "p.1")
    b.observe("k", T0 + 2 * S, "e", "team", "p.1")
    assert b.due(T0 + FINISH - S) == []  # the finish pass runs every 6 minutes from the start
    (write,) = b.due(T0 + FINISH + 3 * S)
    assert write.patch and (write.count, write.last_observed) == (3, T0 + 2 * S)
    assert "k" not in b and len(b) == 0
    # Forgotten: the next one starts over with a create.
    again = b.observe("k", T0 + FINISH + 3 * S, "e2", "team", "p.2")
    assert again is not None and not again.patch


def test_a_series_observed_within_6_minutes_is_kept_by_the_finish_pass() -> None:
    b = book()
    b.observe("k", T0, "e", "team", "p.1")
    b.observe("k", T0 + timedelta(minutes=3), "e", "team", "p.1")
    assert b.due(T0 + FINISH) == []  # last seen 3 minutes before the pass
    (write,) = b.due(T0 + 2 * FINISH)
    assert write.patch and write.count == 2 and "k" not in b


def test_a_singleton_is_forgotten_after_6_minutes_without_a_write() -> None:
    b = book()
    b.observe("k", T0 + S, "e", "team", "p.1")
    assert b.due(T0 + FINISH) == [] and "k" in b  # 6 minutes from its time not yet passed
    assert b.due(T0 + 2 * FINISH) == [] and "k" not in b
    assert b.next_due == T0 + 3 * FINISH


def test_references_differ_by_resource_version() -> None:
    ref = {"apiVersion": "v1", "kind": "Pod", "namespace": "a", "name": "p", "uid": "u"}
    assert reference_key(ref | {"resourceVersion": "1"}) != reference_key(
        ref | {"resourceVersion": "2"}
    )
    assert reference_key(None) == ()


@pytest.mark.asyncio
async def test_repeated_identical_events_become_one_event_with_a_series_on_the_hub() -> None:
    now = [T0]
    outcomes: list[str] = []
    async with hub(namespaces=["team"]) as (server, gw):
        recorder = EventRecorder(
            gw,
            controller="placement-controller",
            instance="hub-1",
            wall=lambda: now[0],
            on_recorded=lambda _, outcome: outcomes.append(outcome),
        )
        p = await gw.create(placement("p", "team"))
        for i in range(10):
            now[0] = T0 + i * S
            recorder.record(p, None, "Normal", "ScoreUpdate", "ScoreUpdated", f"c1:{i}")
            await recorder.flush()
        (event,) = (await gw.list(Event)).items
        assert event.note == "c1:0"  # the note is not part of the key: the first one is kept
        assert event.series is not None and event.series.count == 2
        assert outcomes == ["created", "patched"] + ["counted"] * 8
        patches = sum(n for e, n in server.audit.items() if e.verb == "patch")
        assert patches == 1

        now[0] = T0 + FINISH + 10 * S  # the finish pass: one last patch with the full count
        recorder.tick()
        await recorder.flush()
        (event,) = (await gw.list(Event)).items
        assert event.series is not None
        assert (event.series.count, event.series.last_observed_time) == (10, T0 + 9 * S)
        assert len(recorder.book) == 0


@pytest.mark.asyncio
async def test_a_series_whose_event_was_deleted_is_created_with_its_count() -> None:
    now = [T0]
    async with hub(namespaces=["team"]) as (_, gw):
        recorder = EventRecorder(gw, controller="c", instance="i", wall=lambda: now[0])
        p = await gw.create(placement("p", "team"))
        recorder.record(p, None, "Warning", "Misconfigured", "Scheduling", "bad")
        await recorder.flush()
        (first,) = (await gw.list(Event)).items
        await gw.delete(Event, first.name, "team")
        now[0] = T0 + S
        recorder.record(p, None, "Warning", "Misconfigured", "Scheduling", "bad")
        await recorder.flush()
        (event,) = (await gw.list(Event)).items
        assert event.name == first.name
        assert event.series is not None and event.series.count == 2


@pytest.mark.asyncio
async def test_a_new_resource_version_of_the_object_starts_a_new_event() -> None:
    async with hub(namespaces=["team"]) as (_, gw):
        recorder = EventRecorder(gw, controller="c", instance="i", wall=lambda: T0)
        p = await gw.create(placement("p", "team"))
        recorder.record(p, None, "Normal", "ScoreUpdate", "ScoreUpdated", "a")
        p = await gw.merge_patch(Placement, "p", {"metadata": {"labels": {"x": "y"}}}, "team")
        recorder.record(p, None, "Normal", "ScoreUpdate", "ScoreUpdated", "b")
        await recorder.flush()
        events = (await gw.list(Event)).items
        assert sorted(e.note or "" for e in events) == ["a", "b"]
        assert all(e.series is None for e in events)
