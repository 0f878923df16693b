"""`Predicate` filter: label, claim (and, later, CEL) selectors; predicates ORed, parts ANDed."""

from __future__ import annotations

from apis.placements import Placement
from placement.framework import BoolMask, Code, Cycle, FilterResult, Status
from placement.selectors import SelectorError, cluster_mask
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
        return FilterResult(candidates if matched is None else matched)
