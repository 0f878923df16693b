"""Label and claim selectors compiled to boolean masks over a snapshot's coded columns.

Semantics are Kubernetes': requirements are ANDed, `NotIn` and `DoesNotExist` match a missing
key, an empty selector matches every row. An invalid requirement (In without values, Exists
with values) raises `SelectorError` with Kubernetes' wording; the caller reports it as a
misconfiguration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from apis.meta import LabelSelector, LabelSelectorRequirement
from apis.placements import ClaimSelector
from placement.arrays import BoolMask
from placement.snapshot import Column, FleetSnapshot

__all__ = [
    "SelectorError",
    "cluster_mask",
    "labels_match",
    "requirements_mask",
    "selector_mask",
]


class SelectorError(ValueError):
    """A selector that Kubernetes would refuse to build."""


def _check(req: LabelSelectorRequirement) -> None:
    values = req.values or []
    if req.operator in ("In", "NotIn") and not values:
        raise SelectorError(
            f"values: Invalid value: {values}: for 'in', 'notin' operators, "
            "values set can't be empty"
        )
    if req.operator in ("Exists", "DoesNotExist") and values:
        raise SelectorError(
            f"values: Invalid value: {values}: "
            "values set must be empty for exists and does not exist"
        )


def requirements_mask(
    requirements: Sequence[LabelSelectorRequirement],
    column: Callable[[str], Column],
    size: int,
    within: BoolMask | None = None,
) -> BoolMask:
    """AND of the requirements over `column(key)`; `within` limits the rows considered."""
    mask = np.ones(size, dtype=bool) if within is None else within.copy()
    for req in requirements:
        _check(req)
        codes = column(req.key).codes
        if req.operator == "Exists":
            mask &= codes >= 0
        elif req.operator == "DoesNotExist":
            mask &= codes < 0
        else:
            col = column(req.key)
            hit = _has_code(codes, [col.code_of(v) for v in req.values or []], len(col.values))
            mask &= hit if req.operator == "In" else ~hit
    return mask


_FEW_CODES = 8  # up to this many values, comparisons beat a lookup table


def _has_code(codes: npt.NDArray[np.int32], wanted: list[int], distinct: int) -> BoolMask:
    """`np.isin(codes, wanted)` without its sort (50-100x slower on int32 columns): codes are
    -1 (absent) or < `distinct`; a wanted code < 0 (a value no row has) matches nothing."""
    present = [code for code in wanted if code >= 0]
    if not present:
        return np.zeros(codes.size, dtype=bool)
    if len(present) > _FEW_CODES:
        table = np.zeros(distinct + 1, dtype=bool)
        table[np.asarray(present) + 1] = True
        hit: BoolMask = table.take(codes + 1)
        return hit
    hit = codes == present[0]
    for code in present[1:]:
        hit |= codes == code
    return hit


def selector_mask(
    selector: LabelSelector | None,
    column: Callable[[str], Column],
    size: int,
    within: BoolMask | None = None,
) -> BoolMask:
    """Rows matching a metav1.LabelSelector (matchLabels ANDed with matchExpressions)."""
    requirements = list(_match_labels(selector.match_labels or {}) if selector else [])
    if selector and selector.match_expressions:
        requirements.extend(selector.match_expressions)
    return requirements_mask(requirements, column, size, within)


def _match_labels(labels: Mapping[str, str]) -> list[LabelSelectorRequirement]:
    return [LabelSelectorRequirement(key=k, operator="In", values=[v]) for k, v in labels.items()]


def cluster_mask(
    labels: LabelSelector | None,
    claims: ClaimSelector | None,
    fleet: FleetSnapshot,
    within: BoolMask | None = None,
) -> BoolMask:
    """Rows matching a label selector AND a claim selector (as predicates and decision groups
    combine them); raises SelectorError."""
    mask = selector_mask(labels, fleet.label, fleet.size, within)
    if claims and claims.match_expressions:
        mask = requirements_mask(claims.match_expressions, fleet.claim, fleet.size, mask)
    return mask


def labels_match(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether one object's labels match a selector (for event fan-out, where there is one
    object, not a fleet of rows); raises SelectorError as `selector_mask` does."""
    requirements = list(_match_labels(selector.match_labels or {}) if selector else [])
    if selector and selector.match_expressions:
        requirements.extend(selector.match_expressions)
    for req in requirements:
        _check(req)
        present = req.key in labels
        if req.operator == "Exists":
            ok = present
        elif req.operator == "DoesNotExist":
            ok = not present
        else:
            hit = present and labels[req.key] in (req.values or [])
            ok = hit if req.operator == "In" else not hit
        if not ok:
            return False
    return True
