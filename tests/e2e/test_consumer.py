"""The consumer library (`ocm_placement`: `DecisionTracker`, `rollout`) on real watches of a
real API server, while `placement run` (a subprocess) changes a placement's decisions: a cluster
moving between decision groups, a cluster tainted out and back, a cluster relabelled out.

The tracker reports each change once and never flickers: a cluster that stays selected is never
reported removed, and never missing from the union of the PlacementDecisions as the watch
delivers them, event by event (our writer adds before it removes); `groups()` follows the
decision groups, and `rollout` plans over them.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
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

    def __init__(self, gateway: Gateway, namespace: str, name: str) -> None:
        super().__init__(gateway, namespace, name, settle=SETTLE)
        self.unions: list[frozenset[str]] = []

    def _changed(self) -> None:
        if self.informer.synced:
            self.unions.append(self.clusters())
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
            try:
                await create_all(gw, [*fleet.objects, target])

                # The add-on starts once the placement is scheduled (it may also start before:
                # its first change is then empty, and the clusters come as additions).
                async def scheduled() -> bool:
                    pages = await decided(gw, namespace, "config-rollout")
                    return sum(map(len, pages.values())) == len(rings)

                await eventually(scheduled, timeout=WAIT)
                tracker = RecordingTracker(gw, namespace, "config-rollout")
                await tracker.start()
                changes = [await tracker.next_change()]
                assert changes == [(frozenset({c1, c2, c3, c4, c5, c6}), frozenset())]
                assert tracker.groups() == {
                    canary: frozenset({c1, c2}),
                    rest: frozenset({c3, c4, c5, c6}),
                }
                now = datetime.now(UTC)
                plan = rollout(STRATEGY, tracker.groups(), [], now)
                assert [(s.cluster, s.status, s.group) for s in plan.to_rollout] == [
                    (c1, RolloutStatus.TO_APPLY, canary),
                    (c2, RolloutStatus.TO_APPLY, canary),
                ]
                done = [
                    ClusterRolloutStatus(c, RolloutStatus.SUCCEEDED, canary, now - timedelta(1))
                    for c in (c1, c2)
                ]
                plan = rollout(STRATEGY, tracker.groups(), done, now)
                assert [s.cluster for s in plan.to_rollout] == [c3, c4]

                # c3 moves into the canary group: it stays selected, nothing is reported.
                await gw.merge_patch(
                    ManagedCluster, c3, {"metadata": {"labels": {"ring": "canary"}}}
                )
                await eventually(
                    lambda: (
                        tracker.groups()
                        == {canary: frozenset({c1, c2, c3}), rest: frozenset({c4, c5, c6})}
                    ),
                    timeout=WAIT,
                )
                # c4 tainted out, reported removed once the decisions are quiet.
                drained = [taint(PRIVATE_TAINT).to_wire(), taint("e2e.ocm.io/drain").to_wire()]
                await gw.merge_patch(ManagedCluster, c4, {"spec": {"taints": drained}})
                changes.append(await _next(tracker))
                # c5 relabelled out of the predicate.
                await gw.merge_patch(ManagedCluster, c5, {"metadata": {"labels": {"env": "dev"}}})
                changes.append(await _next(tracker))
                # c4's taint lifted: back in, reported at once.
                await gw.merge_patch(
                    ManagedCluster, c4, {"spec": {"taints": [taint(PRIVATE_TAINT).to_wire()]}}
                )
                changes.append(await _next(tracker))
                assert changes[1:] == [
                    (frozenset(), frozenset({c4})),
                    (frozenset(), frozenset({c5})),
                    (frozenset({c4}), frozenset()),
                ]
                assert tracker.groups() == {
                    canary: frozenset({c1, c2, c3}),
                    rest: frozenset({c4, c6}),
                }
                # No flicker in the raw view either: the clusters selected throughout are in
                # the union after every watch event.
                steady = frozenset({c1, c2, c3, c6})
                assert tracker.unions, "no watch event seen"
                assert [u for u in tracker.unions if not steady <= u] == []
                # What the add-on knew of c5 is now `removed` in the plan.
                known = [*done, ClusterRolloutStatus(c5, RolloutStatus.SUCCEEDED, rest, now)]
                plan = rollout(STRATEGY, tracker.groups(), known, now)
                assert [s.cluster for s in plan.removed] == [c5]
                assert [s.cluster for s in plan.to_rollout] == [c3]
                await tracker.stop()
            finally:
                await delete_all(gw, fleet.cluster_scoped)
    finally:
        assert await run.stop() == 0, run.stderr()


async def _next(tracker: DecisionTracker) -> tuple[frozenset[str], frozenset[str]]:
    async with asyncio.timeout(WAIT):
        return await tracker.next_change()
