"""A pending or placed pod as the scheduler sees it: `PodInfo` and the key pods are known by.

Computed once per pod version (requests summed, priority resolved) so that no scheduling cycle
walks a pod's containers again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from apis.core import Pod
from placement.pods.cluster.requests import Requests, non_zero_requests, pod_requests

__all__ = ["PodInfo", "pod_key", "spec_changed"]


def pod_key(namespace: str | None, name: str | None) -> str:
    """`namespace/name`, the key pods are known by everywhere in the engine."""
    return f"{namespace or ''}/{name or ''}"


@dataclass(frozen=True, eq=False)
class PodInfo:
    """A pod with what every cycle needs computed once: its key, requests, priority.

    `priority` is resolved by the engine (spec.priority, else the pod's PriorityClass, else the
    global default class, else 0); `preempt_never` from spec.preemptionPolicy or the class."""

    pod: Pod
    key: str
    uid: str
    requests: Requests
    non_zero: Requests
    priority: int = 0
    preempt_never: bool = False

    @classmethod
    def of(
        cls,
        pod: Pod,
        priority: int | None = None,
        preempt_never: bool | None = None,
        *,
        requests: tuple[Requests, Requests] | None = None,
    ) -> PodInfo:
        """`requests`: the pod's (`pod_requests`, `non_zero_requests`) when the caller knows
        them already (the engine keeps them per pod shape: the exact sums are costly)."""
        meta = pod.metadata
        if requests is None:
            requests = pod_requests(pod), non_zero_requests(pod)
        return cls(
            pod=pod,
            key=pod_key(meta.namespace, meta.name),
            uid=meta.uid or "",
            requests=requests[0],
            non_zero=requests[1],
            priority=(pod.spec.priority or 0) if priority is None else priority,
            preempt_never=(
                pod.spec.preemption_policy == "Never" if preempt_never is None else preempt_never
            ),
        )

    @property
    def namespace(self) -> str:
        return self.pod.metadata.namespace or ""

    @property
    def name(self) -> str:
        return self.pod.metadata.name or ""

    @property
    def labels(self) -> Mapping[str, str]:
        return self.pod.metadata.labels or {}

    @property
    def node_name(self) -> str | None:
        """spec.nodeName: where the pod is bound (None while pending)."""
        return self.pod.spec.node_name or None

    @property
    def nominated_node(self) -> str | None:
        status = self.pod.status
        return (status.nominated_node_name or None) if status else None

    @property
    def created(self) -> datetime | None:
        return self.pod.metadata.creation_timestamp

    @property
    def terminating(self) -> bool:
        return self.pod.metadata.deletion_timestamp is not None

    @property
    def finished(self) -> bool:
        """Succeeded or Failed: the pod no longer holds its node's resources."""
        status = self.pod.status
        return status is not None and status.phase in ("Succeeded", "Failed")

    @property
    def gated(self) -> bool:
        return bool(self.pod.spec.scheduling_gates)

    @cached_property
    def started(self) -> float | None:
        """status.startTime as a POSIX timestamp, read once per pod version (preemption ranks
        thousands of victims per preemptor by it); None when absent or unreadable."""
        status = self.pod.status
        raw: Any = getattr(status, "start_time", None) if status is not None else None
        if raw is None and status is not None and status.model_extra:
            raw = status.model_extra.get("startTime")
        if isinstance(raw, str):
            try:
                raw = datetime.fromisoformat(raw.replace("Z", "+00:00"))
            except ValueError:
                return None
        return raw.timestamp() if isinstance(raw, datetime) else None


def spec_changed(old: Pod, new: Pod) -> bool:
    """An update that may change where the pod fits (spec or labels), not a status echo."""
    return old.spec != new.spec or old.metadata.labels != new.metadata.labels
