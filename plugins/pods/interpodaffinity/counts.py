"""Per-node counts of the counted pods that InterPodAffinity asks about, kept across cycles.

Two questions come back every cycle of a pod with inter-pod terms, and both are answered from
counts kept up to date from the pod index's change log (`PodIndex.changes_since`), so a cycle
costs the pods counted or uncounted since the last one, not every pod:

* `Matches`: where are the pods matching a conjunction of the incoming pod's terms (its
  selectors in their namespaces)? One per distinct conjunction, seeded from
  `PodIndex.matching` (the index narrows by label), kept in an LRU;
* `Carried`: where are the pods carrying a term of their own (required anti-affinity against
  the incoming pod, and the terms that score it), grouped by term shape: the replicas of one
  workload share one entry, and a cycle checks each shape once against the incoming pod.

Both give a count per row of a snapshot (`rows`), rebuilt when the node set changes, and the
pods behind the counts (`members`) for a hypothetical snapshot's `PodOverlay`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.cluster.podinfo import PodInfo
from plugins.pods.interpodaffinity.terms import Term, terms_of

__all__ = ["Carried", "Conjunction", "Counts", "Matches", "Tally", "domain_totals", "hypothetical"]

Counts = npt.NDArray[np.int64]
_KEPT = 128
"""Conjunctions whose counts `Matches` keeps (the least recently used go first)."""


@dataclass
class Tally:
    """Pods by key with the node each is counted on, their count per node, and the count per
    row of the last snapshot's node set."""

    members: dict[str, tuple[PodInfo, str]] = field(default_factory=dict)
    per_node: dict[str, int] = field(default_factory=dict)
    names: tuple[str, ...] | None = None
    by_row: Counts | None = None

    def put(self, info: PodInfo, node: str, sign: int, nodes: NodeSnapshot | None) -> None:
        if sign > 0:
            self.members[info.key] = (info, node)
        else:
            self.members.pop(info.key, None)
        left = self.per_node.get(node, 0) + sign
        if left:
            self.per_node[node] = left
        else:
            self.per_node.pop(node, None)
        if self.by_row is not None and nodes is not None and self.names is nodes.names:
            row = nodes.row_of(node)
            if row is not None:
                self.by_row[row] += sign

    def rows(self, nodes: NodeSnapshot) -> Counts:
        if self.by_row is None or self.names is not nodes.names:
            counts = np.zeros(nodes.size, dtype=np.int64)
            for node, n in self.per_node.items():
                row = nodes.row_of(node)
                if row is not None:
                    counts[row] += n
            self.names, self.by_row = nodes.names, counts
        return self.by_row

    @property
    def total(self) -> int:
        return len(self.members)


def hypothetical(tally: Tally, nodes: NodeSnapshot, accepts: Callable[[PodInfo], bool]) -> Counts:
    """The tally's counts per row with the overlay's gone members taken off and its added
    pods that `accepts` put on (kube's RemovePod / AddPod on the PreFilter state)."""
    overlay = nodes.overlay
    counts = tally.rows(nodes).copy()
    members = tally.members
    maybe_gone: Iterable[tuple[PodInfo, str]] = (
        members.values()
        if overlay.below is not None
        else [members[k] for k in overlay.removed if k in members]
    )
    for info, node in maybe_gone:
        row = nodes.row_of(node)
        if row is not None and overlay.gone(info, row):
            counts[row] -= 1
    for row, info in overlay.added:
        if accepts(info):
            counts[row] += 1
    return counts


def domain_totals(nodes: NodeSnapshot, key: str, counts: Counts) -> tuple[Counts, BoolMask]:
    """Per row, the sum of `counts` over the rows sharing its value of label `key` (0 for rows
    without the label), and the mask of rows that have it. A key whose every value names one
    node (the hostname) needs no sum."""
    column = nodes.label(key)
    shape = _column_shape(column.codes, len(column.values))
    has, unique = shape
    if unique:
        return np.where(has, counts, 0), has
    shifted = column.codes + 1  # absent rows in bin 0, dropped
    per_domain = np.bincount(shifted, weights=counts, minlength=len(column.values) + 1)
    per_domain[0] = 0
    out: Counts = per_domain.take(shifted).astype(np.int64)
    return out, has


_SHAPES: dict[int, tuple[npt.NDArray[np.int32], tuple[BoolMask, bool]]] = {}


def _column_shape(codes: npt.NDArray[np.int32], distinct: int) -> tuple[BoolMask, bool]:
    """(rows with the label, whether each value is on one row), kept per column (columns are
    immutable and replaced when they change)."""
    found = _SHAPES.get(id(codes))
    if found is not None and found[0] is codes:
        return found[1]
    has = codes >= 0
    has.flags.writeable = False
    present = codes[has]
    unique = present.size == 0 or int(np.bincount(present, minlength=distinct).max()) <= 1
    shape = (has, unique)
    if len(_SHAPES) > 64:
        _SHAPES.clear()
    _SHAPES[id(codes)] = (codes, shape)
    return shape


class _Followed:
    """What follows a `PodIndex`'s change log: the index followed and the generation seen."""

    def __init__(self) -> None:
        self.index: PodIndex | None = None
        self.generation = -1

    def changes(self, index: PodIndex) -> list[tuple[PodInfo, str, int]] | None:
        """The changes since the last call, None when a recount is needed."""
        if index is not self.index:
            self.index, self.generation = index, index.generation
            return None
        log = index.changes_since(self.generation)
        self.generation = index.generation
        if log is None:
            return None
        return [(c.info, c.node, c.sign) for c in log]


@dataclass(frozen=True)
class Conjunction:
    """Pods matching every term, each in its namespaces (None: all), with their labels."""

    terms: tuple[tuple[Term, frozenset[str] | None], ...]

    @property
    def key(self) -> Hashable:
        return tuple((t.shape, ns) for t, ns in self.terms)

    def accepts(self, info: PodInfo) -> bool:
        for term, namespaces in self.terms:
            if namespaces is not None and info.namespace not in namespaces:
                return False
            if not term.selects(info.labels):
                return False
        return bool(self.terms)


class _Matching:
    def __init__(self, conj: Conjunction) -> None:
        self.conj = conj
        self.tally = Tally()
        self.followed = _Followed()


class Matches:
    """Counts of the counted pods matching a conjunction of terms, per row."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Hashable, _Matching] = OrderedDict()

    def get(self, index: PodIndex, conj: Conjunction, nodes: NodeSnapshot) -> Tally:
        key = conj.key
        entry = self._kept.get(key)
        if entry is None:
            entry = self._kept[key] = _Matching(conj)
            if len(self._kept) > _KEPT:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
        changes = entry.followed.changes(index)
        if changes is None:
            entry.tally = Tally()
            first, namespaces = conj.terms[0]
            for info in index.matching(first.selector, namespaces):
                node = index.node_of(info.key)
                if node is not None and conj.accepts(info):
                    entry.tally.put(info, node, 1, None)
        else:
            for info, node, sign in changes:
                if conj.accepts(info):
                    entry.tally.put(info, node, sign, nodes)
        entry.tally.rows(nodes)
        return entry.tally


ROLES = ("anti", "hard", "preferred")
"""What a carried term does: required anti-affinity (Filter), required affinity (scored with
hardPodAffinityWeight), preferred affinity or anti-affinity (scored with its signed weight)."""


def carried_terms(info: PodInfo) -> list[tuple[str, int, Term]]:
    """(role, weight, term) for every term the pod carries."""
    terms = terms_of(info)
    out = [("anti", 1, t) for t in terms.required_anti]
    out += [("hard", 1, t) for t in terms.required_affinity]
    out += [("preferred", w, t) for w, t in terms.preferred_affinity]
    out += [("preferred", -w, t) for w, t in terms.preferred_anti]
    return out


def has_terms(info: PodInfo) -> bool:
    return terms_of(info).any


class Carried:
    """The counted pods carrying terms, grouped by (role, weight, term shape)."""

    SUBSET = "InterPodAffinity/terms"

    def __init__(self) -> None:
        self.shapes: dict[tuple[str, int, Hashable], tuple[Term, Tally]] = {}
        self._followed = _Followed()

    def none_carried(self, index: PodIndex) -> bool:
        """No counted pod carries a term: `update` would leave no shape, so a pod with no
        terms of its own has nothing to read here (the update can wait: it follows the log)."""
        return not index.subset(self.SUBSET, has_terms)

    def update(self, index: PodIndex, nodes: NodeSnapshot) -> None:
        subset = index.subset(self.SUBSET, has_terms)
        changes = self._followed.changes(index)
        if changes is None:
            self.shapes = {}
            for info in subset.values():
                node = index.node_of(info.key)
                if node is not None:
                    self._put(info, node, 1, None)
            return
        for info, node, sign in changes:
            if terms_of(info).any:
                self._put(info, node, sign, nodes)

    def _put(self, info: PodInfo, node: str, sign: int, nodes: NodeSnapshot | None) -> None:
        for role, weight, term in carried_terms(info):
            key = (role, weight, term.shape)
            entry = self.shapes.get(key)
            if entry is None:
                if sign < 0:
                    continue
                entry = self.shapes[key] = (term, Tally())
            entry[1].put(info, node, sign, nodes)
            if not entry[1].members:
                del self.shapes[key]

    def of_role(self, role: str) -> Iterable[tuple[int, Term, Tally]]:
        for (r, weight, _), (term, tally) in self.shapes.items():
            if r == role:
                yield weight, term, tally
