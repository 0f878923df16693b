"""The Event bodies the scheduler's emitter writes are put together from pre-encoded parts
(`EventEmitter._body`): byte for byte what json.dumps writes for the Event as a document."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from controllers.addons.emitter import EventEmitter, _Kept
from controllers.runtime.series import Entry, reference_key

POD = {"apiVersion": "v1", "kind": "Pod", "namespace": "team", "name": "web", "uid": "u1"}
NODE = {"apiVersion": "v1", "kind": "Node", "name": "n1"}


def _emitter(controller: str = "ocm-pod-scheduler", instance: str = "s-1") -> EventEmitter:
    return EventEmitter(object(), controller=controller, instance=instance)  # type: ignore[arg-type]


def _entry(at: datetime, related: dict[str, Any] | None = None, **fields: str) -> Entry[_Kept]:
    values = {"type": "Normal", "reason": "Scheduled", "action": "Binding", "note": "assigned"}
    values |= fields
    kept = _Kept(
        reference_key(POD | {"resourceVersion": "7"}),
        reference_key(related) if related is not None else None,
        values["type"],
        values["reason"],
        values["action"],
        values["note"],
        at,
    )
    return Entry(kept, "team", "web.17f0a1b2c3d4e5f6", at)


AT = datetime(2026, 11, 28, 0, 47, 29, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("entry", "controller"),
    [
        pytest.param(_entry(AT), "ocm-pod-scheduler", id="plain"),
        pytest.param(_entry(AT, NODE), "ocm-pod-scheduler", id="related"),
        pytest.param(_entry(AT.replace(microsecond=0)), "c", id="whole-second"),
        pytest.param(
            _entry(AT, note='0/3 nodes: "é" \\ \n\t\u2028 ✓ \U0001f600', reason="Fäiled"),
            'a "quoted" \\ controller ✓',
            id="escapes",
        ),
        pytest.param(_entry(AT.astimezone(timezone(timedelta(hours=-5)))), "c", id="another-zone"),
        pytest.param(_entry(datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC)), "c", id="year-999"),
    ],
)
def test_the_body_is_what_json_dumps_writes(entry: Entry[_Kept], controller: str) -> None:
    emitter = _emitter(controller, instance="host ✓")
    body = emitter._body(entry)
    assert body == json.dumps(emitter._doc(entry)).encode()
    doc = json.loads(body)
    assert doc["regarding"] == POD | {"resourceVersion": "7"}
    assert doc["reportingController"] == controller and doc["note"] == entry.event.note
    assert (doc.get("related") is None) == (entry.event.related is None)


def test_the_event_time_is_micro_time() -> None:
    from controllers.runtime.events import micro_time

    for at in (AT, AT.replace(microsecond=0), AT.astimezone(timezone(timedelta(hours=9)))):
        doc = json.loads(_emitter()._body(_entry(at)))
        assert doc["eventTime"] == micro_time(at)
    assert json.loads(_emitter()._body(_entry(AT)))["eventTime"] == "2026-11-28T00:47:29.123456Z"


def test_a_series_body_carries_its_series() -> None:
    series = {"count": 2, "lastObservedTime": "2026-11-28T00:47:30.000000Z"}
    body = _emitter()._body(_entry(AT), series)
    assert json.loads(body)["series"] == series
    assert body == json.dumps(_emitter()._doc(_entry(AT), series)).encode()
