"""One model per version of an object both written and watched: a write's answer and the watch
event echoing it (same kind, key and resourceVersion) share one model, whichever is read first;
events of other versions, or of objects no write of ours is touching, are read as always."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from apis.cluster import ManagedCluster
from controllers.kube.answers import Answers
from controllers.kube.gateway import Gateway, WatchEvent
from controllers.runtime.echoes import EchoedGateway, Echoes
from placement.testing import cluster
from tests.controllers.embedded.hub import hub


def test_an_answer_is_taken_once_at_exactly_its_version() -> None:
    answers = Answers()
    answers.put("Placement", "ns/p", "7", "model")
    assert answers.take("Placement", "ns/p", "6") is None
    assert answers.take("PlacementDecision", "ns/p", "7") is None
    assert answers.take("Placement", "ns/p", "7") == "model"
    assert answers.take("Placement", "ns/p", "7") is None
    assert answers.reused == 1


def test_answers_nobody_takes_are_dropped_oldest_first() -> None:
    answers = Answers(limit=2)
    for version in ("1", "2", "3"):
        answers.put("Placement", "ns/p", version, version)
    assert len(answers) == 2
    assert answers.take("Placement", "ns/p", "1") is None
    assert answers.take("Placement", "ns/p", "3") == "3"


def test_writes_in_flight_are_counted_per_object() -> None:
    answers = Answers()
    answers.begin("Placement", "ns/p")
    answers.begin("Placement", "ns/p")
    answers.end("Placement", "ns/p")
    assert answers.writing("Placement", "ns/p")
    assert not answers.writing("Placement", "ns/q")
    answers.end("Placement", "ns/p")
    assert not answers.writing("Placement", "ns/p")


async def _events(gw: Gateway, rv: str, n: int) -> list[WatchEvent[ManagedCluster]]:
    out: list[WatchEvent[ManagedCluster]] = []
    async for event in gw.watch(ManagedCluster, rv, bookmarks=False):
        out.append(event)
        if len(out) == n:
            break
    return out


@asynccontextmanager
async def gateways() -> AsyncIterator[tuple[Gateway, EchoedGateway, Gateway]]:
    """The watching gateway (keeping answers), a writer sharing them, and a gateway on the
    same connection that keeps none (someone else's writes)."""
    async with hub() as (_, gw):
        gw.answers = Answers()
        yield gw, EchoedGateway(gw, Echoes(lambda _: None)), Gateway(gw._client)


@pytest.mark.asyncio
async def test_the_echo_of_a_write_is_the_answers_model() -> None:
    async with gateways() as (gw, writer, _):
        start = (await gw.list(ManagedCluster)).resource_version
        created = await writer.create(cluster("c1", labels={"a": "1"}))
        labels = {"metadata": {"labels": {"a": "2"}}}
        patched = await writer.merge_patch(ManagedCluster, "c1", labels)
        added, modified = await _events(gw, start, 2)
        assert added.object is created and modified.object is patched
        assert gw.answers is not None and gw.answers.reused == 2 and len(gw.answers) == 0


@pytest.mark.asyncio
async def test_an_echo_read_before_its_answer_lends_the_answer_its_model() -> None:
    async with gateways() as (gw, _, other):
        answers = gw.answers
        assert answers is not None
        start = (await gw.list(ManagedCluster)).resource_version
        answers.begin(ManagedCluster.KIND, "c1")  # our write is in flight ...
        sent = await other.create(cluster("c1"))  # ... its answer not read yet
        (added,) = await _events(gw, start, 1)  # the echo comes first
        assert added.object is not sent and added.object == sent
        answer = gw._answer(ManagedCluster, sent.to_wire())  # then the answer
        answers.end(ManagedCluster.KIND, "c1")
        assert answer is added.object
        assert answers.reused == 1 and len(answers) == 0


@pytest.mark.asyncio
async def test_only_announced_writes_and_their_echoes_are_kept() -> None:
    async with gateways() as (gw, _, other):
        start = (await gw.list(ManagedCluster)).resource_version
        created = await other.create(cluster("c2"))
        (added,) = await asyncio.wait_for(_events(gw, start, 1), 10)
        assert added.object is not created and added.object == created
        assert gw.answers is not None and gw.answers.reused == 0 and len(gw.answers) == 0
        await gw.create(cluster("c3"))  # not announced (no EchoedGateway): nothing kept
        assert len(gw.answers) == 0
