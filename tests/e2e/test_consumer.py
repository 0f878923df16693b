"""The consumer library (`ocm_placement`: `DecisionTracker`, `rollout`) on real watches of a
real API server, while `placement run` (a subprocess) changes a placement's decisions: canary
clusters joining after the first schedule (the pages change decision group), a cluster moving
between decision groups, a cluster tainted out and back, a cluster relabelled out.

The tracker reports each change once and never flickers: a cluster that stays selected is never
reported removed, and never missing from the union of the PlacementDecisions as the watch
delivers them, event by event (our writer adds before it removes); `groups()` follows the
decision groups and never shows a cluster in a group it is not in (a rollout's mandatory group
depends on it), and `rollout` plans over them.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import pytest

from apis.cluster import ManagedCluster
from ocm_placement import (
    ClusterAccess,
    ClusterRolloutStatus,
    DecisionTracker,
    Gateway,
    GroupKey,
    RolloutStatus,
    RolloutStrategy,
    rollout,
)
from placement.testing import placement, predicate, taint
from tests.controllers.embedded.hub import eventually
from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.hub_helpers import (
    PRIVATE_TAINT,
    PlacementRun,
    create_all,
    decided,
    delete_all,
    private_fleet,
    tolerate_private,
)

pytestmark = pytest.mark.asyncio

Change = tuple[frozenset[str], frozenset[str]]

SETTLE = 0.5  # the tracker's quiet time before it reports a removal
WAIT = 10.0

STRATEGY = RolloutStrategy.model_validate(
    {
        "type": "Progressive",
        "progressive": {"mandatoryDecisionGroups": [{"groupName": "canary"}], "maxConcurrency": 2},
    }
)


class RecordingTracker(DecisionTracker):
    """A tracker that also notes the union of the PlacementDecisions after each watch event
    (the raw view, before the tracker's settling)."""

    def __init__(self, gateway: Gateway, namespace: str, name: str, wait: float = 0.0) -> None:
        super().__init__(gateway, namespace, name, settle=SETTLE, wait_for_placement=wait)
        self.unions: list[frozenset[str]] = []
        self.grouped: list[dict[GroupKey, frozenset[str]]] = []

    def _changed(self) -> None:
        if self.informer.synced:
            self.unions.append(self.clusters())
            self.grouped.append(self.groups())
        super()._changed()


async def test_tracker_follows_decisions_without_flicker_and_rollout_plans_over_them(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    namespace = unique_name("e2e-consumer")
    rings = ["canary"] * 2 + ["main"] * 4
    fleet = private_fleet(
        unique_name("consumer"), namespace, [{"env": "prod", "ring": r} for r in rings]
    )
    c1, c2, c3, c4, c5, c6 = (c.name for c in fleet.clusters)
    groups = {
        "groupStrategy": {
            "decisionGroups": [
                {
                    "groupName": "canary",
                    "groupClusterSelector": {"labelSelector": {"matchLabels": {"ring": "canary"}}},
                }
            ]
        }
    }
    target = placement(
        namespace,
        "config-rollout",
        clusterSets=[fleet.name],
        predicates=[predicate(labels={"env": "prod"}).to_wire()],
        tolerations=tolerate_private(),
        decisionStrategy=groups,
    )
    canary, rest = GroupKey(0, "canary"), GroupKey(1, "")
    run = await PlacementRun.start(control_plane.kubeconfig, tmp_path)
    try:
        async with await Gateway.connect(ClusterAccess(kubeconfig=control_plane.kubeconfig)) as gw:
            # One add-on started before the placement exists (waiting for it to be created;
            # its clusters come as additions), one once it is scheduled (its first change is
            # the whole selection).
            early = RecordingTracker(gw, namespace, "config-rollout", wait=WAIT)
            starting = asyncio.create_task(early.start())
            trackers: list[RecordingTracker] = [early]
            try:
                # The canaries join once the rest is scheduled: the rest's page then moves
                # from group 0 to group 1 and page 1 becomes the canary group.
                await create_all(gw, [*fleet.objects[2:], target])
                await starting

                async def scheduled(count: int) -> bool:
                    pages = await decided(gw, namespace, "config-rollout")
                    return sum(map(len, pages.values())) == count

                await eventually(partial(scheduled, len(rings) - 2), timeout=WAIT)
                await create_all(gw, fleet.objects[:2])
                await eventually(partial(scheduled, len(rings)), timeout=WAIT)
                late = RecordingTracker(gw, namespace, "config-rollout")
                await late.start()
                trackers.append(late)
                everyone = frozenset({c1, c2, c3, c4, c5, c6})
                assert await _next(late) == (everyone, frozenset())
                reported: set[str] = set()
                while reported != everyone:
                    added, removed = await _next(early)
                    assert removed == frozenset() and added <= everyone - reported
                    reported |= added
                first = {canary: frozenset({c1, c2}), rest: frozenset({c3, c4, c5, c6})}
                for tracker in trackers:
                    await eventually(partial(_grouped, tracker, first), timeout=WAIT)
                now = datetime.now(UTC)
                plan = rollout(STRATEGY, late.groups(), [], now)
                assert [(s.cluster, s.status, s.group) for s in plan.to_rollout] == [
                    (c1, RolloutStatus.TO_APPLY, canary),
                    (c2, RolloutStatus.TO_APPLY, canary),
                ]
                done = [
                    ClusterRolloutStatus(c, RolloutStatus.SUCCEEDED, canary, now - timedelta(1))
                    for c in (c1, c2)
                ]
                plan = rollout(STRATEGY, late.groups(), done, now)
                assert [s.cluster for s in plan.to_rollout] == [c3, c4]

                # c3 moves into the canary group: it stays selected, nothing is reported.
                to_canary = {"metadata": {"labels": {"ring": "canary"}}}
                await gw.merge_patch(ManagedCluster, c3, to_canary)
                moved = {canary: frozenset({c1, c2, c3}), rest: frozenset({c4, c5, c6})}
                for tracker in trackers:
                    await eventually(partial(_grouped, tracker, moved), timeout=WAIT)
                changes: dict[int, list[Change]] = {0: [], 1: []}

                async def each_reports() -> None:
                    for i, tracker in enumerate(trackers):
                        changes[i].append(await _next(tracker))

                # c4 tainted out, reported removed once the decisions are quiet.
                drained = [taint(PRIVATE_TAINT).to_wire(), taint("e2e.ocm.io/drain").to_wire()]
                await gw.merge_patch(ManagedCluster, c4, {"spec": {"taints": drained}})
                await each_reports()
                # c5 relabelled out of the predicate.
                await gw.merge_patch(ManagedCluster, c5, {"metadata": {"labels": {"env": "dev"}}})
                await each_reports()
                # c4's taint lifted: back in, reported at once.
                await gw.merge_patch(
                    ManagedCluster, c4, {"spec": {"taints": [taint(PRIVATE_TAINT).to_wire()]}}
                )
                await each_reports()
                expected = [
                    (frozenset(), frozenset({c4})),
                    (frozenset(), frozenset({c5})),
                    (frozenset({c4}), frozenset()),
                ]
                assert changes == {0: expected, 1: expected}
                steady = frozenset({c1, c2, c3, c6})
                for tracker in trackers:
                    assert tracker.groups() == {
                        canary: frozenset({c1, c2, c3}),
                        rest: frozenset({c4, c6}),
                    }
                    # No flicker in the raw view either: the clusters selected throughout are
                    # in the union after every watch event once they were first seen.
                    unions = tracker.unions
                    since = next(i for i, u in enumerate(unions) if steady <= u)
                    assert [u for u in unions[since:] if not steady <= u] == []
                    assert len(unions) - since >= 5, unions  # every change was seen
                    # Never a cluster in a group it does not belong to, whichever order the
                    # controller met the clusters in: the canaries only ever in `canary`, c4-c6
                    # never there (the first schedule may have made the rest group 0).
                    for groups_seen in tracker.grouped:
                        for key, members in groups_seen.items():
                            if key.name == "canary":
                                assert members <= {c1, c2, c3}, groups_seen
                            else:
                                assert not members & {c1, c2}, groups_seen
                # What the add-on knew of c5 is now `removed` in the plan.
                known = [*done, ClusterRolloutStatus(c5, RolloutStatus.SUCCEEDED, rest, now)]
                plan = rollout(STRATEGY, late.groups(), known, now)
                assert [s.cluster for s in plan.removed] == [c5]
                assert [s.cluster for s in plan.to_rollout] == [c3]
            finally:
                for tracker in trackers:
                    await tracker.stop()
                await delete_all(gw, [target, *fleet.cluster_scoped])
    finally:
        assert await run.stop() == 0, run.stderr()


def _grouped(tracker: DecisionTracker, groups: dict[GroupKey, frozenset[str]]) -> bool:
    return tracker.groups() == groups


async def _next(tracker: DecisionTracker) -> Change:
    async with asyncio.timeout(WAIT):
        return await tracker.next_change()
