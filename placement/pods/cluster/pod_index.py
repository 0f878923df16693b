"""`PodIndex`: the counted pods (bound and assumed) indexed for the plugins that look at other
pods: inter-pod affinity, topology spread, host ports, volume restrictions.

Those plugins ask three kinds of question, each answered without walking every pod:

* **which pods match a label selector** in some namespaces (`matching`): pods are indexed by
  namespace and by each `(namespace, label key, label value)`, so a selector with `matchLabels`
  or an `In` requirement starts from the smallest of its sets and checks the rest of the
  selector on those pods only;
* **which pods carry a feature** (`subset`): a plugin names a subset and gives its predicate on
  first use ("pods with required anti-affinity terms", "pods with host ports"); the index keeps
  it up to date as pods are counted and uncounted, so kube's HavePodsWithAffinity lists cost
  nothing per cycle;
* **what changed since I last looked** (`changes_since`): every count and uncount bumps
  `generation` and is remembered (the last HISTORY of them), so a plugin keeps per-node counts
  across cycles and applies the changes instead of recounting (None: too old, recount).

The engine's pod cache owns the index and feeds it on every count and uncount; plugins read it
through `ClusterView.counted`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from typing import NamedTuple, TypeVar

from apis.meta import LabelSelector
from placement.pods.cluster.podinfo import PodInfo
from placement.selectors import labels_match

__all__ = ["HISTORY", "PodChange", "PodIndex"]

_K = TypeVar("_K")

HISTORY = 4096
"""How many counts and uncounts `changes_since` can replay."""


class PodChange(NamedTuple):
    """One pod counted on (`sign` +1) or uncounted from (-1) a node."""

    info: PodInfo
    node: str
    sign: int


class PodIndex:
    """See the module docstring."""

    def __init__(self) -> None:
        self._node: dict[str, str] = {}  # pod key -> node it is counted on
        self._info: dict[str, PodInfo] = {}
        self._by_ns: dict[str, dict[str, PodInfo]] = {}
        self._by_label: dict[tuple[str, str, str], dict[str, PodInfo]] = {}
        self._subsets: dict[str, tuple[Callable[[PodInfo], bool], dict[str, PodInfo]]] = {}
        self._log: deque[PodChange] = deque(maxlen=HISTORY)
        self.generation = 0

    # --- fed by the cache --------------------------------------------------------------------

    def add(self, info: PodInfo, node: str) -> None:
        key = info.key
        if key in self._node:
            self.remove(key)
        self._node[key] = node
        self._info[key] = info
        ns = info.namespace
        self._by_ns.setdefault(ns, {})[key] = info
        for label, value in info.labels.items():
            self._by_label.setdefault((ns, label, value), {})[key] = info
        for predicate, members in self._subsets.values():
            if predicate(info):
                members[key] = info
        self._changed(PodChange(info, node, 1))

    def remove(self, key: str) -> None:
        node = self._node.pop(key, None)
        info = self._info.pop(key, None)
        if node is None or info is None:
            return
        ns = info.namespace
        _discard(self._by_ns, ns, key)
        for label, value in info.labels.items():
            _discard(self._by_label, (ns, label, value), key)
        for _, members in self._subsets.values():
            members.pop(key, None)
        self._changed(PodChange(info, node, -1))

    # --- read by plugins ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._node)

    def node_of(self, key: str) -> str | None:
        """The node a counted pod is counted on (None: not counted)."""
        return self._node.get(key)

    def pods(self) -> Mapping[str, PodInfo]:
        """Every counted pod, by key."""
        return self._info

    def namespaces(self) -> Iterable[str]:
        """The namespaces with at least one counted pod."""
        return self._by_ns.keys()

    def in_namespace(self, namespace: str) -> Mapping[str, PodInfo]:
        return self._by_ns.get(namespace, {})

    def matching(
        self, selector: LabelSelector | None, namespaces: Iterable[str] | None
    ) -> list[PodInfo]:
        """The counted pods in `namespaces` (None: all) whose labels match `selector`. A None
        selector matches nothing (kube: a term without a labelSelector selects no pod); an
        empty one matches every pod. Raises SelectorError on an invalid requirement."""
        if selector is None:
            return []
        spaces = self._by_ns.keys() if namespaces is None else namespaces
        found: list[PodInfo] = []
        for ns in spaces:
            for info in self._narrowed(selector, ns):
                if labels_match(selector, info.labels):
                    found.append(info)
        return found

    def subset(self, name: str, predicate: Callable[[PodInfo], bool]) -> Mapping[str, PodInfo]:
        """The counted pods for which `predicate` holds, kept up to date from the first call
        on (`name` identifies the subset: the first predicate given under a name is kept)."""
        entry = self._subsets.get(name)
        if entry is None:
            members = {key: info for key, info in self._info.items() if predicate(info)}
            entry = self._subsets[name] = (predicate, members)
        return entry[1]

    def changes_since(self, generation: int) -> list[PodChange] | None:
        """The counts and uncounts after `generation`, oldest first; None when more happened
        than HISTORY remembers (the caller recounts from `pods`)."""
        behind = self.generation - generation
        if behind < 0 or behind > len(self._log):
            return None
        if behind == 0:
            return []
        recent = list(islice(reversed(self._log), behind))  # O(behind), not O(HISTORY)
        recent.reverse()
        return recent

    # --- internals ---------------------------------------------------------------------------

    def _changed(self, change: PodChange) -> None:
        self.generation += 1
        self._log.append(change)

    def _narrowed(self, selector: LabelSelector, namespace: str) -> Iterable[PodInfo]:
        """The smallest index set that holds every pod of `namespace` matching `selector`."""
        best: Iterable[PodInfo] = self._by_ns.get(namespace, {}).values()
        size = len(self._by_ns.get(namespace, {}))
        for label, value in (selector.match_labels or {}).items():
            hit = self._by_label.get((namespace, label, value), {})
            if len(hit) < size:
                best, size = hit.values(), len(hit)
        for req in selector.match_expressions or ():
            if req.operator != "In" or not req.values:
                continue
            sets = [self._by_label.get((namespace, req.key, v), {}) for v in req.values]
            total = sum(len(s) for s in sets)
            if total < size:
                union: dict[str, PodInfo] = {}
                for s in sets:
                    union.update(s)
                best, size = union.values(), total
        return best


def _discard(index: dict[_K, dict[str, PodInfo]], at: _K, key: str) -> None:
    bucket = index.get(at)
    if bucket is not None:
        bucket.pop(key, None)
        if not bucket:
            del index[at]
