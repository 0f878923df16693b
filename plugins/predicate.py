"""`Predicate` filter: label, claim and CEL selectors; predicates ORed, their parts ANDed.

Inside one predicate the label selector, the claim selector and every CEL expression must
accept a cluster; CEL runs only on the clusters the label and claim selectors kept, and only
on those whose object changed since the last evaluation (`placement.selectors.cel_mask`).
A CEL compile error makes the placement Misconfigured with OCM's message; an expression that
fails at run time (an error, a spent cost budget) rejects that cluster only.
"""

from __future__ import annotations

import numpy as np

from apis.meta import LabelSelectorRequirement
from apis.placements import ClusterPredicate, Placement
from placement.cel import CelCompileError, CelSelector, compile_selector
from placement.framework import BoolMask, Code, Cycle, Filter, FilterResult, Status
from placement.selectors import (
    CelTimer,
    SelectorError,
    cel_mask,
    cluster_mask,
    requirements_mask,
)
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["Predicate", "cel_score_names", "cel_selectors", "uses_cel"]


def cel_selectors(placement: Placement) -> list[CelSelector | None]:
    """The compiled CEL selector of each predicate (None without expressions); raises
    `CelCompileError` for the first expression that does not compile. Compiled once per
    distinct list of expressions (`compile_selector` caches them)."""
    out: list[CelSelector | None] = []
    for predicate in placement.spec.predicates or []:
        selector = predicate.required_cluster_selector
        cel = selector.cel_selector if selector else None
        expressions = cel.cel_expressions if cel else None
        out.append(compile_selector(expressions) if expressions else None)
    return out


def uses_cel(placement: Placement) -> bool:
    """Whether some predicate has CEL expressions (which may read any field of a cluster)."""
    for predicate in placement.spec.predicates or []:
        selector = predicate.required_cluster_selector
        if selector and selector.cel_selector and selector.cel_selector.cel_expressions:
            return True
    return False


def cel_score_names(placement: Placement) -> frozenset[str] | None:
    """The AddOnPlacementScore names the placement's CEL expressions read with
    `managedCluster.scores("<name>")`: the controller re-queues the placement when a score
    object of one of these names changes (OCM does not). None: some call computes its name,
    any score object counts. Empty when no expression calls `scores()` or one does not
    compile (the placement is Misconfigured and a score cannot change that)."""
    try:
        selectors = cel_selectors(placement)
    except CelCompileError:
        return frozenset()
    names: set[str] = set()
    for selector in selectors:
        if selector is None:
            continue
        found = selector.score_names
        if found is None:
            return None
        names |= found
    return frozenset(names)


class Predicate(Filter):
    """Keeps the candidates matching at least one of the placement's predicates."""

    name = "Predicate"

    def __init__(self, cel_timer: CelTimer | None = None) -> None:
        """`cel_timer`: the hook of the CEL runtime metric (`placement.selectors.CelTimer`),
        called around each cluster whose expressions run; a cycle's `scratch["cel_timer"]`
        overrides it. The controller passes one that observes
        scheduling_cel_runtime_duration_seconds."""
        self.cel_timer = cel_timer

    def filter(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> FilterResult:
        predicates = placement.spec.predicates or []
        # OCM checks nothing (not even a broken selector) when there is nothing to filter.
        if not predicates or not candidates.any():
            return FilterResult(candidates)
        explain = bool(cycle.scratch.get("explain"))
        timer = cycle.scratch.get("cel_timer") or self.cel_timer
        cel_why: dict[int, list[str]] = {}
        matched: BoolMask | None = None
        for index, predicate in enumerate(predicates):
            selector = predicate.required_cluster_selector
            if selector is None:  # an empty selector matches every cluster; OCM still builds
                matched = candidates.copy()  # the other predicates' selectors (and fails on
                continue  # a bad one), so go on
            try:
                # Within the candidates already.
                mask = cluster_mask(
                    selector.label_selector, selector.claim_selector, fleet, candidates
                )
                expressions = (
                    selector.cel_selector.cel_expressions if selector.cel_selector else None
                )
                cel = compile_selector(expressions) if expressions else None
            except (SelectorError, CelCompileError) as exc:
                return FilterResult(candidates, Status(Code.MISCONFIGURED, str(exc), self.name))
            if cel is not None and mask.any():
                why: dict[int, str] | None = {} if explain else None
                mask = cel_mask(cel, fleet, mask, timer, why)
                for row, reason in (why or {}).items():
                    cel_why.setdefault(row, []).append(f"predicate {index}: {reason}")
            matched = mask if matched is None else matched | mask
        if matched is None:
            return FilterResult(candidates)
        if not explain:
            return FilterResult(matched)
        reasons = _reasons(predicates, fleet, candidates & ~matched)
        for row, found in cel_why.items():
            if row in reasons:
                reasons[row] = "; ".join(filter(None, [reasons[row], *found]))
        return FilterResult(matched, reasons=reasons)


def _reasons(
    predicates: list[ClusterPredicate], fleet: FleetSnapshot, rejected: BoolMask
) -> dict[int, str]:
    """Explain only: for each rejected row, the first requirement of each predicate that it
    fails, e.g. `predicate 0: label env In [prod] (got dev)`."""
    rows = np.flatnonzero(rejected)
    parts: dict[int, list[str]] = {int(row): [] for row in rows}
    for index, predicate in enumerate(predicates):
        selector = predicate.required_cluster_selector
        labels = selector.label_selector if selector else None
        claims = selector.claim_selector if selector else None
        checks: list[tuple[str, LabelSelectorRequirement]] = [
            ("label", LabelSelectorRequirement(key=key, operator="In", values=[value]))
            for key, value in ((labels.match_labels or {}) if labels else {}).items()
        ]
        checks += [("label", req) for req in (labels.match_expressions or [] if labels else [])]
        checks += [("claim", req) for req in (claims.match_expressions or [] if claims else [])]
        left = rows
        for kind, req in checks:
            column = fleet.label if kind == "label" else fleet.claim
            ok = requirements_mask([req], column, fleet.size)[left]
            values = f" [{', '.join(req.values or [])}]" if req.values else ""
            for row in left[~ok]:
                actual = column(req.key).value_at(int(row))
                got = "not set" if actual is None else f"got {actual}"
                parts[int(row)].append(
                    f"predicate {index}: {kind} {req.key} {req.operator}{values} ({got})"
                )
            left = left[ok]
    return {row: "; ".join(found) for row, found in parts.items()}
