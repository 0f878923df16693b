"""`PrioritySort`: kube-scheduler's default queue order."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from apis.pluginargs import NoArgs
from placement.pods.framework.interface import PodInfo, QueueSort
from plugins.pods.helper.args import args_of

__all__ = ["PrioritySort"]


class PrioritySort(QueueSort):
    """Higher priority first, then the pod queued earlier; kube stops there, and the pod key
    (`namespace/name`) settles the rest so that the order never depends on arrival order."""

    name = "PrioritySort"

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> PrioritySort:
        args_of(NoArgs, args)  # no args: any field is refused
        return cls()

    def sort_key(self, pod: PodInfo, queued_at: datetime) -> tuple[int, datetime, str]:
        return (-pod.priority, queued_at, pod.key)
