"""`UnsupportedFeatures`: a pod that needs what this scheduler does not implement is
refused with a message naming the feature, never placed as if the constraint were not there.

Dynamic resource allocation (`spec.resourceClaims`, kube's DynamicResources plugin): a pod
that claims a device must not land on a node without it. Everything else kube-scheduler's
default profile places is implemented by a plugin of the same name; what those do not do (a
volume needing dynamic provisioning) they refuse with their own message. The check is on the
pod alone, so it runs at PreFilter and the pod is unresolvable: no node event or preemption
helps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.core import Pod
from apis.pluginargs import NoArgs
from placement.pods.events import RequeueHints
from placement.pods.framework import PodCycle, PodInfo, PodStatus, PreFilter, PreFilterResult
from placement.pods.nodes import NodeSnapshot
from plugins.pods._shared import args_of

__all__ = ["SCHEDULER", "UnsupportedFeatures", "unsupported"]

SCHEDULER = "ocm-pod-scheduler"


def unsupported(pod: Pod) -> list[str]:
    """The features the pod uses that the scheduler does not implement, with their fields."""
    spec = pod.spec
    found: list[str] = []
    if spec.resource_claims:
        found.append("dynamic resource allocation (spec.resourceClaims)")
    return found


class UnsupportedFeatures(PreFilter, RequeueHints):
    name = "UnsupportedFeatures"
    requeue_on: frozenset[str] = frozenset()
    """No cluster event makes a pod it refuses schedulable (the pod itself must change)."""

    def __init__(self, scheduler: str = SCHEDULER) -> None:
        self.scheduler = scheduler

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> UnsupportedFeatures:
        args_of(NoArgs, args)  # no args: any field is refused
        return cls()

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        found = unsupported(pod.pod)
        if not found:
            return PreFilterResult()
        uses = found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]
        message = f"pod uses {uses}, which {self.scheduler} does not implement"
        return PreFilterResult(PodStatus.unresolvable(self.name, message))
