"""The event recorder against the embedded API server: events.k8s.io Events named and filled as
client-go's recorder does, notes capped at 1024 bytes, and best effort (a failing server, too
many events in flight, no event loop) that never raises and never retries."""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

import pytest

from apis.core import Event
from apis.meta import ObjectMeta
from apis.placements import Placement, PlacementDecision
from controllers.embedded import EmbeddedApiServer
from controllers.kube.gateway import Gateway
from controllers.runtime.events import (
    MAX_NOTE_BYTES,
    EventRecorder,
    Reference,
    micro_time,
    object_reference,
    truncated_note,
)
from tests.controllers.embedded.hub import hub, placement

WALL = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


@asynccontextmanager
async def recording(
    max_pending: int = 1000,
) -> AsyncIterator[tuple[EmbeddedApiServer, Gateway, EventRecorder, Placement, list[str]]]:
    async with hub(namespaces=["team"]) as (server, gw):
        outcomes: list[str] = []
        recorder = EventRecorder(
            gw,
            controller="placement-controller",
            wall=lambda: WALL,
            instance="hub-1",
            on_recorded=lambda _, outcome: outcomes.append(outcome),
            max_pending=max_pending,
        )
        p = await gw.create(placement("p", "team"))
        yield server, gw, recorder, p, outcomes


async def stored(gw: Gateway) -> list[Event]:
    return sorted((await gw.list(Event)).items, key=lambda e: e.name)


@pytest.mark.asyncio
async def test_an_event_is_named_after_what_it_regards_in_its_namespace() -> None:
    async with recording() as (_, gw, recorder, p, _outcomes):
        recorder.record(p, None, "Normal", "DecisionCreate", "DecisionCreated", "hello")
        await recorder.flush()
        (event,) = await stored(gw)
        assert re.fullmatch(r"p\.[0-9a-f]{16}", event.name)
        assert event.namespace == "team"


@pytest.mark.asyncio
async def test_an_event_carries_time_reporter_reason_note_and_both_references() -> None:
    async with recording() as (_, gw, recorder, p, _outcomes):
        pd = await gw.create(PlacementDecision(metadata=ObjectMeta(name="pd", namespace="team")))
        recorder.record(p, pd, "Warning", "DecisionUpdate", "DecisionUpdated", "moved")
        await recorder.flush()
        (event,) = await stored(gw)
        assert (event.event_time, event.reporting_controller, event.reporting_instance) == (
            WALL,
            "placement-controller",
            "hub-1",
        )
        assert (event.type, event.reason, event.action, event.note) == (
            "Warning",
            "DecisionUpdate",
            "DecisionUpdated",
            "moved",
        )
        assert event.regarding is not None
        assert event.regarding.to_wire() == {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "name": "p",
            "namespace": "team",
            "uid": p.metadata.uid,
            "resourceVersion": p.metadata.resource_version,
        }
        assert event.related is not None
        assert (event.related.kind, event.related.name, event.related.uid) == (
            "PlacementDecision",
            "pd",
            pd.metadata.uid,
        )


@pytest.mark.asyncio
async def test_events_recorded_under_a_frozen_clock_still_get_distinct_names() -> None:
    async with recording() as (_, gw, recorder, p, outcomes):
        # Three reasons: not isomorphic, so three Events (the same reason would make a series).
        for i, reason in enumerate(["DecisionCreate", "DecisionUpdate", "ScoreUpdate"]):
            recorder.record(p, None, "Normal", reason, "Scheduled", f"n{i}")
        await recorder.flush()
        events = await stored(gw)
        assert [e.note for e in events] == ["n0", "n1", "n2"]  # names sort in record order
        assert outcomes == ["created"] * 3


@pytest.mark.parametrize(
    ("note", "chars"),
    [
        pytest.param("x" * 2000, 1024, id="ascii"),
        pytest.param("é" * 1000, 512, id="two-byte-characters"),
        pytest.param("x" + "€" * 400, 342, id="never-half-a-character"),
        pytest.param("short", 5, id="short-notes-stay"),
    ],
)
@pytest.mark.asyncio
async def test_notes_are_capped_at_1024_bytes(note: str, chars: int) -> None:
    async with recording() as (_, gw, recorder, p, _outcomes):
        recorder.record(p, None, "Normal", "ScoreUpdate", "ScoreUpdated", note)
        await recorder.flush()
        (event,) = await stored(gw)
        assert event.note == note[:chars]
        assert len(truncated_note(note).encode()) <= MAX_NOTE_BYTES


@pytest.mark.asyncio
async def test_a_failing_server_is_logged_never_raised_and_never_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with recording() as (server, gw, recorder, p, outcomes):
        server.faults.fail_next("create", 500)
        with caplog.at_level(logging.WARNING, logger="controllers.runtime.events"):
            recorder.record(p, None, "Normal", "DecisionCreate", "DecisionCreated", "lost")
            await recorder.flush()  # concurrent creates would reach the server in any order
            recorder.record(p, None, "Normal", "DecisionUpdate", "DecisionUpdated", "kept")
            await recorder.flush()
        assert [e.note for e in await stored(gw)] == ["kept"]
        assert outcomes == ["failed", "created"]
        assert any("not recorded" in r.getMessage() for r in caplog.records)


@pytest.mark.asyncio
async def test_events_beyond_max_pending_are_dropped_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with recording(max_pending=2) as (_, gw, recorder, p, outcomes):
        with caplog.at_level(logging.WARNING, logger="controllers.runtime.events"):
            # No await in between: none of the creates has started, so all five are in flight.
            for i in range(5):  # five reasons: five creates, no series
                recorder.record(p, None, "Normal", f"Reason{i}", "ScoreUpdated", f"n{i}")
            assert recorder.pending == 2
            await recorder.flush()
        assert [e.note for e in await stored(gw)] == ["n0", "n1"]
        assert (recorder.dropped, outcomes.count("dropped"), outcomes.count("created")) == (3, 3, 2)
        assert [r.getMessage().startswith("dropping event") for r in caplog.records] == [True]


def test_an_event_recorded_outside_an_event_loop_is_dropped() -> None:
    outcomes: list[str] = []
    recorder = EventRecorder(
        cast(Gateway, object()),
        controller="placement-controller",
        on_recorded=lambda _, outcome: outcomes.append(outcome),
    )
    recorder.record(placement("p"), None, "Normal", "DecisionCreate", "DecisionCreated", "x")
    assert (outcomes, recorder.pending) == (["dropped"], 0)


def test_the_reporting_instance_defaults_to_the_host_name() -> None:
    recorder = EventRecorder(cast(Gateway, object()), controller="placement-controller")
    assert recorder.instance == socket.gethostname()[:128]


@pytest.mark.asyncio
@pytest.mark.parametrize("related", [False, True])
async def test_the_body_posted_is_the_event_models_wire_form(related: bool) -> None:
    # The recorder builds event bodies without the Event model; what it posts must be what the
    # model would have sent: same keys in the same order, nulls included.
    bodies: list[dict[str, object]] = []

    class Posting(Gateway):
        async def _send(self, method: str, path: str, body: Any, content_type: str = "") -> None:
            bodies.append(body)
            await super()._send(method, path, body)

    async with recording() as (_, gw, _recorder, p, _outcomes):
        posting = Posting.__new__(Posting)
        vars(posting).update(vars(gw))
        recorder = EventRecorder(
            posting, controller="placement-controller", wall=lambda: WALL, instance="hub-1"
        )
        pd = await gw.create(PlacementDecision(metadata=ObjectMeta(name="pd", namespace="team")))
        recorder.record(p, pd if related else None, "Warning", "R", "A", "moved")
        await recorder.flush()
        (body,) = bodies
        model = Event.model_validate(body)
        assert list(body.items()) == list(model.to_wire().items())
        assert model.event_time == WALL
        assert model.regarding == object_reference(p)
        assert model.related == (object_reference(pd) if related else None)
        assert (model.type, model.reason, model.action, model.note) == (
            "Warning",
            "R",
            "A",
            "moved",
        )
        assert [e.name for e in await stored(gw)] == [model.name]


@pytest.mark.asyncio
async def test_a_reference_names_the_related_object_as_its_model_would() -> None:
    # A related object given as a Reference (no model at hand) is the same reference: the
    # same body, and the same isomorphic key (the second event makes a series of the first).
    async with recording() as (_, gw, recorder, p, outcomes):
        pd = await gw.create(PlacementDecision(metadata=ObjectMeta(name="pd", namespace="team")))
        meta = pd.metadata
        ref = Reference(
            PlacementDecision.api_version_string(),
            PlacementDecision.KIND,
            meta.name,
            meta.namespace,
            meta.uid,
            meta.resource_version,
        )
        recorder.record(p, ref, "Normal", "DecisionCreate", "DecisionCreated", "made")
        await recorder.flush()
        recorder.record(p, pd, "Normal", "DecisionCreate", "DecisionCreated", "made")
        await recorder.flush()
        assert outcomes == ["created", "patched"]
        (event,) = await stored(gw)
        assert event.related == object_reference(pd)


@pytest.mark.parametrize(
    "when",
    [
        datetime(2026, 11, 28, 0, 41, 7, 123456, tzinfo=UTC),
        datetime(2026, 11, 28, 0, 41, 7, tzinfo=UTC),  # no microseconds: still six digits
        datetime(2026, 11, 28, 1, 41, 7, 5, tzinfo=timezone(timedelta(hours=1))),
        datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=-5))),
    ],
)
def test_micro_time_is_the_utc_strftime(when: datetime) -> None:
    assert micro_time(when) == when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
