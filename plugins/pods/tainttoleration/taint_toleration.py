"""`TaintToleration`: NoSchedule / NoExecute taints keep out the pods that do not tolerate
them; untolerated PreferNoSchedule taints lower a node's score.

Only tainted rows are looked at, in Python, grouped by their taint list (a pool of nodes
shares one), and the verdicts per group are kept per snapshot for each distinct set of
tolerations: pods of one workload pay once per node event, then two mask operations each.
The reason names the node's first untolerated taint, as kube's `FindMatchingUntoleratedTaint`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from apis.pluginargs import NoArgs
from placement.arrays import BoolMask, RowIndex, ScoreVector
from placement.pods.cluster.nodes import NodeSnapshot, Taint
from placement.pods.framework.events import NODE_ADD_OR_UPDATE, RequeueHints
from placement.pods.framework.interface import (
    MAX_NODE_SCORE,
    Filter,
    FilterResult,
    PodCycle,
    PodInfo,
    Reason,
    Score,
)
from placement.pods.framework.noscore import same_scores
from plugins.pods.helper.args import args_of
from plugins.pods.helper.normalize_score import default_normalize
from plugins.pods.helper.snapshot_cache import PerSnapshot, frozen, on_rows
from plugins.pods.helper.tolerations import HARD_EFFECTS, Tol, cycle_tolerations, tolerated

__all__ = ["PREFER_NO_SCHEDULE", "TaintToleration", "untolerated_reason"]

PREFER_NO_SCHEDULE = "PreferNoSchedule"


def untolerated_reason(taint: Taint) -> str:
    """kube's message, Go's `{%s: %s}` (an empty value leaves `{key: }`)."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


class _Groups(NamedTuple):
    """The tainted rows of one snapshot, grouped by identical taint lists."""

    groups: tuple[tuple[tuple[Taint, ...], npt.NDArray[np.intp]], ...]
    any_hard: bool
    any_soft: bool


def _group(nodes: NodeSnapshot) -> _Groups:
    rows: dict[tuple[Taint, ...], list[int]] = {}
    for row, taints in nodes.taints.items():
        rows.setdefault(taints, []).append(row)
    groups = tuple((t, frozen(np.array(r, dtype=np.intp))) for t, r in rows.items())
    every = [taint for taints in rows for taint in taints]
    return _Groups(
        groups,
        any(t.effect in HARD_EFFECTS for t in every),
        any(t.effect == PREFER_NO_SCHEDULE for t in every),
    )


class _Verdict(NamedTuple):
    fits: BoolMask  # rows with no untolerated hard taint
    reasons: tuple[tuple[str, BoolMask], ...]  # message -> rows it covers


class TaintToleration(Filter, Score, RequeueHints):
    name = "TaintToleration"
    requeue_on = frozenset({NODE_ADD_OR_UPDATE})
    """kube registers node events only: freed room does not help a pod this plugin rejected."""

    def __init__(self) -> None:
        self._groups = PerSnapshot(lambda nodes: nodes.taints, _group)

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> TaintToleration:
        args_of(NoArgs, args)  # no args: any field is refused
        return cls()

    def _verdict(self, nodes: NodeSnapshot, groups: _Groups, tols: tuple[Tol, ...]) -> _Verdict:
        fits = np.ones(nodes.size, dtype=bool)
        by_message: dict[str, BoolMask] = {}
        for taints, rows in groups.groups:
            first = next(
                (t for t in taints if t.effect in HARD_EFFECTS and not tolerated(tols, t)), None
            )
            if first is None:
                continue
            fits[rows] = False
            message = untolerated_reason(first)
            mask = by_message.get(message)
            if mask is None:
                mask = by_message[message] = np.zeros(nodes.size, dtype=bool)
            mask[rows] = True
        return _Verdict(
            frozen(fits), tuple((m, frozen(rows)) for m, rows in sorted(by_message.items()))
        )

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        groups = self._groups.get(nodes)
        if not groups.any_hard:
            return FilterResult(candidates)
        tols = cycle_tolerations(cycle, pod)
        key = ("filter", tols)
        verdict = self._groups.memo.get(key)
        if verdict is None:
            verdict = self._groups.memo[key] = self._verdict(nodes, groups, tols)
        if not verdict.reasons:
            return FilterResult(candidates)
        found = verdict.reasons

        def explain() -> tuple[Reason, ...]:
            return tuple(Reason(candidates & rows, m, False) for m, rows in found)

        return FilterResult(candidates & verdict.fits, explain=explain)

    def _soft_counts(self, nodes: NodeSnapshot, groups: _Groups, tols: tuple[Tol, ...]) -> Any:
        # kube's PreScore keeps the tolerations with an empty or PreferNoSchedule effect.
        soft = tuple(t for t in tols if t.effect in ("", PREFER_NO_SCHEDULE))
        counts = np.zeros(nodes.size, dtype=np.int64)
        for taints, rows in groups.groups:
            counts[rows] = sum(
                1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not tolerated(soft, t)
            )
        return frozen(counts)

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector:
        groups = self._groups.get(nodes)
        if not groups.any_soft:
            return same_scores(MAX_NODE_SCORE, len(rows))  # no preference: 100 everywhere
        tols = cycle_tolerations(cycle, pod)
        key = ("score", tols)
        counts = self._groups.memo.get(key)
        if counts is None:
            counts = self._groups.memo[key] = self._soft_counts(nodes, groups, tols)
        return default_normalize(on_rows(counts, rows, nodes.size), reverse=True, nonnegative=True)
