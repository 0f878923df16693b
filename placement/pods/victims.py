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

from placement.pods.framework import Candidate, PodCycle, PodInfo
from placement.pods.nodes import NodeSnapshot, ResourceMatrix

__all__ = [
    "FitsHook",
    "importance_key",
    "num_candidates",
    "pick_candidate",
    "select_victims",
    "start_time",
]

_INT32_SHIFT = 2**31  # kube adds MaxInt32+1 to each priority before summing

FitsHook = Callable[[PodCycle, PodInfo, str, Sequence[PodInfo]], bool]
"""`PreemptionHooks.preemption_fits`, bound."""


def start_time(pod: PodInfo, now: datetime) -> datetime:
    """status.startTime, else now (kube: a pod that has not started yet is the newest)."""
    status = pod.pod.status
    raw: Any = getattr(status, "start_time", None) if status is not None else None
    if raw is None and status is not None and status.model_extra:
        raw = status.model_extra.get("startTime")
    if isinstance(raw, datetime):
        return raw
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            return now
    return now


def importance_key(now: datetime) -> Callable[[PodInfo], tuple[int, float, str]]:
    """Sort key, most important first: higher priority, then earlier start, then key.
    The key remembers each pod's (the start time is parsed once per pod and key)."""
    seen: dict[int, tuple[PodInfo, tuple[int, float, str]]] = {}

    def key(pod: PodInfo) -> tuple[int, float, str]:
        found = seen.get(id(pod))
        if found is not None and found[0] is pod:
            return found[1]
        value = (-pod.priority, start_time(pod, now).timestamp(), pod.key)
        seen[id(pod)] = (pod, value)
        return value

    return key


def pick_candidate(candidates: Sequence[Candidate], now: datetime) -> Candidate | None:
    """kube's pickOneNodeForPreemption without PDBs: lowest highest-victim priority, smallest
    sum of priorities, fewest victims, latest earliest-start of the most important victims,
    then the first node by name."""
    if not candidates:
        return None

    def rank(c: Candidate) -> tuple[int, int, int, float, str]:
        total = sum(v.priority + _INT32_SHIFT for v in c.victims)
        if c.victims:
            top = c.highest
            earliest = min(start_time(v, now).timestamp() for v in c.victims if v.priority == top)
        else:
            earliest = now.timestamp()
        return (c.highest, total, len(c.victims), -earliest, c.node)

    return min(candidates, key=rank)


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
) -> list[Candidate]:
    """For each row and its potential victims (most important first): remove them all;
    if the pod then fits, reprieve them from the most important down while it still fits.
    All rows at once: one filter pass after the removal and one per reprieve round.

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
    read: list[bool] = []
    found = _select_victims(cycle, pod, nodes, lists, fits_hooks, failures, read)
    if not read or len(lists) == 1:
        return found
    exact: list[Candidate] = []
    for row in sorted(lists):
        exact.extend(_select_victims(cycle, pod, nodes, {row: lists[row]}, fits_hooks, None, []))
    return exact


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

    shapes: dict[tuple[tuple[str, int], ...], np.ndarray[Any, np.dtype[np.int64]]] = {}

    def vector_of(requests: Mapping[str, int]) -> np.ndarray[Any, np.dtype[np.int64]]:
        shape = tuple(requests.items())
        found = shapes.get(shape)
        if found is None:
            found = shapes[shape] = nodes.vector(requests)
        return found

    # Per victim, over the snapshot's columns (pods of one shape share one vector).
    vectors = {row: [vector_of(v.requests) for v in lists[row]] for row in rows}
    requested: ResourceMatrix = nodes.requested.copy()
    for row in rows:
        for vector in vectors[row]:
            requested[row] -= vector
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
        for row in trying:
            requested[row] += vectors[row][j]
        mask = np.zeros(nodes.size, dtype=bool)
        mask[trying] = True

        # Gone: what each row has removed so far, but the victim tried back on its row.
        def gone(trying: list[int] = trying, j: int = j) -> Iterable[str]:
            back = {lists[row][j].key for row in trying}
            return (v.key for row in alive for v in removed[row] if v.key not in back)

        overlay = nodes.overlay.removing_lazily(noted(gone))
        trial = dataclasses.replace(nodes, requested=requested, overlay=overlay)
        ok, _ = host.run_filters(cycle, pod, trial, mask)
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
                requested[row] -= vectors[row][j]
                victims[row].append(pod_j)
    return [Candidate(nodes.names[row], row, tuple(victims[row])) for row in alive]
