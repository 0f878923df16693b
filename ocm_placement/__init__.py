"""ocm-placement for add-on authors: follow where a Placement says to act, and roll a change out
the way OCM's rollout strategies say.

    from ocm_placement import DecisionTracker, RolloutStrategy, rollout

    async with DecisionTracker(gateway, "addons", "my-placement") as tracker:
        added, removed = await tracker.next_change()
        plan = rollout(strategy, tracker.groups(), statuses, now)
        for cluster in plan.to_rollout: ...

`DecisionTracker` (controllers/consumer) lists and watches the placement's PlacementDecisions
and reports (added, removed) without spurious removes; `rollout` (placement/rollout.py) is
sdk-go's RolloutHandler as a pure function; `RolloutStrategy` is OCM's model (apis/rollout.py).
A runnable example: `python -m ocm_placement.examples.progressive_configmap --embedded`.
"""

from apis.rollout import RolloutStrategy
from controllers.consumer import DecisionTracker
from placement.rollout import (
    ClusterRolloutStatus,
    GroupKey,
    RolloutError,
    RolloutResult,
    RolloutStatus,
    rollout,
)

__all__ = [
    "ClusterRolloutStatus",
    "DecisionTracker",
    "GroupKey",
    "RolloutError",
    "RolloutResult",
    "RolloutStatus",
    "RolloutStrategy",
    "rollout",
]
