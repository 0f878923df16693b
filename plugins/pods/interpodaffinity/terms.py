"""A pod's inter-pod affinity terms as InterPodAffinity reads them (kube's AffinityTerm).

Each `PodAffinityTerm` becomes a `Term`: its label selector with `matchLabelKeys` and
`mismatchLabelKeys` merged in from the owning pod's labels (`key In (value)`, `key NotIn
(value)`, keys the pod lacks ignored, as the API server merges them at creation: a selector
merged twice means the same), the namespaces it names (none and no namespace selector: the
pod's own), its namespace selector (None selects no namespace, an empty one every namespace) and
its topology key. `shape` identifies terms that select the same pods in the same way, so that
the pods of one workload share their counts.

A term Kubernetes would refuse (an invalid selector requirement, an empty topology key, a
preferred weight outside 1..100) is not compiled: `PodTerms.problem` names the first such field,
and the plugin makes an incoming pod with one unresolvable; an existing pod's invalid term is
dropped (kube's cache cannot parse it either), never an exception in the engine.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from apis.meta import LabelSelector, LabelSelectorRequirement
from apis.podaffinity import PodAffinityTerm, WeightedPodAffinityTerm
from placement.pods.cluster.podinfo import PodInfo
from placement.selectors import selector_problems

__all__ = ["PodTerms", "Term", "selector_shape", "terms_of"]

_AFFINITY = "spec.affinity.podAffinity"
_ANTI = "spec.affinity.podAntiAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def selector_shape(selector: LabelSelector | None) -> Hashable:
    """A hashable form of a selector: equal for selectors that select the same way."""
    if selector is None:
        return None
    labels = tuple(sorted((selector.match_labels or {}).items()))
    exprs = tuple(
        (r.key, r.operator, tuple(r.values or ())) for r in selector.match_expressions or ()
    )
    return labels, exprs


def _empty(selector: LabelSelector) -> bool:
    return not selector.match_labels and not selector.match_expressions


Requirement = tuple[str, str, frozenset[str]]


def compiled(selector: LabelSelector) -> tuple[Requirement, ...]:
    """A selector already validated as (key, operator, values) requirements, for `matching`
    (labels_match validates every requirement at every call: too slow per pod per cycle)."""
    reqs: list[Requirement] = [
        (k, "In", frozenset((v,))) for k, v in (selector.match_labels or {}).items()
    ]
    reqs += [
        (r.key, r.operator, frozenset(r.values or ())) for r in selector.match_expressions or ()
    ]
    return tuple(reqs)


def matching(requirements: tuple[Requirement, ...], labels: Mapping[str, str]) -> bool:
    """Whether labels satisfy every compiled requirement (apimachinery's semantics)."""
    for key, op, values in requirements:
        value = labels.get(key)
        if op == "In":
            if value is None or value not in values:
                return False
        elif op == "NotIn":
            if value is not None and value in values:
                return False
        elif op == "Exists":
            if value is None:
                return False
        elif value is not None:  # DoesNotExist
            return False
    return True


@dataclass(frozen=True)
class Term:
    """One compiled term. `namespaces` are those named (the pod's own by default);
    `namespace_selector` adds the namespaces whose labels it matches (None: none; empty:
    every namespace, named or not)."""

    selector: LabelSelector | None
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str
    shape: Hashable
    requirements: tuple[Requirement, ...] | None = None  # the selector compiled (None: none)
    namespace_requirements: tuple[Requirement, ...] | None = None

    def selects(self, labels: Mapping[str, str]) -> bool:
        """The label selector alone (None selects nothing)."""
        return self.requirements is not None and matching(self.requirements, labels)

    @property
    def all_namespaces(self) -> bool:
        return self.namespace_selector is not None and _empty(self.namespace_selector)

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        """Whether `pod` (whose namespace carries `namespace_labels`) is one this term selects."""
        if self.requirements is None:
            return False
        in_scope = pod.namespace in self.namespaces or (
            self.namespace_requirements is not None
            and matching(self.namespace_requirements, namespace_labels)
        )
        return in_scope and matching(self.requirements, pod.labels)

    def namespaces_among(self, labels_of: Mapping[str, Mapping[str, str]]) -> frozenset[str] | None:
        """The namespaces the term covers given the Namespace objects' labels (`labels_of`, by
        name); None for every namespace (kube folds the selected namespaces into the named
        ones for the incoming pod's terms)."""
        if self.all_namespaces:
            return None
        chosen = set(self.namespaces)
        wanted = self.namespace_requirements
        if wanted is not None:
            chosen.update(n for n, lbl in labels_of.items() if matching(wanted, lbl))
        return frozenset(chosen)


@dataclass(frozen=True)
class PodTerms:
    """A pod's compiled terms by kind; preferred ones with their weights."""

    required_affinity: tuple[Term, ...] = ()
    required_anti: tuple[Term, ...] = ()
    preferred_affinity: tuple[tuple[int, Term], ...] = ()
    preferred_anti: tuple[tuple[int, Term], ...] = ()
    problem: str | None = None

    @property
    def required(self) -> bool:
        return bool(self.required_affinity or self.required_anti)

    @property
    def preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti)

    @property
    def any(self) -> bool:
        return self.required or self.preferred


NO_TERMS = PodTerms()


def _merged(term: PodAffinityTerm, labels: Mapping[str, str]) -> LabelSelector | None:
    selector = term.label_selector
    if selector is None:
        return None
    extra = [
        LabelSelectorRequirement(key=k, operator="In", values=[labels[k]])
        for k in term.match_label_keys or ()
        if k in labels
    ]
    extra += [
        LabelSelectorRequirement(key=k, operator="NotIn", values=[labels[k]])
        for k in term.mismatch_label_keys or ()
        if k in labels
    ]
    if not extra:
        return selector
    return LabelSelector(
        match_labels=selector.match_labels,
        match_expressions=[*(selector.match_expressions or ()), *extra],
    )


_PROBLEMS: dict[Hashable, str | None] = {}
_PROBLEMS_KEPT = 4096


def _problem(term: PodAffinityTerm, path: str) -> str | None:
    """The term's first invalid field (cached by content: the replicas of a workload carry
    the same terms, and apimachinery's checks are costly)."""
    key = (
        path,
        term.topology_key,
        selector_shape(term.label_selector),
        selector_shape(term.namespace_selector),
    )
    if key in _PROBLEMS:
        return _PROBLEMS[key]
    found: str | None = None
    if not term.topology_key:
        found = f"{path}.topologyKey: Required value: can not be empty"
    for field, selector in (
        ("labelSelector", term.label_selector),
        ("namespaceSelector", term.namespace_selector),
    ):
        problems = selector_problems(selector, f"{path}.{field}")
        if found is None and problems:
            found = problems[0]
    if len(_PROBLEMS) >= _PROBLEMS_KEPT:
        _PROBLEMS.clear()
    _PROBLEMS[key] = found
    return found


def _compiled(term: PodAffinityTerm, pod: PodInfo, path: str) -> Term | str:
    """The term, or the first problem with it as `<path>.<field>: <error>`. Merged
    matchLabelKeys values are the pod's label values, valid by construction."""
    problem = _problem(term, path)
    if problem is not None:
        return problem
    selector = _merged(term, pod.labels)
    named = term.namespaces or []
    if not named and term.namespace_selector is None:
        named = [pod.namespace]
    namespaces = frozenset(named)
    shape = (
        selector_shape(selector),
        tuple(sorted(namespaces)),
        selector_shape(term.namespace_selector),
        term.topology_key,
    )
    ns_selector = term.namespace_selector
    return Term(
        selector,
        namespaces,
        ns_selector,
        term.topology_key,
        shape,
        compiled(selector) if selector is not None else None,
        compiled(ns_selector) if ns_selector is not None else None,
    )


def _required(
    terms: Sequence[PodAffinityTerm] | None, pod: PodInfo, path: str
) -> tuple[list[Term], str | None]:
    out: list[Term] = []
    for i, term in enumerate(terms or ()):
        got = _compiled(term, pod, f"{path}.{_REQUIRED}[{i}]")
        if isinstance(got, str):
            return out, got
        out.append(got)
    return out, None


def _preferred(
    terms: Sequence[WeightedPodAffinityTerm] | None, pod: PodInfo, path: str
) -> tuple[list[tuple[int, Term]], str | None]:
    out: list[tuple[int, Term]] = []
    for i, weighted in enumerate(terms or ()):
        where = f"{path}.{_PREFERRED}[{i}]"
        if not 1 <= weighted.weight <= 100:
            return (
                out,
                f"{where}.weight: Invalid value: {weighted.weight}: must be in the range 1-100",
            )
        got = _compiled(weighted.pod_affinity_term, pod, f"{where}.podAffinityTerm")
        if isinstance(got, str):
            return out, got
        out.append((weighted.weight, got))
    return out, None


def _compile(pod: PodInfo) -> PodTerms:
    affinity = pod.pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return NO_TERMS
    aff, anti = affinity.pod_affinity, affinity.pod_anti_affinity
    req_aff, p1 = _required(
        aff.required_during_scheduling_ignored_during_execution if aff else None, pod, _AFFINITY
    )
    req_anti, p2 = _required(
        anti.required_during_scheduling_ignored_during_execution if anti else None, pod, _ANTI
    )
    pref_aff, p3 = _preferred(
        aff.preferred_during_scheduling_ignored_during_execution if aff else None, pod, _AFFINITY
    )
    pref_anti, p4 = _preferred(
        anti.preferred_during_scheduling_ignored_during_execution if anti else None, pod, _ANTI
    )
    problem = next((p for p in (p1, p2, p3, p4) if p is not None), None)
    return PodTerms(tuple(req_aff), tuple(req_anti), tuple(pref_aff), tuple(pref_anti), problem)


_CACHE: weakref.WeakKeyDictionary[PodInfo, PodTerms] = weakref.WeakKeyDictionary()


def terms_of(pod: PodInfo) -> PodTerms:
    """The pod's compiled terms, computed once per PodInfo."""
    found = _CACHE.get(pod)
    if found is None:
        found = _CACHE[pod] = _compile(pod)
    return found


def matches_all(terms: Iterable[Term], pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
    """kube's podMatchesAllAffinityTerms: False for no terms."""
    found = False
    for term in terms:
        if not term.matches(pod, namespace_labels):
            return False
        found = True
    return found
