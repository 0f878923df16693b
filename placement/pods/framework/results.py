"""What extension points answer: status codes, filter reasons, and each point's result type.

kube-scheduler's `framework.Status` and the results of PreFilter, Filter, PostFilter and Permit,
plus `Diagnosis` (kube's FitError: why a pod fits no node, in kube's message format).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum

import numpy as np

from placement.arrays import BoolMask
from placement.pods.cluster.podinfo import PodInfo
from placement.pods.framework.events import Action

__all__ = [
    "POD_SUCCESS",
    "SKIP",
    "Diagnosis",
    "FilterResult",
    "PermitResult",
    "PodCode",
    "PodStatus",
    "PostFilterResult",
    "PreBindResult",
    "PreFilterResult",
    "Reason",
    "one_node_message",
]


class PodCode(IntEnum):
    """kube-scheduler's status codes, in ascending severity."""

    SUCCESS = 0
    SKIP = 1
    """The plugin has nothing to do for this pod (PreFilter: its Filter is skipped too)."""
    WAIT = 2
    """Permit only: hold the pod on its node until allowed, rejected or timed out."""
    UNSCHEDULABLE = 3
    """Not now: preemption or a cluster change may help."""
    UNRESOLVABLE = 4
    """UnschedulableAndUnresolvable: preemption cannot help (node affinity, taints, ...)."""
    ERROR = 5
    """A plugin failed; the pod is retried with backoff."""


@dataclass(frozen=True)
class PodStatus:
    """A code with its reasons and the plugin that produced it."""

    code: PodCode = PodCode.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code <= PodCode.SKIP

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @classmethod
    def unschedulable(cls, plugin: str, *reasons: str) -> PodStatus:
        return cls(PodCode.UNSCHEDULABLE, reasons, plugin)

    @classmethod
    def unresolvable(cls, plugin: str, *reasons: str) -> PodStatus:
        return cls(PodCode.UNRESOLVABLE, reasons, plugin)

    @classmethod
    def error(cls, plugin: str, *reasons: str) -> PodStatus:
        return cls(PodCode.ERROR, reasons, plugin)


POD_SUCCESS = PodStatus()
SKIP = PodStatus(PodCode.SKIP)


@dataclass(frozen=True)
class Reason:
    """Why some rows failed a filter: the rows, the message, and whether preemption could
    help them (Unschedulable) or not (UnschedulableAndUnresolvable)."""

    rows: BoolMask
    message: str
    resolvable: bool = True


@dataclass(frozen=True)
class PreFilterResult:
    """`nodes`, when set, restricts the cycle to these rows (NodeName, a nominated node).
    `retry_at`, with a refusal: when the refusal lapses by itself (a PodGroup's backoff ends),
    so the pod is tried again then rather than left to wait for an event."""

    status: PodStatus = POD_SUCCESS
    nodes: BoolMask | None = None
    retry_at: datetime | None = None


@dataclass(frozen=True)
class FilterResult:
    """The rows that still fit, and why the others (those it removed) do not. Reasons are
    masks, given at once (`reasons`) or on demand (`explain`); a removed row no reason covers
    gets `default`."""

    mask: BoolMask
    reasons: tuple[Reason, ...] = ()
    default: Reason | None = None
    status: PodStatus = POD_SUCCESS  # ERROR only: a filter that cannot decide for any node
    explain: Callable[[], tuple[Reason, ...]] | None = None
    """More reasons, computed only when someone asks (`all_reasons`): the engine needs them
    when no node fits (the Diagnosis) or in explain mode, and most pods fit somewhere, so a
    filter whose reasons cost anything defers them here. The callable must read only what
    the filter read (the snapshot is immutable), so calling it later gives the same answer."""

    def all_reasons(self) -> tuple[Reason, ...]:
        """`reasons` followed by the deferred ones."""
        if self.explain is None:
            return self.reasons
        return self.reasons + self.explain()


@dataclass(frozen=True)
class PostFilterResult:
    """What a PostFilter (preemption) found: a node to nominate and the pods to delete."""

    status: PodStatus
    nominated_node: str | None = None
    victims: tuple[PodInfo, ...] = ()
    nominations: tuple[tuple[str, str], ...] = ()
    """(pod key, node) for more pending pods than the one in the cycle (gang preemption: every
    member gets the node its victims free; victims may then be on several nodes)."""


@dataclass(frozen=True)
class PermitResult:
    status: PodStatus = POD_SUCCESS  # SUCCESS, WAIT (with timeout) or UNSCHEDULABLE
    timeout: timedelta = timedelta(0)


@dataclass(frozen=True)
class PreBindResult:
    """What PreBind decided: a status (not ok: the pod is unreserved and retried) and the API
    writes the shell must perform before the pod's binding (volume bindings)."""

    status: PodStatus = POD_SUCCESS
    actions: tuple[Action, ...] = ()


@dataclass(frozen=True)
class Diagnosis:
    """Why a pod fits no node: the counts per message over nodes, the rows preemption may
    help, and the PreFilter / PostFilter messages (kube-scheduler's FitError)."""

    total_nodes: int
    counts: Mapping[str, int]
    resolvable: BoolMask
    pre_filter: str = ""
    post_filter: str = ""
    plugins: frozenset[str] = frozenset()

    def message(self) -> str:
        """`0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint
        {spot: true}.` with kube-scheduler's ordering (the "count reason" strings sorted).

        As kube-scheduler v1.36's FitError.Error: the PreFilter message replaces the node
        counts; the PostFilter message follows after a space and brings its own final period
        (`... 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims
        found for incoming pod.`; older releases doubled that period)."""
        text = f"0/{self.total_nodes} nodes are available:"
        if self.pre_filter:
            text += f" {self.pre_filter}."
        else:
            parts = sorted(f"{count} {reason}" for reason, count in self.counts.items())
            if parts:
                text += f" {', '.join(parts)}."
        if self.post_filter:
            text += f" {self.post_filter}"
        return text


def one_node_message(reasons: Iterable[str]) -> str:
    """The message of a pod refused on its chosen node after Filter: rejected at Reserve or
    Permit, or while waiting at Permit (a timeout, a plugin's rejection). kube-scheduler
    reports these as a FitError over that one node, each reason counted once per occurrence
    (`0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin
    Coscheduling.`); a rejection without a reason leaves `0/1 nodes are available:`."""
    counts = Counter(reasons)
    return Diagnosis(total_nodes=1, counts=counts, resolvable=np.zeros(1, dtype=bool)).message()
