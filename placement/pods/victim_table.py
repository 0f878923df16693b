"""Default preemption's victim search and choice of node on arrays, when no plugin hooks in.

`victims.select_victims` followed by `victims.pick_candidate` decides, for every candidate row,
which of its lower-priority pods go (remove them all, then reprieve from the most important down
while the pod still fits) and then ranks the rows. With several hundred candidate rows (kube
examines `max(10%, 100)` of the nodes) that is thousands of `PodInfo` walks per preemptor. Here
the same decisions are taken on arrays:

* **Per node, once.** `VictimTable` keeps each node's pods sorted most important first (higher
  priority, earlier start, key) with their priorities, start times and requests as arrays. An
  entry stands while the node holds the very same `PodInfo` objects; a pod that has not started
  ranks as started now, after every started pod of its priority as long as no start time lies
  ahead of now (else the row is sorted afresh for this cycle only). A preemptor's potential
  victims on a node are then a suffix of that order (the pods below its priority).
* **All rows at once.** Victim `j` of every row is one cell of a rows x victims matrix; the
  filter passes are the ones `select_victims` runs (one with every victim gone, one per reprieve
  round), and the ranking (`pick_candidate`'s criteria) is one `lexsort` over per-row sums.

Only the winner's victims become a `Candidate`. When a pass makes a plugin read the overlay's
removed pods (anti-affinity, spread), the batched verdicts may mix rows, so the search is handed
to `select_victims` with the same lists, which decides such rows one at a time: the outcome is
always the one `select_victims` + `pick_candidate` give.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from placement.arrays import BoolMask
from placement.pods.framework import Candidate, PodCycle, PodInfo
from placement.pods.nodes import NodeSnapshot
from placement.pods.victims import importance_key, pick_candidate, select_victims

__all__ = ["VictimTable", "best_candidate"]

_SHIFT = 2**31  # kube adds MaxInt32+1 to each priority before summing
_NO_VICTIM = -(2**31) - 1  # `Candidate.highest` without victims


@dataclasses.dataclass(eq=False)
class _Entry:
    """One node's pods, most important first (see the module docstring)."""

    pods: tuple[PodInfo, ...]  # as the cluster listed them: the entry stands while equal
    ordered: tuple[PodInfo, ...]
    negated: list[int]  # -priority of `ordered` (ascending, for bisect)
    priority: np.ndarray[Any, np.dtype[np.int64]]
    started: np.ndarray[Any, np.dtype[np.float64]]  # nan: not started
    latest: float  # the latest start time (-inf: none)
    resources: tuple[str, ...] = ()
    amounts: np.ndarray[Any, np.dtype[np.int64]] | None = None  # per pod, over `resources`

    def requests(self, nodes: NodeSnapshot) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Each pod's requests over the snapshot's columns (kept while they are the same)."""
        if self.amounts is None or self.resources != nodes.resources:
            width = len(nodes.resources)
            rows = [nodes.vector(p.requests) for p in self.ordered]
            self.amounts = np.stack(rows) if rows else np.zeros((0, width), dtype=np.int64)
            self.resources = nodes.resources
        return self.amounts


def _entry(pods: tuple[PodInfo, ...], now: datetime) -> _Entry:
    latest = max((p.started for p in pods if p.started is not None), default=-math.inf)
    if latest < now.timestamp():
        ordered = sorted(pods, key=_order)
    else:  # a start ahead of now: now's place among them decides
        ordered = sorted(pods, key=importance_key(now))
    return _Entry(
        pods=pods,
        ordered=tuple(ordered),
        negated=[-p.priority for p in ordered],
        priority=np.array([p.priority for p in ordered], dtype=np.int64),
        started=np.array(
            [math.nan if p.started is None else p.started for p in ordered], dtype=np.float64
        ),
        latest=latest,
    )


def _order(pod: PodInfo) -> tuple[int, float, str]:
    """`victims.importance_key` while every start time lies before now."""
    started = pod.started
    return (-pod.priority, math.inf if started is None else started, pod.key)


class VictimTable:
    """Per node, its pods ranked for preemption (see the module docstring)."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def entry(self, cycle: PodCycle, node: str, moment: float) -> _Entry:
        """The node's entry; `moment` is `cycle.now` as a timestamp."""
        pods = tuple(cycle.cluster.pods_on(node))
        found = self._entries.get(node)
        if found is not None and found.pods == pods and found.latest < moment:
            return found
        made = _entry(pods, cycle.now)
        if made.latest < moment:
            if len(self._entries) > 20_000:
                self._entries.clear()  # nodes gone for good are forgotten now and then
            self._entries[node] = made
        return made


def best_candidate(
    table: VictimTable,
    cycle: PodCycle,
    pod: PodInfo,
    nodes: NodeSnapshot,
    rows: Sequence[int],
) -> Candidate | None:
    """`pick_candidate(select_victims(...))` for these rows (ascending) with every pod of lower
    priority as potential victims and no hooks: the best candidate, or None."""
    host = cycle.host
    assert host is not None
    if not len(rows):
        return None
    moment = cycle.now.timestamp()
    entries = [table.entry(cycle, nodes.names[row], moment) for row in rows]
    cuts = [bisect.bisect_right(e.negated, -pod.priority) for e in entries]
    lengths = np.array([len(e.ordered) - c for e, c in zip(entries, cuts, strict=True)])
    longest = int(lengths.max())
    width = len(nodes.resources)
    # Flat per victim, then padded to rows x longest (the pad points at a zero victim).
    flat_amounts = np.concatenate(
        [
            *(e.requests(nodes)[c:] for e, c in zip(entries, cuts, strict=True)),
            np.zeros((1, width), dtype=np.int64),
        ]
    )
    flat_priority = np.concatenate(
        [*(e.priority[c:] for e, c in zip(entries, cuts, strict=True)), np.zeros(1, dtype=np.int64)]
    )
    flat_started = np.concatenate(
        [*(e.started[c:] for e, c in zip(entries, cuts, strict=True)), np.zeros(1)]
    )
    flat_pods: list[PodInfo] = []
    for e, c in zip(entries, cuts, strict=True):
        flat_pods.extend(e.ordered[c:])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    column = np.arange(longest)
    valid = column[None, :] < lengths[:, None]
    index = np.where(valid, starts[:, None] + column[None, :], len(flat_pods))
    amounts = flat_amounts[index]  # rows x longest x resources
    row_ids = np.asarray(rows, dtype=np.intp)

    read: list[bool] = []

    def noted(keys: Callable[[], Iterable[str]]) -> Callable[[], Iterable[str]]:
        def gone() -> Iterable[str]:
            read.append(True)
            return keys()

        return gone

    def keys_of(out: BoolMask) -> list[str]:
        return [flat_pods[i].key for i in index[out]]

    requested = nodes.requested.copy()
    requested[row_ids] -= amounts.sum(axis=1)
    mask = np.zeros(nodes.size, dtype=bool)
    mask[row_ids] = True
    removed = valid.copy()
    overlay = nodes.overlay.removing_lazily(noted(lambda: keys_of(valid)))
    ok = host.fits(
        cycle, pod, dataclasses.replace(nodes, requested=requested, overlay=overlay), mask
    )
    if read:
        return _listed(cycle, pod, nodes, rows, entries, cuts)
    alive = ok[row_ids]
    removed &= alive[:, None]
    victim = np.zeros_like(valid)
    for j in range(longest):
        trying = alive & (lengths > j)
        if not trying.any():
            break
        tried = row_ids[trying]
        requested[tried] += amounts[trying, j]
        mask = np.zeros(nodes.size, dtype=bool)
        mask[tried] = True
        out = removed.copy()
        out[trying, j] = False  # tried back on its row
        overlay = nodes.overlay.removing_lazily(noted(functools.partial(keys_of, out)))
        trial = dataclasses.replace(nodes, requested=requested, overlay=overlay)
        ok = host.fits(cycle, pod, trial, mask)
        if read:
            return _listed(cycle, pod, nodes, rows, entries, cuts)
        back = np.zeros_like(trying)
        back[trying] = ok[tried]
        again = trying & ~back
        removed[back, j] = False
        victim[again, j] = True
        if again.any():
            requested[row_ids[again]] -= amounts[again, j]
    kept = np.flatnonzero(alive)
    if not kept.size:
        return None
    # pick_candidate's criteria, per alive row.
    victim, index = victim[kept], index[kept]
    priority = flat_priority[index]
    started = flat_started[index]
    started = np.where(np.isnan(started), moment, started)
    has = victim.any(axis=1)
    highest = np.where(has, priority[np.arange(kept.size), victim.argmax(axis=1)], _NO_VICTIM)
    total = np.where(victim, priority + _SHIFT, 0).sum(axis=1)
    number = victim.sum(axis=1)
    top = victim & (priority == highest[:, None])
    earliest = np.where(has, np.where(top, started, np.inf).min(axis=1), moment)
    best = int(np.lexsort((kept, -earliest, number, total, highest))[0])
    row = int(row_ids[kept[best]])
    chosen = tuple(flat_pods[int(i)] for i in index[best][victim[best]])
    return Candidate(nodes.names[row], row, chosen)


def _listed(
    cycle: PodCycle,
    pod: PodInfo,
    nodes: NodeSnapshot,
    rows: Sequence[int],
    entries: Sequence[_Entry],
    cuts: Sequence[int],
) -> Candidate | None:
    """`select_victims` on the same lists (a plugin reads the removed pods)."""
    lists = {int(row): list(e.ordered[c:]) for row, e, c in zip(rows, entries, cuts, strict=True)}
    return pick_candidate(select_victims(cycle, pod, nodes, lists), cycle.now)
