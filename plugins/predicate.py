"""`Predicate` filter: label, claim (and, later, CEL) selectors; predicates ORed, parts ANDed."""

from __future__ import annotations

import numpy as np

from apis.meta import LabelSelectorRequirement
from apis.placements import ClusterPredicate, Placement
from placement.framework import BoolMask, Code, Cycle, FilterResult, Status
from placement.selectors import SelectorError, cluster_mask, requirements_mask
from placement.snapshot import FleetSnapshot

__all__ = ["CEL_UNSUPPORTED", "Predicate"]

CEL_UNSUPPORTED = "celSelector is not supported yet (spec.predicates[{index}])"


class Predicate:
    """Keeps the candidates matching at least one of the placement's predicates."""

    name = "Predicate"

    def filter(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> FilterResult:
        predicates = placement.spec.predicates or []
        # OCM checks nothing (not even a broken selector) when there is nothing to filter.
        if not predicates or not candidates.any():
            return FilterResult(candidates)
        matched: BoolMask | None = None
        for index, predicate in enumerate(predicates):
            selector = predicate.required_cluster_selector
            if selector is None:
                return FilterResult(candidates)  # an empty selector matches every cluster
            if selector.cel_selector and selector.cel_selector.cel_expressions:
                message = CEL_UNSUPPORTED.format(index=index)
                return FilterResult(candidates, Status(Code.MISCONFIGURED, message, self.name))
            try:
                # Within the candidates already.
                mask = cluster_mask(
                    selector.label_selector, selector.claim_selector, fleet, candidates
                )
            except SelectorError as exc:
                return FilterResult(candidates, Status(Code.MISCONFIGURED, str(exc), self.name))
            matched = mask if matched is None else matched | mask
        if matched is None:
            return FilterResult(candidates)
        if not cycle.scratch.get("explain"):
            return FilterResult(matched)
        return FilterResult(matched, reasons=_reasons(predicates, fleet, candidates & ~matched))


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
