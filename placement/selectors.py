"""Label and claim selectors compiled to boolean masks over a snapshot's coded columns.

Semantics are Kubernetes': requirements are ANDed, `NotIn` and `DoesNotExist` match a missing
key, an empty selector matches every row. An invalid requirement (In without values, Exists
with values, an unknown operator, a key or value that is no label key or value) raises
`SelectorError` with apimachinery's exact wording (`requirement_error`); the caller reports it
as a misconfiguration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from apis.fielderrors import aggregate, go_quote, invalid, label_key_problems, label_value_problems
from apis.meta import LabelSelector, LabelSelectorRequirement
from apis.placements import ClaimSelector
from placement.arrays import BoolMask, RowIndex
from placement.cel import CelSelector, Verdict
from placement.cel.groups import groupable, grouped_rows, grouped_verdicts
from placement.cel.snapshot_columns import column_verdicts
from placement.snapshot.fleet_snapshot import CelInputs, Column, FleetSnapshot

__all__ = [
    "CelTimer",
    "SelectorError",
    "cel_mask",
    "cluster_mask",
    "labels_match",
    "requirement_error",
    "requirements_mask",
    "selector_error",
    "selector_mask",
    "selector_problems",
]


class SelectorError(ValueError):
    """A selector that Kubernetes would refuse to build."""


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def requirement_error(req: LabelSelectorRequirement) -> str | None:
    """The error apimachinery's `LabelSelectorAsSelector` gives for this requirement, word for
    word (OCM puts it in its Misconfigured message), or None when it is valid: an operator
    outside the four (case matters: `in` is not `In`), then, aggregated as Go does, a key that
    is no label key, a values list the operator does not allow, each value that is no label
    value (claim selectors included: OCM builds them with the same function)."""
    values = tuple(req.values) if req.values else ()
    return _requirement_error(req.key, req.operator, values)


@lru_cache(maxsize=4096)
def _requirement_error(key: str, operator: str, listed: tuple[str, ...]) -> str | None:
    """`requirement_error` by value: a cycle checks the same few requirements again and again."""
    if operator not in _OPERATORS:
        return f"{go_quote(operator)} is not a valid label selector operator"
    values = list(listed) or None  # Go copies an empty list into a nil slice: `null`
    problems = []
    key_problems = label_key_problems(key)
    if key_problems:
        problems.append(invalid("key", key, "; ".join(key_problems)))
    if operator in ("In", "NotIn") and not values:
        problems.append(
            invalid("values", values, "for 'in', 'notin' operators, values set can't be empty")
        )
    if operator in ("Exists", "DoesNotExist") and values:
        problems.append(
            invalid("values", values, "values set must be empty for exists and does not exist")
        )
    for index, value in enumerate(values or ()):
        value_problems = label_value_problems(value)
        if value_problems:
            path = f"values[{index}][{key}]"
            problems.append(invalid(path, value, "; ".join(value_problems)))
    return aggregate(problems)


def _built_requirements(
    selector: LabelSelector | ClaimSelector | None,
) -> Iterator[tuple[str, LabelSelectorRequirement]]:
    """The requirements apimachinery builds from a selector, in its order (matchLabels, then
    matchExpressions), each with its field name (`matchLabels[key]`, `matchExpressions[i]`)."""
    labels = selector.match_labels if isinstance(selector, LabelSelector) else None
    for key, value in (labels or {}).items():
        yield (
            f"matchLabels[{key}]",
            LabelSelectorRequirement(key=key, operator="In", values=[value]),
        )
    for index, req in enumerate((selector.match_expressions if selector else None) or []):
        yield f"matchExpressions[{index}]", req


def selector_error(selector: LabelSelector | ClaimSelector | None) -> str | None:
    """The error `metav1.LabelSelectorAsSelector` returns for this selector (its first bad
    requirement), or None."""
    for _, req in _built_requirements(selector):
        message = requirement_error(req)
        if message is not None:
            return message
    return None


def selector_problems(selector: LabelSelector | ClaimSelector | None, path: str) -> list[str]:
    """Every invalid requirement of a label or claim selector, each as
    `<path>.matchExpressions[i]: <apimachinery's error>`, for `placement validate` (the
    controller reports the first one as Misconfigured)."""
    problems = []
    for name, req in _built_requirements(selector):
        message = requirement_error(req)
        if message is not None:
            problems.append(f"{path}.{name}: {message}")
    return problems


def _check(req: LabelSelectorRequirement) -> None:
    message = requirement_error(req)
    if message is not None:
        raise SelectorError(message)


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


CelTimer = Callable[[], Callable[[], None]]
"""The CEL runtime metric's hook (`cycle.scratch["cel_timer"]`): called before a cluster's
expressions run, it returns what to call after them, which observes the duration (the pure
core reads no clock; the controller's hook does, into scheduling_cel_runtime_duration_seconds)."""


@dataclass
class _CelResults:
    """Verdicts of one selector by stamp (sorted): `failed` -1 when matched, else the index
    of the expression that decided; `errors` the error of a stamp whose expression failed."""

    stamps: npt.NDArray[np.int64]
    failed: npt.NDArray[np.int16]
    errors: dict[int, str]
    # The same verdicts by row of the revisions array `aligned` (a snapshot's, shared by the
    # next snapshots while no cluster changes): `known` rows have one, `row_failed` is it.
    aligned: npt.NDArray[np.int64] | None = None
    known: BoolMask | None = None
    row_failed: npt.NDArray[np.int16] | None = None


_EMPTY_STAMPS = np.zeros(0, dtype=np.int64)


def cel_mask(
    selector: CelSelector,
    fleet: FleetSnapshot,
    within: BoolMask,
    timer: CelTimer | None = None,
    why: dict[int, str] | None = None,
) -> BoolMask:
    """Rows of `within` whose cluster every expression of `selector` accepts.

    A cluster is evaluated only if no result is cached for its stamp (its object and score
    objects unchanged since): the warm path is numpy over the stamps. A selector of column
    tests (labels, name, resources, with `&&`, `||`, `!`) is answered from the snapshot's
    columns instead (`placement.cel.snapshot_columns`), the interpreter deciding only the clusters
    the columns cannot be sure of. With `why`, each rejected row gets the expression that rejected
    it and why (explain)."""
    inputs = fleet.cel
    if inputs is None:
        raise ValueError("this snapshot carries no cluster objects for CEL")
    key = ("cel", selector.expressions)
    cached: _CelResults | None = inputs.cache.get(key)
    if (
        cached is not None
        and cached.aligned is inputs.revisions
        and cached.known is not None
        and cached.row_failed is not None
        and not (within & ~cached.known).any()
    ):
        # Warm: every row has a verdict for this very revisions array.
        mask: BoolMask = within & (cached.row_failed < 0)
        if why is not None:
            _explain(np.flatnonzero(within & ~mask), inputs, cached.row_failed, cached.errors, why)
        return mask
    rows = np.flatnonzero(within)
    stamps = inputs.revisions[rows]
    failed = np.full(rows.size, -1, dtype=np.int16)
    if cached is not None and cached.stamps.size:
        at = np.minimum(np.searchsorted(cached.stamps, stamps), cached.stamps.size - 1)
        hit = cached.stamps[at] == stamps
        failed[hit] = cached.failed[at[hit]]
    else:
        hit = np.zeros(rows.size, dtype=bool)
    missing = np.flatnonzero(~hit)
    errors = cached.errors if cached is not None else {}
    valid = hit
    if missing.size and selector.column_plan is not None:
        # Column tests: the snapshot's columns answer the missing rows at once, but those
        # they cannot be sure of, which the interpreter decides below.
        verdicts, found, undecided = column_verdicts(selector.column_plan, fleet, rows[missing])
        decided = ~undecided
        failed[missing[decided]] = verdicts[decided]
        kept, cached = _keep(inputs, key, cached, stamps[missing], verdicts, found, decided)
        errors = kept if kept is not None else errors
        valid[missing[decided]] = True
        missing = missing[undecided]
    reads = selector.label_reads
    if missing.size and reads is not None and groupable(reads, fleet):
        # Label values, the name, the claims: one interpreter run per distinct set of them.
        sure = grouped_rows(reads, fleet, rows[missing])
        grouped = missing[sure]
        if grouped.size:
            verdicts, found = grouped_verdicts(selector, reads, fleet, rows[grouped], timer)
            failed[grouped] = verdicts
            everything = np.ones(grouped.size, dtype=bool)
            kept, cached = _keep(inputs, key, cached, stamps[grouped], verdicts, found, everything)
            errors = kept if kept is not None else errors
            valid[grouped] = True
        missing = missing[~sure]
    if missing.size:
        fresh: list[tuple[int, int]] = []
        new_errors: dict[int, str] = {}
        for i in missing.tolist():
            name = fleet.names[int(rows[i])]
            current, verdict = _evaluate(selector, inputs, name, timer)
            failed[i] = -1 if verdict.failed is None else verdict.failed
            stamp = int(stamps[i])
            if verdict.error is not None:
                new_errors[stamp] = verdict.error
            if current == stamp:  # else the object is newer than the snapshot: do not cache
                fresh.append((stamp, int(failed[i])))
                valid[i] = True
        if fresh:
            errors = _store(inputs, key, cached, fresh, new_errors, fleet.size)
        else:
            errors = {**errors, **new_errors}
    _align(inputs, key, rows[valid], failed[valid])
    mask = np.zeros(fleet.size, dtype=bool)
    mask[rows[failed < 0]] = True
    if why is not None:
        row_failed = np.full(fleet.size, -1, dtype=np.int16)
        row_failed[rows] = failed
        _explain(rows[failed >= 0], inputs, row_failed, errors, why)
    return mask


def _align(inputs: CelInputs, key: Any, rows: RowIndex, failed: npt.NDArray[np.int16]) -> None:
    """Record the verdicts of `rows` by row too, for the warm path of the next cycles."""
    entry: _CelResults | None = inputs.cache.get(key)
    if entry is None:
        return
    if entry.aligned is not inputs.revisions or entry.known is None or entry.row_failed is None:
        size = inputs.revisions.size
        entry.aligned = inputs.revisions
        entry.known = np.zeros(size, dtype=bool)
        entry.row_failed = np.full(size, -1, dtype=np.int16)
    entry.known[rows] = True
    entry.row_failed[rows] = failed


def _explain(
    rows: RowIndex,
    inputs: CelInputs,
    row_failed: npt.NDArray[np.int16],
    errors: Mapping[int, str],
    why: dict[int, str],
) -> None:
    for row in rows.tolist():
        error = errors.get(int(inputs.revisions[row]))
        detail = f"failed: {error}" if error is not None else "is not true"
        why[row] = f"celExpressions[{int(row_failed[row])}] {detail}"


def _evaluate(
    selector: CelSelector, inputs: CelInputs, name: str, timer: CelTimer | None
) -> tuple[int, Verdict]:
    """The verdict on cluster `name` and the stamp of the object it was made from."""
    stamp, document = inputs.document(name)
    if timer is None:
        return stamp, selector.evaluate(document, inputs.scores)
    done = timer()
    try:
        return stamp, selector.evaluate(document, inputs.scores)
    finally:
        done()


def _keep(
    inputs: CelInputs,
    key: Any,
    cached: _CelResults | None,
    stamps: npt.NDArray[np.int64],
    verdicts: npt.NDArray[np.int16],
    found: Mapping[int, str],
    decided: BoolMask,
) -> tuple[dict[int, str] | None, _CelResults | None]:
    """Cache the `decided` verdicts of rows with these stamps (errors by position): the errors
    of the cache after it (None if nothing was decided) and the cache entry."""
    if not decided.any():
        return None, cached
    fresh_errors = {int(stamps[at]): error for at, error in found.items()}
    fresh = (stamps[decided], verdicts[decided])
    errors = _store(inputs, key, cached, fresh, fresh_errors, inputs.revisions.size)
    return errors, inputs.cache.get(key)


def _store(
    inputs: CelInputs,
    key: Any,
    cached: _CelResults | None,
    fresh: list[tuple[int, int]] | tuple[npt.NDArray[np.int64], npt.NDArray[np.int16]],
    new_errors: dict[int, str],
    size: int,
) -> dict[int, str]:
    """Merge the new verdicts (stamp and verdict pairs, or their two arrays) into the cache;
    drop stamps of older objects once it holds more than twice the fleet."""
    if isinstance(fresh, tuple):
        new_stamps, new_failed = fresh
    else:
        new_stamps = np.fromiter((s for s, _ in fresh), np.int64, len(fresh))
        new_failed = np.fromiter((f for _, f in fresh), np.int16, len(fresh))
    old_stamps = cached.stamps if cached is not None else _EMPTY_STAMPS
    old_failed = cached.failed if cached is not None else np.zeros(0, dtype=np.int16)
    stamps = np.concatenate([old_stamps, new_stamps])
    failed = np.concatenate([old_failed, new_failed])
    errors = {**(cached.errors if cached is not None else {}), **new_errors}
    if stamps.size > 2 * size + 1024:
        live = np.isin(stamps, inputs.revisions)
        stamps, failed = stamps[live], failed[live]
        kept = set(stamps.tolist())
        errors = {s: e for s, e in errors.items() if s in kept}
    stamps, first = np.unique(stamps, return_index=True)
    inputs.cache[key] = _CelResults(stamps, failed[first], errors)
    return errors
