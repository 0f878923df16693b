"""PodTopologySpread's building blocks: a pod's constraints as the plugin uses them (the
selector built, matchLabelKeys merged, kube's defaults filled in), the system default
constraints and their selector taken from the objects selecting the pod, and the per-node
counts of matching pods kept across cycles.

**Default selector**: `plugins.pods.podtopologyspread.default_selector` (kube's `DefaultSelector`:
the Services, ReplicationController, ReplicaSet or StatefulSet that select the pod).

**Counts.** `MatchCounts` keeps, per (namespace, selector), how many counted pods that match
run on each node, updated from `PodIndex.changes_since` (a bind or a deletion costs one
selector check, not a recount), and hands out a vector over a snapshot's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from apis.meta import LabelSelector, LabelSelectorRequirement
from apis.topologyspread import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    TopologySpreadConstraint,
    constraints_problems,
)
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.framework.interface import ClusterView, PodInfo
from placement.selectors import SelectorError, labels_match, selector_error
from plugins.pods.helper.snapshot_cache import frozen
from plugins.pods.podtopologyspread.default_selector import DefaultSelectors, default_selector

__all__ = [
    "FIELD",
    "HOSTNAME",
    "SYSTEM_DEFAULTS",
    "ZONE",
    "Counts",
    "MatchCounts",
    "SelectorError",
    "Spread",
    "matches",
    "overlaid",
    "selector_key",
    "self_match",
    "spread_constraints",
]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
FIELD = "spec.topologySpreadConstraints"

SYSTEM_DEFAULTS = (
    TopologySpreadConstraint(max_skew=3, topology_key=HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(max_skew=5, topology_key=ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)
"""kube's system default constraints (`defaultingType: System`)."""

Counts = npt.NDArray[np.int64]


class Spread(NamedTuple):
    """One constraint as the plugin evaluates it (kube's internal topologySpreadConstraint)."""

    max_skew: int
    key: str
    selector: LabelSelector | None  # None selects no pod
    min_domains: int
    honor_affinity: bool
    honor_taints: bool

    @property
    def selector_key(self) -> tuple[Any, ...]:
        return selector_key(self.selector)


def selector_key(selector: LabelSelector | None) -> tuple[Any, ...]:
    """A hashable identity of a selector (the count cache's key)."""
    if selector is None:
        return ("none",)
    return (
        tuple(sorted((selector.match_labels or {}).items())),
        tuple((r.key, r.operator, tuple(r.values or ())) for r in selector.match_expressions or ()),
    )


def _merged(
    selector: LabelSelector | None, pod: PodInfo, keys: Sequence[str]
) -> LabelSelector | None:
    """matchLabelKeys: the pod's values of these keys ANDed to the selector (a key the pod does
    not carry is ignored). As kube, a missing selector with some key found selects by those
    labels alone."""
    found = {key: pod.labels[key] for key in keys if key in pod.labels}
    if not found:
        return selector
    extra = [LabelSelectorRequirement(key=k, operator="In", values=[v]) for k, v in found.items()]
    if selector is None:
        return LabelSelector(match_expressions=extra)
    return LabelSelector(
        match_labels=selector.match_labels,
        match_expressions=[*(selector.match_expressions or ()), *extra],
    )


def _spread(c: TopologySpreadConstraint, selector: LabelSelector | None) -> Spread:
    return Spread(
        max_skew=int(c.max_skew or 0),
        key=c.topology_key or "",
        selector=selector,
        min_domains=int(c.min_domains) if c.min_domains is not None else 1,
        honor_affinity=c.honor_affinity,
        honor_taints=c.honor_taints,
    )


def spread_constraints(
    pod: PodInfo,
    defaults: Sequence[TopologySpreadConstraint],
    cluster: ClusterView,
    hard: bool,
    checked: bool = False,
    selectors: DefaultSelectors | None = None,
) -> list[Spread] | str:
    """The pod's DoNotSchedule (`hard`) or ScheduleAnyway constraints; without any of its own,
    the default constraints of that kind with the selector of the objects selecting it (none
    when no selector can be derived; `selectors` remembers them). A string: the first problem,
    naming the field (`checked`: the pod's constraints were found valid already, for the other
    kind)."""
    own = pod.pod.spec.topology_spread_constraints or []
    action = DO_NOT_SCHEDULE if hard else SCHEDULE_ANYWAY
    if own:
        if any(c.match_label_keys for c in own):
            return _own(own, pod, action, checked)  # the pod's labels join the selector
        memo = (id(own), action, checked)  # pods of a workload may share their spec's list
        kept = _OWN.get(memo)
        if kept is None or kept[0] is not own:
            if len(_OWN) >= _ENTRIES:
                _OWN.clear()
            kept = _OWN[memo] = (own, _own(own, pod, action, checked))
        return kept[1]
    chosen = [c for c in defaults if c.when_unsatisfiable == action]
    if not chosen:
        return []
    selector = default_selector(pod, cluster) if selectors is None else selectors.of(pod, cluster)
    if selector is None:
        return []
    return [_spread(c, selector) for c in chosen]  # kube: the derived selector replaces all


_OWN: dict[tuple[int, str, bool], tuple[object, list[Spread] | str]] = {}
"""`_own`'s answers per constraints list (held, so its id is not reused while kept)."""


def _own(
    own: Sequence[TopologySpreadConstraint], pod: PodInfo, action: str, checked: bool
) -> list[Spread] | str:
    """`spread_constraints` for a pod's own constraints."""
    problems = [] if checked else constraints_problems(own, FIELD)
    if problems:
        return problems[0]
    found: list[Spread] = []
    for index, c in enumerate(own):
        problem = None if checked else _selector_problem(c.label_selector)
        if problem is not None:
            return f"{FIELD}[{index}].labelSelector: {problem}"
        if c.when_unsatisfiable == action:
            found.append(_spread(c, _merged(c.label_selector, pod, c.match_label_keys or ())))
    return found


_PROBLEMS: dict[tuple[Any, ...], str | None] = {}


def _selector_problem(selector: LabelSelector | None) -> str | None:
    """`selector_error`, remembered per selector (pods of a workload share theirs)."""
    key = selector_key(selector)
    if key not in _PROBLEMS:
        if len(_PROBLEMS) >= _ENTRIES:
            _PROBLEMS.clear()
        _PROBLEMS[key] = selector_error(selector)
    return _PROBLEMS[key]


def matches(spread_selector: LabelSelector | None, namespace: str, pod: PodInfo) -> bool:
    """A pod counts for a constraint of a pod in `namespace`: same namespace, not being
    deleted (kube skips terminating pods), labels matching."""
    if spread_selector is None or pod.namespace != namespace or pod.terminating:
        return False
    return _matcher(spread_selector)(pod.labels)


_MATCHERS: dict[tuple[Any, ...], Callable[[Mapping[str, str]], bool]] = {}


def _matcher(selector: LabelSelector) -> Callable[[Mapping[str, str]], bool]:
    """`labels_match` for one selector, checked once: a selector of matchLabels alone is a
    comparison of items (pods are checked per bind, against every cached selector)."""
    key = selector_key(selector)
    found = _MATCHERS.get(key)
    if found is None:
        problem = _selector_problem(selector)
        if problem is not None:
            raise SelectorError(problem)
        wanted = tuple((selector.match_labels or {}).items())
        if selector.match_expressions:
            chosen = selector

            def found(labels: Mapping[str, str]) -> bool:
                return labels_match(chosen, labels)
        else:

            def found(labels: Mapping[str, str]) -> bool:
                return all(labels.get(k) == v for k, v in wanted)

        if len(_MATCHERS) >= _ENTRIES:
            _MATCHERS.clear()
        _MATCHERS[key] = found
    return found


def self_match(selector: LabelSelector | None, pod: PodInfo) -> int:
    """1 when the incoming pod matches its own constraint's selector (kube's selfMatch)."""
    return int(selector is not None and _matcher(selector)(pod.labels))


class _Entry:
    __slots__ = ("array", "by_node", "generation", "names")

    def __init__(self, generation: int, by_node: dict[str, int]) -> None:
        self.generation = generation
        self.by_node = by_node
        self.names: tuple[str, ...] | None = None
        self.array: Counts | None = None


_ENTRIES = 256
"""Selectors whose counts are kept (cleared when more are asked for)."""


class MatchCounts:
    """See the module docstring."""

    def __init__(self) -> None:
        self._entries: dict[tuple[Any, ...], _Entry] = {}

    def per_row(
        self, index: PodIndex, nodes: NodeSnapshot, namespace: str, selector: LabelSelector | None
    ) -> Counts:
        """Matching counted pods per row of `nodes` (read-only; the real cluster, without the
        snapshot's overlay). Raises SelectorError on an invalid selector."""
        key = (namespace, selector_key(selector))
        entry = self._entries.get(key)
        changes = None if entry is None else index.changes_since(entry.generation)
        if entry is None or changes is None:
            if len(self._entries) >= _ENTRIES:
                self._entries.clear()
            by_node: dict[str, int] = {}
            for info in index.matching(selector, [namespace]):
                node = index.node_of(info.key)
                if node is not None and not info.terminating:
                    by_node[node] = by_node.get(node, 0) + 1
            entry = self._entries[key] = _Entry(index.generation, by_node)
        elif changes:
            moved: list[tuple[str, int]] = []
            for change in changes:
                if matches(selector, namespace, change.info):
                    entry.by_node[change.node] = entry.by_node.get(change.node, 0) + change.sign
                    moved.append((change.node, change.sign))
            entry.generation = index.generation
            if moved and entry.array is not None and entry.names is nodes.names:
                array = entry.array.copy()
                for node, sign in moved:
                    row = nodes.row_of(node)
                    if row is not None:
                        array[row] += sign
                entry.array = frozen(array)
        if entry.array is None or entry.names is not nodes.names:
            array = np.zeros(nodes.size, dtype=np.int64)
            for node, count in entry.by_node.items():
                row = nodes.row_of(node)
                if row is not None and count:
                    array[row] = count
            entry.array = frozen(array)
            entry.names = nodes.names
        return entry.array


def overlaid(
    counts: Counts,
    nodes: NodeSnapshot,
    index: PodIndex,
    namespace: str,
    selector: LabelSelector | None,
) -> Counts:
    """`counts` on the snapshot's hypothetical cluster: matching pods the overlay removes are
    taken away from their rows, matching pods it adds are counted (kube's RemovePod/AddPod)."""
    overlay = nodes.overlay
    if overlay.empty or selector is None:
        return counts
    out = counts.copy()
    if overlay.below is not None:
        gone = index.matching(selector, [namespace])
    else:
        pods = index.pods()
        gone = [pods[key] for key in overlay.removed if key in pods]
    for info in gone:
        node = index.node_of(info.key)
        row = None if node is None else nodes.row_of(node)
        if row is not None and overlay.gone(info, row) and matches(selector, namespace, info):
            out[row] -= 1
    for row, info in overlay.added:
        if matches(selector, namespace, info):
            out[row] += 1
    return out
