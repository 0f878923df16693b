"""`NodeDeclaredFeatures`: a pod that needs a node feature goes only to nodes declaring it.

As kube v1.36's plugin (its NodeDeclaredFeatures gate is beta and on, the plugin is the last of
the default profile): a node's kubelet lists the features it has in `status.declaredFeatures`;
the features a pod needs are inferred from its spec by the features kube v1.36 registers
(`REGISTERED_FEATURES`). Only two of them can be needed to schedule a pod (the others matter
for in-place updates only):

* `RestartAllContainersOnContainerExits`: a container or init container with a
  `restartPolicyRules` entry whose action is `RestartAllContainers`;
* `UserNamespacesHostNetworkSupport`: `hostNetwork: true` together with `hostUsers: false`.

PreFilter skips a pod needing nothing (nearly every pod: no node is read). Filter refuses each
node that does not declare every needed feature, unresolvable (preemption cannot add a feature),
with kube's `node(s) didn't match Pod's required features`. Requeueing as kube's hints: a node
added, or a node whose declared features changed (other node updates help nobody); a pending
pod's own spec change requeues it anyway.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

import numpy as np

from apis.core import Node, Pod
from apis.pluginargs import NoArgs
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import ClusterEvent, NodeEvent, RequeueHints
from placement.pods.framework.interface import (
    SKIP,
    ClusterView,
    EventHandler,
    Filter,
    FilterResult,
    PodCycle,
    PodInfo,
    PreFilter,
    PreFilterResult,
    Reason,
)
from plugins.pods.helper.args import args_of
from plugins.pods.helper.snapshot_cache import frozen

__all__ = [
    "ERR_REASON_UNSATISFIED",
    "REGISTERED_FEATURES",
    "RESTART_ALL_CONTAINERS",
    "USER_NAMESPACES_HOST_NETWORK",
    "NodeDeclaredFeatures",
    "required_features",
]

ERR_REASON_UNSATISFIED = "node(s) didn't match Pod's required features"
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
REGISTERED_FEATURES: tuple[str, ...] = (
    "ExtendWebSocketsToKubelet",
    "InPlacePodLevelResourcesVerticalScaling",
    "InPlacePodVerticalScalingInitContainers",
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
)
"""The features kube v1.36 knows, sorted; only the two named above are inferred for
scheduling (the in-place resize ones concern pod updates, the web-socket one neither)."""


def required_features(pod: Pod) -> frozenset[str]:
    """The declared features `pod` needs of its node, as kube v1.36 infers them for scheduling."""
    spec = pod.spec
    needed: set[str] = set()
    for container in (*spec.containers, *(spec.init_containers or ())):
        rules = container.restart_policy_rules or ()
        if any(rule.get("action") == "RestartAllContainers" for rule in rules):
            needed.add(RESTART_ALL_CONTAINERS)
            break
    if spec.host_network is True and spec.host_users is False:
        needed.add(USER_NAMESPACES_HOST_NETWORK)
    return frozenset(needed)


def declared_features(node: Node) -> tuple[str, ...]:
    status = node.status
    return tuple(status.declared_features or ()) if status is not None else ()


class NodeDeclaredFeatures(PreFilter, Filter, EventHandler, RequeueHints):
    name = "NodeDeclaredFeatures"
    requeue_on: frozenset[str] = frozenset()
    """No engine-wide event: freed room adds no feature, and node events are answered by
    `on_event` (kube's hint: a node added or its declared features changed)."""

    def __init__(self) -> None:
        self._declared: dict[str, frozenset[str]] = {}  # node -> its declared features
        self._version = 0  # counts changes of `_declared`: the masks below are rebuilt
        self._masks: dict[frozenset[str], BoolMask] = {}  # needed features -> rows declaring
        self._source: tuple[int, tuple[str, ...]] | None = None  # what `_masks` were built on

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> NodeDeclaredFeatures:
        args_of(NoArgs, args)  # no args: any field is refused
        return cls()

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool | Set[str]:
        if not isinstance(event, NodeEvent):
            return False
        name = event.node.metadata.name or ""
        before = self._declared.pop(name, frozenset())
        after = frozenset() if event.type == "Deleted" else frozenset(declared_features(event.node))
        if after:
            self._declared[name] = after
        if before != after:
            self._version += 1
        # kube's hint: a node added, or a node whose declared features changed.
        return event.type == "Added" or (event.type == "Modified" and before != after)

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        if not required_features(pod.pod):
            return PreFilterResult(SKIP)
        return PreFilterResult()

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        needed = required_features(pod.pod)
        if not needed:
            return FilterResult(candidates)
        fit = self._mask(needed, nodes)
        missing = candidates & ~fit
        if not missing.any():
            return FilterResult(candidates)
        return FilterResult(
            candidates & fit, (Reason(missing, ERR_REASON_UNSATISFIED, resolvable=False),)
        )

    def _mask(self, needed: frozenset[str], nodes: NodeSnapshot) -> BoolMask:
        """The rows of the nodes declaring every feature in `needed`, kept per node set."""
        source = (self._version, nodes.names)
        known = self._source
        if known is None or known[0] != source[0] or known[1] is not nodes.names:
            self._source, self._masks = source, {}
        found = self._masks.get(needed)
        if found is None:
            found = np.zeros(nodes.size, dtype=bool)
            for name, declared in self._declared.items():
                row = nodes.row_of(name)
                if row is not None and needed <= declared:
                    found[row] = True
            found = self._masks[needed] = frozen(found)
        return found
