"""ocm-placement for add-on authors: follow where a Placement says to act, and roll a change out
the way OCM's rollout strategies say.

    from ocm_placement import ClusterAccess, DecisionTracker, Gateway, RolloutStrategy, rollout

    async with await Gateway.connect(ClusterAccess()) as gateway:  # $KUBECONFIG, ~/.kube/config
        async with DecisionTracker(gateway, "addons", "my-placement") as tracker:
            added, removed = await tracker.next_change()  # the current decisions, whole
            plan = rollout(strategy, tracker.groups(), statuses, now)
            for cluster in plan.to_rollout: ...

`Gateway` (module `controllers.kube.gateway`) is the client the tracker reads through,
`ClusterAccess` says where the hub is (a kubeconfig and context, the pod's service account, a
URL) and `find_access` finds it as kubectl does.

`DecisionTracker` (`controllers.consumer`) lists and watches the placement's PlacementDecisions
and reports (added, removed) without spurious removes; `rollout` (`placement.rollout`) is
sdk-go's RolloutHandler as a pure function; `RolloutStrategy` is OCM's model (`apis.rollout`).
A runnable example: `python -m ocm_placement.examples.progressive_configmap --embedded`.

Import names: this module is the stable API. The wheel has one top-level package, this one:
the modules named above are `ocm_placement.controllers.kube.gateway`, `ocm_placement.apis...`
there (a project with its own `controllers` or `placement` package is unaffected). In a source
checkout the top-level names (`controllers.kube.gateway`) work as well.

The names are imported on first use, so that `import ocm_placement` (and the `placement`
command, `ocm_placement.cli`) costs nothing until one is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from apis.rollout import RolloutStrategy
    from controllers.consumer import DecisionTracker, PlacementNotFoundError
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

# Each exported name and the module it comes from (renamed under ocm_placement in the wheel).
_SOURCES = {
    "ClusterAccess": "controllers.kube.config",
    "ClusterRolloutStatus": "placement.rollout",
    "DecisionTracker": "controllers.consumer",
    "Gateway": "controllers.kube.gateway",
    "GroupKey": "placement.rollout",
    "PlacementNotFoundError": "controllers.consumer",
    "RolloutError": "placement.rollout",
    "RolloutResult": "placement.rollout",
    "RolloutStatus": "placement.rollout",
    "RolloutStrategy": "apis.rollout",
    "find_access": "controllers.kube.config",
    "rollout": "placement.rollout",
}

__all__ = [
    "ClusterAccess",
    "ClusterRolloutStatus",
    "DecisionTracker",
    "Gateway",
    "GroupKey",
    "PlacementNotFoundError",
    "RolloutError",
    "RolloutResult",
    "RolloutStatus",
    "RolloutStrategy",
    "find_access",
    "rollout",
]


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(source), name)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
