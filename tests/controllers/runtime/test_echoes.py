"""The registry of writes in flight: a watch event carrying exactly the version one of our
writes produced re-queues nothing, even when it arrives before the write's response; any other
event (someone else's write, or one that meets a failed write) re-queues as it always did."""

from __future__ import annotations

import asyncio
from typing import TypeVar

import pytest

from apis.meta import KubeObject
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway
from controllers.runtime.echoes import GONE, EchoedGateway, Echoes
from controllers.runtime.leader import NotLeaderError
from placement.testing import cluster

ObjT = TypeVar("ObjT", bound=KubeObject)


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


class _Fence:
    """A lease with `left` seconds of writing, closed by `close()`."""

    def __init__(self, left: float) -> None:
        self.left = left
        self.closed = asyncio.Event()

    def remaining(self) -> float:
        return self.left

    async def wait_deadline(self) -> None:
        await self.closed.wait()

    def close(self) -> None:
        self.left = 0.0
        self.closed.set()


@pytest.mark.asyncio
async def test_a_fenced_gateway_refuses_writes_after_the_deadline_and_cancels_one_in_flight() -> (
    None
):
    # Issue 20: a leader past its renew deadline sends nothing, and abandons what hangs.
    sent: list[str] = []
    hang = asyncio.Event()

    class Hanging(Gateway):
        """Creates that never get an answer, as under a partition."""

        async def create(self, obj: ObjT) -> ObjT:
            sent.append(obj.name)
            await hang.wait()
            return obj

    class Fenced(EchoedGateway, Hanging):
        """EchoedGateway over the hanging creates (its super() is Hanging)."""

    base = await Gateway.connect(ClusterAccess(url="http://127.0.0.1:9"))
    fence = _Fence(10.0)
    echoes, _ = registry()
    gateway = Fenced(base, echoes, fence=fence)
    writing = asyncio.create_task(gateway.create(cluster("c1")))
    await asyncio.sleep(0.01)
    assert sent == ["c1"]
    fence.close()
    with pytest.raises(NotLeaderError):
        await asyncio.wait_for(writing, 5)
    with pytest.raises(NotLeaderError):
        await gateway.create(cluster("c2"))
    assert sent == ["c1"]  # c2 never sent
    assert len(echoes) == 0  # both settled
    await base.close()
