"""Victims: which pods on a node a preemptor needs gone, and which candidate node is best.

kube-scheduler's `SelectVictimsOnNode` for many rows at once (remove every potential victim,
then reprieve them from the most important down while the pod still fits) and its candidate
ranking (`pickOneNodeForPreemption`), shared by default preemption, gang preemption and quota
preemption.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from placement.pods.cluster.nodes import NodeSnapshot, ResourceMatrix
from placement.pods.framework.events import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER
from placement.pods.framework.interface import Candidate, PodCycle, PodInfo
from placement.pods.preemption.disruption import Budget, split_by_budgets

__all__ = [
    "FitsHook",
    "importance_key",
    "num_candidates",
    "pick_candidate",
    "preempted_by_scheduler",
    "select_victims",
    "start_time",
]

_INT32_SHIFT = 2**31  # kube adds MaxInt32+1 to each priority before summing

FitsHook = Callable[[PodCycle, PodInfo, str, Sequence[PodInfo]], bool]
"""`PreemptionHooks.preemption_fits`, bound."""


def start_time(pod: PodInfo, now: datetime) -> float:
    """status.startTime as a timestamp, else now's (kube: a pod that has not started yet is
    the newest)."""
    started = pod.started
    return now.timestamp() if started is None else started


def importance_key(now: datetime) -> Callable[[PodInfo], tuple[int, float, str]]:
    """Sort key, most important first: higher priority, then earlier start, then key."""
    moment = now.timestamp()

    def key(pod: PodInfo) -> tuple[int, float, str]:
        started = pod.started
        return (-pod.priority, moment if started is None else started, pod.key)

    return key


def pick_candidate(candidates: Sequence[Candidate], now: datetime) -> Candidate | None:
    """kube's pickOneNodeForPreemption: fewest PodDisruptionBudget violations, lowest
    highest-victim priority, smallest sum of priorities, fewest victims, latest earliest-start
    of the most important victims, then the first node by name."""
    if not candidates:
        return None
    moment = now.timestamp()

    def rank(c: Candidate) -> tuple[int, int, int, int, float, str]:
        total = sum(v.priority + _INT32_SHIFT for v in c.victims)
        if c.victims:
            top = c.highest
            earliest = min(start_time(v, now) for v in c.victims if v.priority == top)
        else:
            earliest = moment
        return (c.violations, c.highest, total, len(c.victims), -earliest, c.node)

    return min(candidates, key=rank)


def preempted_by_scheduler(pod: PodInfo) -> bool:
    """The pod carries the DisruptionTarget condition a scheduler's preemption sets."""
    status = pod.pod.status
    for cond in (status.conditions if status else None) or ():
        if cond.get("type") == DISRUPTION_TARGET and cond.get("reason") == PREEMPTION_BY_SCHEDULER:
            return True
    return False


def num_candidates(potential: int, percentage: int, absolute: int) -> int:
    """kube's calculateNumCandidates."""
    n = potential * percentage // 100
    return min(max(n, absolute), potential)


def select_victims(
    cycle: PodCycle,
    pod: PodInfo,
    nodes: NodeSnapshot,
    lists: Mapping[int, Sequence[PodInfo]],
    fits_hooks: Sequence[FitsHook] = (),
    failures: dict[str, int] | None = None,
    budgets: Sequence[Budget] = (),
) -> list[Candidate]:
    """For each row and its potential victims (most important first): remove them all;
    if the pod then fits, reprieve them from the most important down while it still fits.
    All rows at once: one filter pass after the removal and one per reprieve round.

    With PodDisruptionBudgets, as kube: the victims whose eviction violates a budget are
    reprieved first, then the others (each group most important first); each candidate counts
    the violating victims it keeps (`Candidate.violations`), its victims most important first.

    Each row's verdict must see its own victims gone, not the other rows' (kube checks every
    node on its own). The resource filters read only their row; a plugin that looks at which
    pods run where (anti-affinity or spread over a zone) reads the snapshot's pod overlay,
    which in a pass of all rows holds every row's victims. When a pass made a plugin read it,
    the rows are decided again one at a time (only then: most preemptions involve no such
    plugin)."""
    host = cycle.host
    assert host is not None
    if not lists:
        return []
    if budgets:
        return _with_budgets(cycle, pod, nodes, lists, fits_hooks, failures, budgets)
    read: list[bool] = []
    found = _select_victims(cycle, pod, nodes, lists, fits_hooks, failures, read)
    if not read or len(lists) == 1:
        return found
    exact: list[Candidate] = []
    for row in sorted(lists):
        exact.extend(_select_victims(cycle, pod, nodes, {row: lists[row]}, fits_hooks, None, []))
    return exact


def _with_budgets(
    cycle: PodCycle,
    pod: PodInfo,
    nodes: NodeSnapshot,
    lists: Mapping[int, Sequence[PodInfo]],
    fits_hooks: Sequence[FitsHook],
    failures: dict[str, int] | None,
    budgets: Sequence[Budget],
) -> list[Candidate]:
    """`select_victims` with the violating victims of each row reprieved first."""
    ordered: dict[int, list[PodInfo]] = {}
    violating: dict[int, set[str]] = {}
    for row, pods in lists.items():
        bad, good = split_by_budgets(pods, budgets)
        ordered[row] = [*bad, *good]
        violating[row] = {p.key for p in bad}
    found = select_victims(cycle, pod, nodes, ordered, fits_hooks, failures)
    key = importance_key(cycle.now)
    out: list[Candidate] = []
    for c in found:
        kept = violating[c.row]
        victims = tuple(sorted(c.victims, key=key))
        count = sum(1 for v in victims if v.key in kept)
        out.append(dataclasses.replace(c, victims=victims, violations=count))
    return out


def _select_victims(
    cycle: PodCycle,
    pod: PodInfo,
    nodes: NodeSnapshot,
    lists: Mapping[int, Sequence[PodInfo]],
    fits_hooks: Sequence[FitsHook],
    failures: dict[str, int] | None,
    read: list[bool],
) -> list[Candidate]:
    """`select_victims` for all rows at once; `read` gets an entry when a filter read the pod
    overlay."""
    host = cycle.host
    assert host is not None
    rows = sorted(lists)

    def noted(keys: Callable[[], Iterable[str]]) -> Callable[[], Iterable[str]]:
        def gone() -> Iterable[str]:
            read.append(True)
            return keys()

        return gone

    # Per victim, over the snapshot's columns: `amounts[i, j]` is what the j-th potential
    # victim of rows[i] requests (zeros past a row's last), pods of one shape sharing a shape
    # vector, so that each round adds or takes away all rows' amounts in one operation.
    shapes: dict[tuple[tuple[str, int], ...], int] = {}
    vectors: list[np.ndarray[Any, np.dtype[np.int64]]] = []
    # By the mapping's id too: the victims (alive through this call) of one shape usually
    # share the pod cache's requests mapping.
    known: dict[int, int] = {}

    def shape_of(requests: Mapping[str, int]) -> int:
        found = known.get(id(requests))
        if found is None:
            shape = tuple(requests.items())
            found = shapes.get(shape)
            if found is None:
                found = shapes[shape] = len(vectors)
                vectors.append(nodes.vector(requests))
            known[id(requests)] = found
        return found

    longest = max(len(lists[row]) for row in rows)
    padded = [[shape_of(v.requests) for v in lists[row]] for row in rows]
    vectors.append(np.zeros(nodes.requested.shape[1], dtype=np.int64))  # past a row's last
    table = np.stack(vectors)
    blank = len(vectors) - 1
    amounts = table[np.array([p + [blank] * (longest - len(p)) for p in padded], dtype=np.intp)]
    position = {row: i for i, row in enumerate(rows)}
    requested: ResourceMatrix = nodes.requested.copy()
    requested[rows] -= amounts.sum(axis=1)
    mask = np.zeros(nodes.size, dtype=bool)
    mask[rows] = True
    every = nodes.overlay.removing_lazily(
        noted(lambda: (v.key for row in rows for v in lists[row]))
    )
    trial = dataclasses.replace(nodes, requested=requested, overlay=every)
    ok, diag = host.run_filters(cycle, pod, trial, mask)
    if failures is not None:
        for message, count in diag.counts.items():
            failures[message] = failures.get(message, 0) + count
    alive = [row for row in rows if ok[row]]
    removed: dict[int, list[PodInfo]] = {row: list(lists[row]) for row in alive}
    if fits_hooks:
        alive = [
            row
            for row in alive
            if all(h(cycle, pod, nodes.names[row], removed[row]) for h in fits_hooks)
        ]
    victims: dict[int, list[PodInfo]] = {row: [] for row in alive}
    longest = max((len(lists[row]) for row in alive), default=0)
    for j in range(longest):
        trying = [row for row in alive if j < len(lists[row])]
        if not trying:
            break
        requested[trying] += amounts[[position[row] for row in trying], j]
        mask = np.zeros(nodes.size, dtype=bool)
        mask[trying] = True

        # Gone: what each row has removed so far, but the victim tried back on its row.
        def gone(trying: list[int] = trying, j: int = j) -> Iterable[str]:
            back = {lists[row][j].key for row in trying}
            return (v.key for row in alive for v in removed[row] if v.key not in back)

        overlay = nodes.overlay.removing_lazily(noted(gone))
        trial = dataclasses.replace(nodes, requested=requested, overlay=overlay)
        ok, _ = host.run_filters(cycle, pod, trial, mask)
        again: list[int] = []  # rows whose j-th victim goes after all
        for row in trying:
            pod_j = lists[row][j]
            still = bool(ok[row])
            if still and fits_hooks:
                rest = [v for v in removed[row] if v is not pod_j]
                still = all(h(cycle, pod, nodes.names[row], rest) for h in fits_hooks)
                if still:
                    removed[row] = rest
            elif still:
                removed[row] = [v for v in removed[row] if v is not pod_j]
            if not still:
                again.append(row)
                victims[row].append(pod_j)
        if again:
            requested[again] -= amounts[[position[row] for row in again], j]
    return [Candidate(nodes.names[row], row, tuple(victims[row])) for row in alive]
