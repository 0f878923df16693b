"""A placement that becomes misconfigured gets one Warning event (OCM writes only the condition):
on the transition, again only when the reason changes, never once per retry."""

from __future__ import annotations

import asyncio

import pytest

from apis.cluster import ManagedClusterSet
from apis.core import Event
from apis.meta import Condition
from apis.placements import PLACEMENT_MISCONFIGURED, Placement, PlacementStatus
from controllers.hub.reconciler import MISCONFIGURED_EVENT, newly_misconfigured
from placement.testing import cluster
from tests.controllers.embedded.hub import eventually
from tests.controllers.hub.controller_hub import START, Hub, hub
from tests.controllers.hub.test_controller import TWO_TEAMS, create, settled


def status(misconfigured: str | None) -> PlacementStatus:
    conditions = [
        Condition.model_validate(
            {
                "type": PLACEMENT_MISCONFIGURED,
                "status": "False" if misconfigured is None else "True",
                "reason": "Succeedconfigured" if misconfigured is None else "Misconfigured",
                "message": misconfigured or "Placement configurations check pass",
                "lastTransitionTime": START,
            }
        )
    ]
    return PlacementStatus(conditions=conditions)


def test_the_event_is_due_on_the_transition_and_on_a_new_reason_only() -> None:
    assert newly_misconfigured(None, status("x:bad")) == "x:bad"
    assert newly_misconfigured(status(None), status("x:bad")) == "x:bad"
    assert newly_misconfigured(status("x:bad"), status("x:bad")) is None
    assert newly_misconfigured(status("x:bad"), status("x:worse")) == "x:worse"
    assert newly_misconfigured(status("x:bad"), status(None)) is None
    assert newly_misconfigured(None, PlacementStatus()) is None


async def warnings(h: Hub, namespace: str) -> list[Event]:
    events = (await h.gateway.list(Event, namespace)).items
    return [e for e in events if e.reason == MISCONFIGURED_EVENT]


@pytest.mark.asyncio
async def test_a_cluster_set_whose_selector_breaks_raises_one_warning_event() -> None:
    broken = {"matchExpressions": [{"key": "env", "operator": "In", "values": []}]}
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await settled(h, manager)
        assert await h.decided("ns-a", "prod") == ["a1"]
        spec = {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": broken}}
        await h.gateway.merge_patch(ManagedClusterSet, "team-a", {"spec": spec})

        async def events() -> list[Event] | None:
            found = await warnings(h, "ns-a")
            return found if len(found) >= 2 else None  # both ns-a placements use team-a

        found = await eventually(events)
        assert found is not None
        assert {e.regarding.name for e in found if e.regarding is not None} == {"prod", "all"}
        for event in found:
            assert event.type == "Warning"
            assert event.note is not None
            assert event.note.startswith(':failed to get clusters from ClusterSet "team-a": ')
        assert await h.decided("ns-a", "prod") == ["a1"]  # kept, as for any misconfiguration
        # Retries with backoff keep failing with the same error: no further event.
        await asyncio.sleep(0.5)
        await manager.wait_idle()
        assert len(await warnings(h, "ns-a")) == 2
        assert await warnings(h, "ns-b") == []


@pytest.mark.asyncio
async def test_a_new_cluster_does_not_repeat_the_warning_of_a_misconfigured_placement() -> None:
    async with hub() as h:
        await create(h, TWO_TEAMS)
        manager = await h.manager()
        await settled(h, manager)
        await h.gateway.merge_patch(
            Placement, "prod", {"spec": {"prioritizerPolicy": {"mode": "Sideways"}}}, "ns-a"
        )
        found = await eventually(lambda: warnings(h, "ns-a"))
        assert [e.note for e in found] == [":incorrect prioritizer policy mode: Sideways"]
        await create(h, [cluster("a3", labels={"env": "prod"}, cluster_set="team-a")])
        await manager.wait_idle()
        assert len(await warnings(h, "ns-a")) == 1
