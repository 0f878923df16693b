"""The pod scheduler's events as client-go's `tools/events` broadcaster sends them, against the
embedded API server on an injected clock: a pod retried while nothing changes reports
FailedScheduling once, then a series count; a new resourceVersion is a new Event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apis.core import Event
from controllers.addons.emitter import EventEmitter
from controllers.addons.gateway import PodGateway
from controllers.embedded import EmbeddedApiServer
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.runtime.series import FINISH, REFRESH
from tests.controllers.embedded.hub import ensure_namespaces

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)
POD = {"apiVersion": "v1", "kind": "Pod", "namespace": "team", "name": "web", "uid": "u1"}


@asynccontextmanager
async def emitting(
    now: list[datetime],
) -> AsyncIterator[tuple[EmbeddedApiServer, PodGateway, EventEmitter, list[str]]]:
    server = EmbeddedApiServer()
    await server.start()
    gateway = PodGateway(await new_api_client(ClusterAccess(url=server.url)))
    outcomes: list[str] = []
    try:
        await ensure_namespaces(gateway, ["team"])
        emitter = EventEmitter(
            gateway,
            controller="ocm-pod-scheduler",
            instance="s-1",
            wall=lambda: now[0],
            on_recorded=lambda _, outcome: outcomes.append(outcome),
        )
        yield server, gateway, emitter, outcomes
    finally:
        await gateway.close()
        await server.stop()


def failed(emitter: EventEmitter, rv: str, note: str) -> None:
    regarding = POD | {"resourceVersion": rv}
    emitter.emit(regarding, None, "Warning", "FailedScheduling", "Scheduling", note)


@pytest.mark.asyncio
async def test_a_pod_failing_again_and_again_is_one_event_with_a_series() -> None:
    now = [T0]
    async with emitting(now) as (server, gw, emitter, outcomes):
        for i in range(20):
            now[0] = T0 + i * S
            failed(emitter, "7", "0/3 nodes are available")
            await emitter.flush()
        (event,) = (await gw.list(Event, "team")).items
        assert event.series is not None and event.series.count == 2
        assert outcomes == ["created", "patched"] + ["counted"] * 18
        assert (emitter.created, emitter.patched, emitter.folded) == (1, 1, 18)
        writes = {
            e.verb: n
            for e, n in server.audit.items()
            if e.resource == "events" and e.verb in {"create", "patch", "update"}
        }
        assert writes == {"create": 1, "patch": 1}

        now[0] = T0 + REFRESH  # still going: the refresh re-sends the count
        failed(emitter, "7", "0/3 nodes are available")
        emitter.tick()
        await emitter.flush()
        (event,) = (await gw.list(Event, "team")).items
        assert event.series is not None
        assert (event.series.count, event.series.last_observed_time) == (21, T0 + REFRESH)

        now[0] = T0 + REFRESH + FINISH + S  # quiet for 6 minutes: finished and forgotten
        emitter.tick()
        await emitter.flush()
        assert len(emitter.book) == 0
        failed(emitter, "7", "0/3 nodes are available")
        await emitter.flush()
        assert len((await gw.list(Event, "team")).items) == 2  # a new Event starts over


@pytest.mark.asyncio
async def test_the_pod_at_a_new_resource_version_is_a_new_event() -> None:
    now = [T0]
    async with emitting(now) as (_, gw, emitter, outcomes):
        failed(emitter, "7", "first")
        failed(emitter, "8", "second")
        failed(emitter, "8", "second again")
        await emitter.flush()
        events = sorted((await gw.list(Event, "team")).items, key=lambda e: e.note or "")
        assert [e.note for e in events] == ["first", "second"]
        assert [e.series.count if e.series else 0 for e in events] == [0, 2]
        assert sorted(outcomes) == ["created", "created", "patched"]


@pytest.mark.asyncio
async def test_a_burst_is_one_event_with_its_series_whichever_write_lands_first() -> None:
    now = [T0]
    async with emitting(now) as (_, gw, emitter, outcomes):
        for _ in range(3):  # no await: the create and the series patch go out together
            failed(emitter, "7", "0/3 nodes are available")
        await emitter.flush()
        (event,) = (await gw.list(Event, "team")).items
        assert event.series is not None and event.series.count == 2
        assert outcomes[0] == "counted"  # reported as it is emitted; the writes end later
        # The patch finds no Event when it overtakes the create: it creates it with its series,
        # and the create then finds it there (quietly, as client-go's AlreadyExists).
        assert sorted(outcomes[1:]) in (["created", "patched"], ["exists", "patched"])


class _Counting(PodGateway):
    """A gateway that holds each event create a moment and counts how many are in flight."""

    def __init__(self) -> None:
        self.flying = 0
        self.most = 0
        self.sent = 0

    async def create_raw(self, cls: type[Any], namespace: str | None, body: bytes) -> None:
        self.flying += 1
        self.most = max(self.most, self.flying)
        await asyncio.sleep(0.01)
        self.flying -= 1
        self.sent += 1


@pytest.mark.asyncio
async def test_events_take_one_writer_while_the_bindings_fill_the_slots() -> None:
    busy = [True]
    gateway = _Counting()
    emitter = EventEmitter(gateway, controller="s", instance="s-1", yield_to=lambda: busy[0])
    for i in range(12):
        pod = POD | {"name": f"p{i}", "uid": f"u{i}"}
        emitter.emit(pod, None, "Normal", "Scheduled", "Binding", "bound")
    await asyncio.sleep(0.1)
    assert gateway.most == 1 and 0 < gateway.sent < 12  # one at a time, not stalled
    busy[0] = False  # the bindings left room: every worker writes again
    for i in range(12, 24):
        pod = POD | {"name": f"p{i}", "uid": f"u{i}"}
        emitter.emit(pod, None, "Normal", "Scheduled", "Binding", "bound")
    await emitter.flush()
    assert gateway.sent == 24 and gateway.most == emitter.workers
