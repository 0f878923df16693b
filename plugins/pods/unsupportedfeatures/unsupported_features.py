"""`UnsupportedFeatures`: a pod that needs what this scheduler does not implement would be
refused here with a message naming the feature, never placed as if the constraint were not there.

Since DynamicResources joined the default profile (issue 45) nothing is refused: every feature
kube-scheduler v1.36's default profile places is implemented by a plugin of the same name, and
what those do not do they refuse with their own message (a device our allocator cannot use is
"cannot allocate all claims"). The plugin is out of the default profile and stays registered, so
that a configuration naming it (enabling or disabling it) still loads. Its check is on the pod
alone: a refusal would be at PreFilter and unresolvable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.core import Pod
from apis.pluginargs import NoArgs
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import RequeueHints
from placement.pods.framework.interface import (
    PodCycle,
    PodInfo,
    PodStatus,
    PreFilter,
    PreFilterResult,
)
from plugins.pods.helper.args import args_of

__all__ = ["SCHEDULER", "UnsupportedFeatures", "unsupported"]

SCHEDULER = "ocm-pod-scheduler"


def unsupported(pod: Pod) -> list[str]:
    """The features the pod uses that the scheduler does not implement, with their fields."""
    del pod  # every feature of kube's default profile is implemented (module docstring)
    return []


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
