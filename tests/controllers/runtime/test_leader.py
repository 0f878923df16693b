"""Leader election against the embedded API server through the real client: acquiring,
exactly one leader, hand-over on release, expiry judged on the local clock only, write races,
stepping down when renewal fails, and the Lease fields written."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest

from apis.core import Lease, LeaseSpec, Namespace
from apis.meta import KubeObject, ObjectMeta
from controllers.kube.config import ClusterAccess, new_api_client
from controllers.kube.gateway import Gateway
from controllers.runtime.leader import LeaderConfig, LeaderElector, default_identity
from controllers.runtime.queue import ManualClock
from tests.controllers.embedded.hub import WAIT, eventually, hub

ObjT = TypeVar("ObjT", bound=KubeObject)

NAME, NAMESPACE = "placement-controller", "open-cluster-management-hub"
WALL = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
# Expiry is never reached in these timings, so a hand-over within WAIT proves a release.
STEADY = {"lease_duration": 30.0, "renew_deadline": 20.0, "retry_period": 0.05}
FAST = {"lease_duration": 0.3, "renew_deadline": 0.2, "retry_period": 0.05}
# For candidates on a ManualClock: the seconds are the clock's, not real ones.
MANUAL = {"lease_duration": 10.0, "renew_deadline": 8.0, "retry_period": 1.0}
STEP = 2.2  # retry_period plus the largest jitter: one step is at least one attempt


def config(identity: str, timings: dict[str, float]) -> LeaderConfig:
    return LeaderConfig(name=NAME, namespace=NAMESPACE, identity=identity, **timings)


class SteppingClock(ManualClock):
    """A manual clock that counts the naps taken on it: a candidate naps after each attempt."""

    def __init__(self) -> None:
        super().__init__()
        self.naps = 0

    async def sleep_until(self, deadline: float) -> None:
        self.naps += 1
        await super().sleep_until(deadline)

    async def step(self, seconds: float = STEP) -> None:
        """Move on, and wait until the candidate made its attempt and napped again."""
        naps = self.naps
        await self.advance(seconds)
        await eventually(lambda: self.naps > naps)


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@asynccontextmanager
async def running(elector: LeaderElector) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(elector.run())
    try:
        yield task
    finally:
        await stop(task)


async def leads(elector: LeaderElector) -> None:
    async with asyncio.timeout(WAIT):
        await elector.wait_leader()


async def lease_of(gw: Gateway) -> LeaseSpec:
    return (await gw.get(Lease, NAME, NAMESPACE)).spec


async def put_lease(gw: Gateway, holder: str, renewed: datetime, transitions: int = 0) -> None:
    spec = LeaseSpec(
        holder_identity=holder,
        lease_duration_seconds=10,
        acquire_time=renewed,
        renew_time=renewed,
        lease_transitions=transitions,
    )
    await gw.create(Lease(metadata=ObjectMeta(name=NAME, namespace=NAMESPACE), spec=spec))


class RacingGateway(Gateway):
    """A rival candidate writes the Lease just before our first `race` write lands."""

    race = "replace"
    raced = False

    def _rival(self) -> Lease:
        spec = LeaseSpec(holder_identity="rival", renew_time=WALL, lease_duration_seconds=10)
        return Lease(metadata=ObjectMeta(name=NAME, namespace=NAMESPACE), spec=spec)

    async def create(self, obj: ObjT) -> ObjT:
        if self.race == "create" and not self.raced:
            self.raced = True
            await super().create(self._rival())
        return await super().create(obj)

    async def replace(self, obj: ObjT) -> ObjT:
        if self.race == "replace" and not self.raced:
            self.raced = True
            patch: dict[str, Any] = {"spec": {"holderIdentity": "rival"}}
            await self.merge_patch(Lease, NAME, patch, NAMESPACE)
        return await super().replace(obj)


def test_the_default_identity_is_the_hostname_and_a_unique_suffix() -> None:
    first, second = default_identity(), default_identity()
    assert re.fullmatch(r".+_[0-9a-f]{8}", first)
    assert first != second
    assert first.rsplit("_", 1)[0] == second.rsplit("_", 1)[0]


@pytest.mark.parametrize(
    "timings",
    [
        pytest.param({"lease_duration": 10, "renew_deadline": 10}, id="lease-not-above-deadline"),
        pytest.param({"renew_deadline": 2.0, "retry_period": 2.0}, id="deadline-below-retry"),
        pytest.param({"retry_period": 0}, id="zero-retry"),
    ],
)
def test_inconsistent_timings_are_rejected(timings: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        LeaderConfig(name=NAME, namespace=NAMESPACE, **timings)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_a_single_candidate_creates_the_lease_in_a_missing_namespace_and_leads() -> None:
    started: list[str] = []
    async with hub(namespaces=[NAMESPACE]) as (_, gw):
        elector = LeaderElector(
            gw, config("a", FAST), wall=lambda: WALL, on_started_leading=lambda: started.append("a")
        )
        async with running(elector):
            await leads(elector)
            spec = await lease_of(gw)
    assert started == ["a"]
    assert spec.holder_identity == "a"
    assert spec.lease_duration_seconds == 1  # 0.3 s, in the API's whole seconds
    assert spec.acquire_time == spec.renew_time == WALL
    assert spec.lease_transitions == 0


@pytest.mark.asyncio
async def test_a_leader_renews_the_lease_keeping_its_acquire_time() -> None:
    ticks = iter(WALL + timedelta(seconds=n) for n in range(10**6))
    async with hub(namespaces=[NAMESPACE]) as (_, gw):
        elector = LeaderElector(gw, config("a", STEADY), wall=lambda: next(ticks))
        async with running(elector):
            await leads(elector)
            async with asyncio.timeout(WAIT):
                while not _renewed_after(spec := await lease_of(gw), WALL + timedelta(seconds=2)):
                    await asyncio.sleep(0.01)
    assert spec.acquire_time == WALL
    assert spec.lease_transitions == 0
    assert elector.is_leader is False  # stopped leading once run() was cancelled


def _renewed_after(spec: LeaseSpec, when: datetime) -> bool:
    return spec.renew_time is not None and spec.renew_time >= when


@pytest.mark.asyncio
async def test_of_two_candidates_started_together_exactly_one_leads() -> None:
    async with hub(namespaces=[NAMESPACE]) as (_, gw):
        a, b = LeaderElector(gw, config("a", STEADY)), LeaderElector(gw, config("b", STEADY))
        async with running(a), running(b):
            await eventually(lambda: a.is_leader or b.is_leader)
            await asyncio.sleep(0.3)  # several retry periods of contention
            leaders = [e.config.identity for e in (a, b) if e.is_leader]
            holder = (await lease_of(gw)).holder_identity
            seen_by = {e.config.identity: e.holder for e in (a, b)}
    assert len(leaders) == 1
    assert holder == leaders[0]
    assert seen_by == {"a": holder, "b": holder}


@pytest.mark.asyncio
async def test_a_released_lease_is_taken_over_at_once_and_counts_a_transition() -> None:
    stopped: list[str] = []
    async with hub(namespaces=[NAMESPACE]) as (_, gw):
        a = LeaderElector(gw, config("a", STEADY), on_stopped_leading=lambda: stopped.append("a"))
        b = LeaderElector(gw, config("b", STEADY))
        async with running(a) as a_task:
            await leads(a)
            async with running(b):
                await eventually(lambda: b.holder == "a")
                await stop(a_task)
                await a.release()
                await leads(b)  # long before the 30 s lease could expire
                spec = await lease_of(gw)
    assert stopped == ["a"]
    assert not a.lost().is_set()  # a clean stop is not a loss
    assert spec.holder_identity == "b"
    assert spec.lease_transitions == 1


@pytest.mark.asyncio
async def test_releasing_writes_no_holder_and_is_a_no_op_for_a_candidate_not_holding() -> None:
    async with hub(namespaces=[NAMESPACE]) as (_, gw):
        a, b = LeaderElector(gw, config("a", STEADY)), LeaderElector(gw, config("b", STEADY))
        async with running(a) as a_task:
            await leads(a)
            await b.release()
            assert (await lease_of(gw)).holder_identity == "a"
            await stop(a_task)
        await a.release()
        spec = await lease_of(gw)
    assert spec.holder_identity == ""
    assert spec.lease_duration_seconds == 1
    assert spec.lease_transitions == 0


@pytest.mark.asyncio
async def test_a_killed_leader_is_replaced_only_after_the_lease_duration_on_the_local_clock() -> (
    None
):
    async with hub(namespaces=[NAMESPACE]) as (_, gw):
        a = LeaderElector(gw, config("a", STEADY))
        async with running(a):
            await leads(a)
        # Killed: cancelled without release, so the Lease still names "a".
        clock = SteppingClock()
        b = LeaderElector(gw, config("b", MANUAL), clock=clock)
        async with running(b):
            await eventually(lambda: clock.naps >= 1)
            for _ in range(4):  # 8.8 s of the 10 s lease
                await clock.step()
                assert not b.is_leader
            await clock.step()
            await leads(b)
            spec = await lease_of(gw)
    assert spec.holder_identity == "b"
    assert spec.lease_transitions == 1


@pytest.mark.parametrize(
    "renewed",
    [
        pytest.param(WALL - timedelta(hours=1), id="renewed-long-ago"),
        pytest.param(WALL + timedelta(hours=1), id="renewed-in-the-future"),
    ],
)
@pytest.mark.asyncio
async def test_a_stale_holder_is_taken_over_after_expiry_whatever_its_renew_time(
    renewed: datetime,
) -> None:
    async with hub(namespaces=[NAMESPACE]) as (_, gw):
        await put_lease(gw, "ghost", renewed, transitions=3)
        clock = SteppingClock()
        b = LeaderElector(gw, config("b", MANUAL), clock=clock, wall=lambda: WALL)
        async with running(b):
            await eventually(lambda: clock.naps >= 1)
            for _ in range(4):
                await clock.step()
                assert not b.is_leader
            await clock.step()
            await leads(b)
            spec = await lease_of(gw)
    assert spec.holder_identity == "b"
    assert spec.lease_transitions == 4
    assert spec.acquire_time == WALL


@pytest.mark.parametrize("race", ["create", "replace"])
@pytest.mark.asyncio
async def test_a_candidate_that_loses_a_write_race_backs_off(race: str) -> None:
    async with hub(namespaces=[NAMESPACE]) as (server, gw):
        if race == "replace":
            await put_lease(gw, "", WALL)  # free: taken at the first attempt, but for the rival
        racing = RacingGateway(await new_api_client(ClusterAccess(url=server.url)))
        racing.race = race
        clock = SteppingClock()
        try:
            b = LeaderElector(racing, config("b", MANUAL), clock=clock)
            async with running(b):
                await eventually(lambda: clock.naps >= 1)
                lost_race = (racing.raced, b.is_leader, (await lease_of(gw)).holder_identity)
                await clock.step()
                after_retry = (b.is_leader, (await lease_of(gw)).holder_identity)
        finally:
            await racing.close()
    assert lost_race == (True, False, "rival")
    assert after_retry == (False, "rival")  # the rival's fresh lease is not overwritten


@pytest.mark.asyncio
async def test_a_leader_that_cannot_renew_steps_down_then_contends_again() -> None:
    calls: list[str] = []
    async with hub(namespaces=[NAMESPACE]) as (server, gw):
        a = LeaderElector(
            gw,
            config("a", FAST),
            on_started_leading=lambda: calls.append("started"),
            on_stopped_leading=lambda: calls.append("stopped"),
        )
        async with running(a):
            await leads(a)
            server.faults.error_rates["update"] = 1.0
            async with asyncio.timeout(WAIT):
                await a.lost().wait()
            assert not a.is_leader
            del server.faults.error_rates["update"]
            await leads(a)
            spec = await lease_of(gw)
    assert calls[:3] == ["started", "stopped", "started"]
    assert not a.lost().is_set()  # cleared on leading again
    assert spec.lease_transitions == 0  # the same holder throughout


@pytest.mark.asyncio
async def test_a_leader_whose_lease_was_taken_steps_down_without_waiting_for_its_deadline() -> None:
    async with hub(namespaces=[NAMESPACE]) as (_, gw):
        a = LeaderElector(gw, config("a", STEADY))
        async with running(a):
            await leads(a)
            patch: dict[str, Any] = {"spec": {"holderIdentity": "usurper"}}
            await gw.merge_patch(Lease, NAME, patch, NAMESPACE)
            async with asyncio.timeout(WAIT):  # the renew deadline is 20 s
                await a.lost().wait()
            holder = a.holder
    assert holder == "usurper"


@pytest.mark.asyncio
async def test_lease_transitions_count_each_change_of_holder() -> None:
    async with hub(namespaces=[NAMESPACE]) as (_, gw):
        counts = []
        for identity in ("a", "b", "a"):
            elector = LeaderElector(gw, config(identity, STEADY))
            async with running(elector):
                await leads(elector)
            await elector.release()
            counts.append((await lease_of(gw)).lease_transitions)
    assert counts == [0, 1, 2]


@pytest.mark.asyncio
async def test_a_lease_namespace_that_does_not_exist_is_one_error_line_with_the_cause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = SteppingClock()
    async with hub() as (_, gw):
        elector = LeaderElector(gw, config("a", MANUAL), clock=clock)
        with caplog.at_level(logging.DEBUG, logger="controllers.runtime.leader"):
            async with running(elector):
                await eventually(lambda: clock.naps >= 1)
                for _ in range(3):  # three more attempts, each failing the same way
                    await clock.step()
                blocked = elector.blocked
                await gw.create(Namespace(metadata=ObjectMeta(name=NAMESPACE)))
                await clock.step()
                await leads(elector)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert blocked is not None
    assert blocked.startswith(f"cannot create lease {NAMESPACE}/{NAME}: ")
    assert f'namespaces "{NAMESPACE}" not found' in blocked
    assert errors == [f"leader election: {blocked}; retrying every 1s"]
    assert elector.blocked is None
    assert any("reachable again" in r.getMessage() for r in caplog.records)


@pytest.mark.asyncio
async def test_a_lease_that_cannot_be_read_blocks_the_candidate_until_it_can(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = SteppingClock()
    async with hub(namespaces=[NAMESPACE]) as (server, gw):
        server.faults.error_rates["get"] = 1.0
        elector = LeaderElector(gw, config("a", MANUAL), clock=clock)
        with caplog.at_level(logging.ERROR, logger="controllers.runtime.leader"):
            async with running(elector):
                await eventually(lambda: clock.naps >= 1)
                await clock.step()
                blocked = elector.blocked
                del server.faults.error_rates["get"]
                await clock.step()
                await leads(elector)
    assert blocked is not None and blocked.startswith(f"cannot read lease {NAMESPACE}/{NAME}: ")
    assert len(caplog.records) == 1
    assert elector.blocked is None
