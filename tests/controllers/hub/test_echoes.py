"""Echoes of our own writes against the embedded hub: a watch event carrying exactly the
version one of our writes produced re-queues nothing, even when it arrives before the write's
response; any other event (someone else's write) re-queues as it always did.
`tests/controllers/runtime/test_echoes.py` covers the registry itself."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from apis.meta import KubeObject
from apis.placements import Placement
from controllers.kube.gateway import Gateway
from tests.controllers.hub.controller_hub import hub
from tests.controllers.hub.test_controller import TWO_TEAMS, create

# --- against the embedded hub, with every write's response held back ---------------------------

Write = Callable[..., Awaitable[Any]]


def slow_responses(
    monkeypatch: pytest.MonkeyPatch, after: Callable[[str, Any], Awaitable[None]] | None = None
) -> Counter[str]:
    """Hold every create and patch response back until its watch event has surely arrived
    (the race that a separate server makes likely); `after(kind, written)` runs meanwhile.
    Returns the writes counted by kind."""
    writes: Counter[str] = Counter()

    def slowed(original: Write) -> Write:
        async def write(self: Gateway, *args: Any, **kwargs: Any) -> Any:
            written = await original(self, *args, **kwargs)
            # The PD writes answer with rows (`create_kept`, `merge_patch_kept`): the kind is
            # the object's (a create) or the class's (a patch).
            kind = args[0].KIND
            writes[kind] += 1
            if after is not None:
                await after(kind, written)
            await asyncio.sleep(0.1)
            return written

        return write

    for verb in ("create", "merge_patch", "create_kept", "merge_patch_kept"):
        monkeypatch.setattr(Gateway, verb, slowed(getattr(Gateway, verb)))
    return writes


@pytest.mark.asyncio
async def test_echoes_arriving_before_the_responses_requeue_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        writes = slow_responses(monkeypatch)
        manager = await h.manager(workers=4)
        await manager.wait_idle(timeout=30, settle=0.3)
        assert writes["PlacementDecision"] and writes["Placement"]  # the race was run
        assert Counter(manager.reconciler.history) == {
            "ns-a/prod": 1,
            "ns-a/all": 1,
            "ns-b/prod": 1,
            "ns-b/scored": 1,
        }
        assert await h.decided("ns-a", "prod") == ["a1"]


@pytest.mark.asyncio
async def test_a_status_edited_while_our_status_write_is_in_flight_is_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    edited: list[str] = []
    patch = Gateway.merge_patch

    async def edit_once(kind: str, written: Any) -> None:
        if kind == Placement.KIND and written.name == "prod" and not edited:
            # Someone else's write lands after ours, before our response arrives.
            body = {"status": {"numberOfSelectedClusters": 7}}
            done = await patch(h.gateway, Placement, "prod", body, "ns-a", status=True)
            edited.append(done.metadata.resource_version or "")

    async with hub() as h:
        await create(h, TWO_TEAMS)
        slow_responses(monkeypatch, edit_once)
        manager = await h.manager()
        await manager.wait_idle(timeout=30, settle=0.3)
        assert edited
        assert Counter(manager.reconciler.history)["ns-a/prod"] == 2
        restored = await h.placement("ns-a", "prod")
        assert restored.status is not None and restored.status.number_of_selected_clusters == 1


@pytest.mark.asyncio
async def test_an_edited_placement_status_is_restored() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await manager.wait_idle()
        manager.reconciler.history.clear()
        body = {"status": {"numberOfSelectedClusters": 7}}
        await h.gateway.patch_status(Placement, "prod", body, "ns-a")
        await asyncio.sleep(0.1)
        await manager.wait_idle()
        assert list(manager.reconciler.history) == ["ns-a/prod"]
        restored = await h.placement("ns-a", "prod")
        assert restored.status is not None and restored.status.number_of_selected_clusters == 1


@pytest.mark.asyncio
async def test_what_the_writer_writes_is_read_once_and_its_pds_never_as_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each version the writer produces comes back twice (its answer, its watch echo): each
    # placement status it patches is validated once, its PDs are read as rows, never as models.
    typed: Counter[str] = Counter()
    original = Gateway._typed

    def counting(cls: type[KubeObject], doc: Any) -> Any:
        typed[cls.KIND] += 1
        return original(cls, doc)

    status_patches = 0

    async with hub() as h:
        await create(h, TWO_TEAMS)
        monkeypatch.setattr(Gateway, "_typed", staticmethod(counting))
        manager = await h.manager(workers=4)
        await manager.wait_idle(timeout=30, settle=0.3)
        status_patches = sum(
            1 for pd in (await h.gateway.list(Placement)).items if pd.status is not None
        )
        answers = manager.gateway.answers
        assert answers is not None and answers.reused > 0
    assert status_patches == 4
    assert typed["PlacementDecision"] == 0
    # The list at the start, then one model per status patch (answer and echo share it); the
    # test's own list at the end adds 4.
    assert typed["Placement"] == 4 + status_patches + 4
