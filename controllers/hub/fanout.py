"""Which placements a change may affect: OCM's event fan-out (docs/hub-admins.md, 'When a
placement is scheduled again').

A ManagedCluster change reaches, through every set whose selector matches its old or new labels
and every binding to that set, the placements of the binding's namespace that name the set or
name no set at all. Set and binding changes fan out the same way, an AddOnPlacementScore reaches
the placements that weigh its resource and may see its cluster, and a PlacementDecision reaches
the placement named by its label. Beyond OCM, a score also reaches the placements whose CEL
selectors read it through `managedCluster.scores("<name>")` (OCM does not index them, so a
score change alone leaves such a placement stale until something else re-queues it).
`Fanout` keeps the few indexes this needs up to date from the same watch events and answers
with placement keys (`namespace/name`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from apis.cluster import ManagedClusterSet, ManagedClusterSetBinding
from apis.placements import Placement, PlacementDecision
from placement.clustersets import set_contains
from placement.rows import DecisionRow
from plugins.predicate import cel_score_names, uses_cel

__all__ = ["Fanout", "placement_key"]

K = TypeVar("K")


class _Named(Protocol):
    """An AddOnPlacementScore or what a cache keeps of one: its name is the resource."""

    @property
    def name(self) -> str: ...


def placement_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(frozen=True)
class _Watched:
    """What the fan-out needs to know of one placement."""

    namespace: str
    cluster_sets: frozenset[str]  # empty: every set bound to the namespace
    addon_resources: frozenset[str]
    # Score names its CEL reads with `scores()`; None: a computed name, any score counts.
    cel_scores: frozenset[str] | None = frozenset()
    cel: bool = False  # some predicate has CEL expressions: it may read any field


def _watched(placement: Placement) -> _Watched:
    policy = placement.spec.prioritizer_policy
    resources = {
        config.score_coordinate.add_on.resource_name
        for config in (policy.configurations or [] if policy else [])
        if config.score_coordinate.type == "AddOn" and config.score_coordinate.add_on is not None
    }
    return _Watched(
        placement.namespace,
        frozenset(placement.spec.cluster_sets or ()),
        frozenset(resources),
        cel_score_names(placement),
        uses_cel(placement),
    )


class Fanout:
    """Indexes of placements, sets and bindings, and the fan-out queries over them."""

    def __init__(self) -> None:
        self._placements: dict[str, _Watched] = {}
        self._naming: dict[tuple[str, str], set[str]] = {}  # (namespace, set) -> placements
        self._naming_none: dict[str, set[str]] = {}  # namespace -> placements naming no set
        # (add-on resource, namespace) -> placements: a score event looks only at the namespaces
        # that can see its cluster, not at every placement weighing the resource.
        self._weighing: dict[tuple[str, str], set[str]] = {}
        # The same for the placements whose CEL reads a score by name (`scores("<name>")`),
        # and, by namespace, those whose CEL computes the name (any score may matter).
        self._reading: dict[tuple[str, str], set[str]] = {}
        self._reading_any: dict[str, set[str]] = {}
        self._cel: set[str] = set()  # placements with CEL expressions
        self._sets: dict[str, ManagedClusterSet] = {}
        self._bound: dict[str, set[str]] = {}  # set -> namespaces with a binding to it
        self._bindings: dict[tuple[str, str], str] = {}  # (namespace, binding) -> set

    # --- keeping up ------------------------------------------------------------------------

    def placement_upserted(self, placement: Placement) -> None:
        key = placement_key(placement.namespace, placement.name)
        watched = _watched(placement)
        if self._placements.get(key) == watched:
            return
        self.placement_deleted(key)
        self._placements[key] = watched
        if watched.cluster_sets:
            for name in watched.cluster_sets:
                self._naming.setdefault((watched.namespace, name), set()).add(key)
        else:
            self._naming_none.setdefault(watched.namespace, set()).add(key)
        for resource in watched.addon_resources:
            self._weighing.setdefault((resource, watched.namespace), set()).add(key)
        if watched.cel:
            self._cel.add(key)
        if watched.cel_scores is None:
            self._reading_any.setdefault(watched.namespace, set()).add(key)
        else:
            for name in watched.cel_scores:
                self._reading.setdefault((name, watched.namespace), set()).add(key)

    def placement_deleted(self, key: str) -> None:
        watched = self._placements.pop(key, None)
        if watched is None:
            return
        for name in watched.cluster_sets:
            _discard(self._naming, (watched.namespace, name), key)
        _discard(self._naming_none, watched.namespace, key)
        for resource in watched.addon_resources:
            _discard(self._weighing, (resource, watched.namespace), key)
        self._cel.discard(key)
        if watched.cel_scores is None:
            _discard(self._reading_any, watched.namespace, key)
        else:
            for name in watched.cel_scores:
                _discard(self._reading, (name, watched.namespace), key)

    def set_upserted(self, cluster_set: ManagedClusterSet) -> None:
        self._sets[cluster_set.name] = cluster_set

    def set_deleted(self, name: str) -> None:
        self._sets.pop(name, None)

    def binding_upserted(self, binding: ManagedClusterSetBinding) -> None:
        key = (binding.namespace, binding.name)
        self.binding_deleted(*key)
        target = binding.spec.cluster_set
        self._bindings[key] = target
        self._bound.setdefault(target, set()).add(binding.namespace)

    def binding_deleted(self, namespace: str, name: str) -> None:
        target = self._bindings.pop((namespace, name), None)
        if target is None:
            return
        still_bound = any(ns == namespace and s == target for (ns, _), s in self._bindings.items())
        if not still_bound:
            _discard(self._bound, target, namespace)

    # --- queries ---------------------------------------------------------------------------

    def all(self) -> list[str]:
        """Every placement key, sorted (cold start and periodic resync)."""
        return sorted(self._placements)

    def in_namespace_for_set(self, namespace: str, set_name: str) -> set[str]:
        """Placements of `namespace` that name the set or name no set."""
        return self._naming.get((namespace, set_name), set()) | self._naming_none.get(
            namespace, set()
        )

    def for_set(self, set_name: str) -> set[str]:
        """A set changed: the placements of every namespace bound to it."""
        out: set[str] = set()
        for namespace in self._bound.get(set_name, ()):
            out |= self.in_namespace_for_set(namespace, set_name)
        return out

    def for_binding(self, namespace: str, name: str) -> set[str]:
        """A binding changed (OCM keys this on the binding's name, which equals its set)."""
        return self.in_namespace_for_set(namespace, name)

    def sets_containing(self, labels: Mapping[str, str]) -> list[str]:
        return [name for name, s in self._sets.items() if set_contains(s, labels)]

    def for_cluster(self, *labelings: Mapping[str, str] | None) -> set[str]:
        """A cluster changed: its old and new labels (either may be None) pick the sets."""
        names: set[str] = set()
        for labels in labelings:
            if labels is not None:
                names.update(self.sets_containing(labels))
        out: set[str] = set()
        for name in names:
            out |= self.for_set(name)
        return out

    def for_cel_cluster(self, labels: Mapping[str, str]) -> set[str]:
        """A cluster's object changed but none of its row's features (an annotation, a
        condition, the version): only the placements with CEL may read it, and only those
        that can see the cluster."""
        if not self._cel:
            return set()
        return self.for_cluster(labels) & self._cel

    def for_score(self, score: _Named, cluster_labels: Mapping[str, str] | None) -> set[str]:
        """Placements weighing the score's resource, or whose CEL reads it with `scores()`,
        whose namespace sees its cluster (the score lives in the cluster's namespace)."""
        if cluster_labels is None:
            return set()
        namespaces: set[str] = set()
        for name in self.sets_containing(cluster_labels):
            namespaces |= self._bound.get(name, set())
        out: set[str] = set()
        for namespace in namespaces:
            out |= self._weighing.get((score.name, namespace), set())
            out |= self._reading.get((score.name, namespace), set())
            out |= self._reading_any.get(namespace, set())
        return out

    @staticmethod
    def for_decision(decision: PlacementDecision | DecisionRow) -> set[str]:
        owner = decision.placement_name
        return {placement_key(decision.namespace, owner)} if owner else set()


def _discard(index: dict[K, set[str]], key: K, value: str) -> None:
    members = index.get(key)
    if members is None:
        return
    members.discard(value)
    if not members:
        del index[key]
