"""Default preemption's victim search and choice of node on arrays, when no plugin hooks in.

`victims.select_victims` followed by `victims.pick_candidate` decides, for every candidate row,
which of its lower-priority pods go (remove them all, then reprieve from the most important down
while the pod still fits) and then ranks the rows. With several hundred candidate rows (kube
examines `max(10%, 100)` of the nodes) that is thousands of `PodInfo` walks per preemptor. Here
the same decisions are taken on arrays:

* **Per node, once.** `VictimTable` keeps each node's pods sorted most important first (higher
  priority, earlier start, key) with their priorities, start times and requests as arrays. An
  entry stands until the cluster's `PodIndex` logs a count or uncount on the node (every change
  of a node's pods, an update of a running pod included, is one); a pod that has not started
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

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.framework.interface import Candidate, PodCycle, PodInfo
from placement.pods.preemption.victims import importance_key, pick_candidate, select_victims

__all__ = ["VictimTable", "best_candidate"]

_SHIFT = 2**31  # kube adds MaxInt32+1 to each priority before summing
_NO_VICTIM = -(2**31) - 1  # `Candidate.highest` without victims


@dataclasses.dataclass(eq=False)
class _Entry:
    """One node's pods, most important first (see the module docstring)."""

    ordered: tuple[PodInfo, ...]
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
        ordered=tuple(ordered),
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
        self._index: PodIndex | None = None  # whose changes `_generation` counts
        self._generation = 0
        self._last: _Gathered | None = None

    def entries(self, cycle: PodCycle, nodes: NodeSnapshot, rows: Sequence[int]) -> list[_Entry]:
        """The rows' entries, made again for the nodes whose pods were counted or uncounted
        since the last call (the cluster's `PodIndex` logs every change with its node)."""
        moment = cycle.now.timestamp()
        counted = cycle.cluster.counted
        changes = counted.changes_since(self._generation) if counted is self._index else None
        if changes is None or len(self._entries) > 20_000:
            self._entries.clear()  # another cluster, or too much happened since
        else:
            for change in changes:
                self._entries.pop(change.node, None)
        self._index, self._generation = counted, counted.generation
        names, get = nodes.names, self._entries.get
        out: list[_Entry] = []
        for row in rows:
            node = names[row]
            found = get(node)
            if found is None or found.latest >= moment:
                found = _entry(tuple(cycle.cluster.pods_on(node)), cycle.now)
                if found.latest < moment:
                    self._entries[node] = found
            out.append(found)
        return out

    def gather(self, pod: PodInfo, nodes: NodeSnapshot, entries: list[_Entry]) -> _Gathered:
        """The potential victims of these entries as padded arrays (the last call's again when
        the entries, the priority and the columns are the same)."""
        last = self._last
        if (
            last is not None
            and last.priority == pod.priority
            and last.resources is nodes.resources
            and last.entries == entries
        ):
            return last
        self._last = made = _gather(pod.priority, nodes, entries)
        return made


@dataclasses.dataclass(eq=False)
class _Gathered:
    """Row i's j-th potential victim (most important first) is `pods[index[i, j]]`, with its
    requests `amounts[i, j]`; `valid[i, j]` is False past the row's last (a zero victim)."""

    entries: list[_Entry]
    priority: int
    resources: tuple[str, ...]
    cuts: np.ndarray[Any, np.dtype[np.intp]]  # per row, its pods at or above the priority
    lengths: np.ndarray[Any, np.dtype[np.intp]]
    valid: BoolMask
    index: np.ndarray[Any, np.dtype[np.intp]]
    amounts: np.ndarray[Any, np.dtype[np.int64]]  # rows x victims x resources
    priorities: np.ndarray[Any, np.dtype[np.int64]]  # per flat pod (last: the zero victim)
    started: np.ndarray[Any, np.dtype[np.float64]]
    pods: list[PodInfo]


def _gather(priority: int, nodes: NodeSnapshot, entries: list[_Entry]) -> _Gathered:
    resources = nodes.resources
    sizes = np.fromiter((len(e.ordered) for e in entries), dtype=np.intp, count=len(entries))
    ends = np.cumsum(sizes)
    begins = ends - sizes
    priorities = np.concatenate([*(e.priority for e in entries), np.zeros(1, dtype=np.int64)])
    started = np.concatenate([*(e.started for e in entries), np.zeros(1)])
    amounts = np.concatenate(
        [
            *(
                e.amounts
                if e.amounts is not None and e.resources is resources
                else e.requests(nodes)
                for e in entries
            ),
            np.zeros((1, len(resources)), dtype=np.int64),
        ]
    )
    pods = list(itertools.chain.from_iterable(e.ordered for e in entries))
    # Each entry is sorted by priority, highest first: the pods below `priority` end it.
    above = np.concatenate(([0], np.cumsum(priorities[:-1] >= priority)))
    cuts = above[ends] - above[begins]
    lengths = sizes - cuts
    longest = int(lengths.max()) if lengths.size else 0
    column = np.arange(longest)
    valid = column[None, :] < lengths[:, None]
    index = np.where(valid, (begins + cuts)[:, None] + column[None, :], len(pods))
    return _Gathered(
        entries=entries,
        priority=priority,
        resources=resources,
        cuts=cuts,
        lengths=lengths,
        valid=valid,
        index=index,
        amounts=amounts[index],
        priorities=priorities,
        started=started,
        pods=pods,
    )


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
    entries = table.entries(cycle, nodes, rows)
    g = table.gather(pod, nodes, entries)
    lengths, valid, index, amounts, flat_pods = g.lengths, g.valid, g.index, g.amounts, g.pods
    longest = valid.shape[1]
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
        return _listed(cycle, pod, nodes, rows, g)
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
            return _listed(cycle, pod, nodes, rows, g)
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
    priority = g.priorities[index]
    started = g.started[index]
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
    cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: Sequence[int], g: _Gathered
) -> Candidate | None:
    """`select_victims` on the same lists (a plugin reads the removed pods)."""
    lists = {
        int(row): list(e.ordered[int(c) :])
        for row, e, c in zip(rows, g.entries, g.cuts, strict=True)
    }
    return pick_candidate(select_victims(cycle, pod, nodes, lists), cycle.now)
