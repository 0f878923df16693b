"""ocm-placement for add-on authors: follow where a Placement says to act, and roll a change out
the way OCM's rollout strategies say.

    from ocm_placement import ClusterAccess, DecisionTracker, Gateway, RolloutStrategy, rollout

    async with await Gateway.connect(ClusterAccess()) as gateway:  # $KUBECONFIG, ~/.kube/config
        async with DecisionTracker(gateway, "addons", "my-placement") as tracker:
            added, removed = await tracker.next_change()  # the current decisions, whole
            plan = rollout(strategy, tracker.groups(), statuses, now)
            for cluster in plan.to_rollout: ...

`Gateway` (controllers/kube) is the client the tracker reads through, `ClusterAccess` says
where the hub is (a kubeconfig and context, the pod's service account, a URL) and
`find_access` finds it as kubectl does.

`DecisionTracker` (controllers/consumer) lists and watches the placement's PlacementDecisions
and reports (added, removed) without spurious removes; `rollout` (placement/rollout.py) is
sdk-go's RolloutHandler as a pure function; `RolloutStrategy` is OCM's model (apis/rollout.py).
A runnable example: `python -m ocm_placement.examples.progressive_configmap --embedded`.
"""

from apis.rollout import RolloutStrategy
from controllers.consumer import DecisionTracker
from controllers.kube.config import ClusterAccess, find_access
from controllers.kube.gateway import Gateway
from placement.rollout import (
    ClusterRolloutStatus,
    GroupKey,
    RolloutError,
    RolloutResult,
    RolloutStatus,
    rollout,
)

__all__ = [
    "ClusterAccess",
    "ClusterRolloutStatus",
    "DecisionTracker",
    "Gateway",
    "GroupKey",
    "RolloutError",
    "RolloutResult",
    "RolloutStatus",
    "RolloutStrategy",
    "find_access",
    "rollout",
]
