"""Selectors that read only label values, the name, the claims list, annotations and add-on
scores named by a literal (`placement.cel.reads`) evaluated once per distinct set of the values
they read, not once per cluster: fleets repeat a few values of each label, a few claims lists
and a few score values, so `semver(labels["version"])...`,
`labels["zone"].matches(...)` or `clusterClaims.exists(c, ...)` runs the interpreter a handful
of times on 10,000 clusters, on a document holding just the values read (made from the label
columns and the coded claims lists: no cluster object is inflated). The verdict is the one the
whole object gives, since the expressions read nothing else of it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from placement.arrays import BoolMask, RowIndex
from placement.cel import PER_CALL_LIMIT, CelSelector, Verdict
from placement.cel.claim_reads import ClaimNames
from placement.cel.document import NOT_KEPT, claim_projector, claims_document
from placement.cel.reads import LabelReads
from placement.snapshot.fleet_snapshot import Column, FleetSnapshot

__all__ = ["groupable", "grouped_rows", "grouped_verdicts"]

_NOT_KEPT = "\0not kept"
"""Where `CelInputs.annotation_columns` notes the rows whose annotations are `NOT_KEPT`."""
_SCORE = "\0score"
"""With a score's name and the item names kept: where `CelInputs.cache` holds each row's
items of that score, coded, for the snapshot's revisions."""
_OTHER = "\0other"
"""A label key no expression reads: it keeps `labels` in the document of a cluster whose labels
are all unread (the typed document drops `labels` only when the cluster has none)."""


def groupable(reads: LabelReads | None, fleet: FleetSnapshot) -> bool:
    """Whether the snapshot holds what the expressions read (the claims lists, if read)."""
    if reads is None:
        return False
    inputs = fleet.cel
    if reads.claims and (inputs is None or inputs.claim_lists is None):
        return False
    return not reads.annotations or (inputs is not None and inputs.annotations is not None)


def grouped_rows(reads: LabelReads, fleet: FleetSnapshot, rows: RowIndex) -> BoolMask:
    """Which of `rows` the groups decide: all but, when annotations are read, the clusters with
    an annotation too long for the rows to keep (`NOT_KEPT`), which run on their objects."""
    if not reads.annotations:
        return np.ones(rows.size, dtype=bool)
    return _annotation(fleet, _NOT_KEPT).codes[rows] < 0


def grouped_verdicts(
    selector: CelSelector,
    reads: LabelReads,
    fleet: FleetSnapshot,
    rows: RowIndex,
    timer: Callable[[], Callable[[], None]] | None = None,
) -> tuple[npt.NDArray[np.int16], dict[int, str]]:
    """For each of `rows`: the index of the expression that rejects it (-1: none) and the
    errors by position in `rows`, the interpreter run once per distinct set of values read
    (`timer`, the CEL runtime metric's hook, around each run)."""
    keys = sorted(reads.keys)
    columns = [fleet.label(key) for key in keys]
    labelled = np.zeros(rows.size, dtype=bool)
    if keys:  # whether a cluster has labels matters only to an expression reading them
        for column in fleet.labels.values():
            labelled |= column.codes[rows] >= 0
    parts: list[tuple[npt.NDArray[Any], int]] = [(c.codes[rows], len(c.values)) for c in columns]
    parts.append((labelled, 2))
    claim_lists = fleet.cel.claim_lists if reads.claims and fleet.cel is not None else None
    projected: tuple[str, ...] | None = None
    if claim_lists is not None:
        codes = claim_lists.codes[rows]
        if reads.claim_names is None:
            parts.append((codes, len(claim_lists.values)))
        else:  # only the claims of some names matter: group by those
            projected, codes, sizes = _projected(claim_lists.values, codes, reads)
            parts.append((codes, len(projected)))
    notes = sorted(reads.annotations)
    notes_columns = [_annotation(fleet, key) for key in notes]
    annotated = np.zeros(rows.size, dtype=bool)
    if notes:  # whether a cluster has annotations matters only when they are read
        annotated = _annotation(fleet, _OTHER).codes[rows] >= 0
        parts.extend((c.codes[rows], len(c.values)) for c in notes_columns)
        parts.append((annotated, 2))
    score_names = sorted(reads.scores)
    kept_items = dict(reads.score_items)
    score_columns = [_score_column(fleet, name, kept_items.get(name)) for name in score_names]
    parts.extend((c.codes[rows], len(c.values)) for c in score_columns)
    # the items left out of a projected score each cost scores()'s charge of an item and the
    # charge of an iteration of the macros over the list
    left_out = np.zeros(rows.size, dtype=np.int64)
    for name, score in zip(score_names, score_columns, strict=True):
        if score.dropped is not None:
            left_out += score.dropped[rows] * (_SCORE_ITEM_CHARGE + kept_items[name].per_claim)
    if reads.name:
        parts.append((rows, fleet.size))
    first, inverse, count = _groups(parts)
    failed = np.full(count, -1, dtype=np.int16)
    most = np.zeros(count, dtype=np.int64)  # the most a group's left-out items could charge
    if projected is not None and reads.claim_names is not None:
        left_out += sizes * reads.claim_names.per_claim
    np.maximum.at(most, inverse, left_out)
    group_errors: dict[int, str] = {}
    whole: list[int] = []
    documents: list[dict[str, Any]] = []
    lookups: list[Callable[[str, str], Sequence[Mapping[str, Any]] | None]] = []
    for group, position in enumerate(first.tolist()):
        row = int(rows[position])
        lookups.append(_group_scores(score_names, score_columns, row))
        labels = {}
        for key, column in zip(keys, columns, strict=True):
            value = column.value_at(row)
            if value is not None:
                labels[key] = value
        if not labels and labelled[position]:
            labels[_OTHER] = ""
        metadata: dict[str, Any] = {"labels": labels} if labels else {}
        if reads.name or score_names:  # `scores()` looks its cluster up by name
            metadata["name"] = fleet.names[row] if reads.name else ""
        if annotated[position]:
            kept = {k: c.value_at(row) for k, c in zip(notes, notes_columns, strict=True)}
            metadata["annotations"] = {k: v for k, v in kept.items() if v is not None} or {
                _OTHER: ""
            }
        document: dict[str, Any] = {"metadata": metadata}
        if claim_lists is not None:
            # `status` is always there (Go's struct); `clusterClaims` only when not empty
            listed = claim_lists.value_at(row)
            if projected is not None and codes[position] >= 0:
                listed = projected[codes[position]]
            document["status"] = {"clusterClaims": claims_document(listed)} if listed else {}
        documents.append(document)
        verdict = _run(selector, document, timer, lookups[group])
        # the claims and score items left out each cost the charge of an iteration in the
        # whole list: when they could spend the budget, the whole lists decide (never on real
        # fleets)
        extra = int(most[group])
        if extra and verdict.cost + extra > PER_CALL_LIMIT:
            whole.append(group)
        if verdict.failed is not None:
            failed[group] = verdict.failed
        if verdict.error is not None:
            group_errors[group] = verdict.error
    by_row = inverse
    errors = {}
    if group_errors:
        for position in np.flatnonzero(np.isin(by_row, list(group_errors))).tolist():
            errors[position] = group_errors[int(by_row[position])]
    verdicts = failed[by_row]
    for group in whole:
        for position in np.flatnonzero(by_row == group).tolist():
            row = int(rows[position])
            listed = claim_lists.value_at(row) if claim_lists is not None else None
            status = {"clusterClaims": claims_document(listed)} if listed else {}
            document = {**documents[group], "status": status} if claim_lists else documents[group]
            verdict = _run(selector, document, timer, _whole_scores(fleet, row))
            verdicts[position] = -1 if verdict.failed is None else verdict.failed
            errors.pop(position, None)
            if verdict.error is not None:
                errors[position] = verdict.error
    return verdicts, errors


def _annotation(fleet: FleetSnapshot, key: str) -> Column:
    """The annotation `key` of every row, coded (made on first use in this snapshot);
    `_OTHER`: "" for every row that has annotations."""
    inputs = fleet.cel
    assert inputs is not None and inputs.annotations is not None
    column = inputs.annotation_columns.get(key)
    if column is None:
        notes = inputs.annotations
        if key == _OTHER:
            cells = [(row, "") for row, kept in enumerate(notes) if kept]
        elif key == _NOT_KEPT:
            cells = [(row, "") for row, kept in enumerate(notes) if kept is NOT_KEPT]
        else:
            cells = [(row, kept[key]) for row, kept in enumerate(notes) if key in kept]
        column = inputs.annotation_columns[key] = Column.build(len(notes), cells)
    return column


_SCORE_ITEM_CHARGE = 1 + 30
"""What `scores()` charges per item (OCM's cost estimate)."""


@dataclass(frozen=True)
class _ScoreCodes:
    """Each row's items of one score (as `(name, value)` pairs), coded: -1 for no score."""

    codes: npt.NDArray[np.int64]
    values: list[tuple[tuple[Any, Any], ...]]
    dropped: npt.NDArray[np.int64] | None
    """How many items each row's list left out (None: all kept)."""

    def items_at(self, row: int) -> list[dict[str, Any]] | None:
        code = int(self.codes[row])
        if code < 0:
            return None
        return [{"name": name, "value": value} for name, value in self.values[code]]


def _score_column(fleet: FleetSnapshot, name: str, kept: ClaimNames | None) -> _ScoreCodes:
    """The items of each row's AddOnPlacementScore `name`, only those named in `kept` when
    given, coded (made once per revisions array: every placement reading it shares it)."""
    inputs = fleet.cel
    assert inputs is not None
    names = None if kept is None else kept.names
    key = (_SCORE, name, names)
    found = inputs.cache.get(key)
    if found is not None and found[0] is inputs.revisions:
        return cast(_ScoreCodes, found[1])
    codes = np.full(fleet.size, -1, dtype=np.int64)
    dropped = np.zeros(fleet.size, dtype=np.int64) if names is not None else None
    index: dict[tuple[tuple[Any, Any], ...], int] = {}
    lookup = inputs.scores
    for row, cluster in enumerate(fleet.names):
        items = lookup(cluster, name) if cluster else None
        if items is None:
            continue
        listed = tuple(
            (i["name"], i["value"]) for i in items if names is None or i["name"] in names
        )
        if dropped is not None:
            dropped[row] = len(items) - len(listed)
        codes[row] = index.setdefault(listed, len(index))
    column = _ScoreCodes(codes, list(index), dropped)
    inputs.cache[key] = (inputs.revisions, column)
    return column


def _group_scores(
    names: list[str], columns: list[_ScoreCodes], row: int
) -> Callable[[str, str], Sequence[Mapping[str, Any]] | None]:
    """The score look-up of a group: its rows share the items of every score read (those
    named as its expressions test them), whoever the cluster."""
    held = {name: column.items_at(row) for name, column in zip(names, columns, strict=True)}
    return lambda _cluster, name: held.get(name)


def _whole_scores(
    fleet: FleetSnapshot, row: int
) -> Callable[[str, str], Sequence[Mapping[str, Any]] | None]:
    """The score look-up of one row, every item of its scores."""
    inputs, cluster = fleet.cel, fleet.names[row]
    assert inputs is not None
    return lambda _cluster, name: inputs.scores(cluster, name)


def _projected(
    values: tuple[str, ...], codes: npt.NDArray[np.int32], reads: LabelReads
) -> tuple[tuple[str, ...], npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """The claims lists of `values` at `codes` projected on the names read: the distinct
    projections, the code of each position's, and how many claims each position's list has
    at most."""
    assert reads.claim_names is not None
    project = claim_projector(reads.claim_names.names)
    used = np.unique(codes[codes >= 0]).tolist()
    index: dict[str, int] = {}
    remap = np.full(len(values) + 1, -1, dtype=np.int32)  # the last: absent (-1)
    remap[used] = [index.setdefault(project(values[code]), len(index)) for code in used]
    # n claims take at least 8n + 1 characters (`[["",""],...]`): n <= len // 7
    counts = np.zeros(len(values) + 1, dtype=np.int64)
    counts[used] = [len(values[code]) // 7 for code in used]
    return tuple(index), remap[codes], counts[codes]


_KEY_LIMIT = 1 << 62


def _groups(
    parts: list[tuple[npt.NDArray[Any], int]],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], int]:
    """The distinct tuples of `parts` (arrays of codes from -1 to the bound given, exclusive):
    the first position of each, the group of each position, how many. The codes are mixed into
    one int64 key when it fits (a sort of integers, not of rows of a matrix: 10x faster)."""
    key = np.zeros(parts[0][0].size, dtype=np.int64)
    scale = 1
    for codes, bound in parts:
        if scale * (bound + 1) >= _KEY_LIMIT:
            matrix = np.stack([c.astype(np.int64) for c, _ in parts], axis=1)
            _, first, inverse = np.unique(matrix, axis=0, return_index=True, return_inverse=True)
            return first, inverse.reshape(-1), first.size
        key += (codes.astype(np.int64) + 1) * scale
        scale *= bound + 1
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1), first.size


def _run(
    selector: CelSelector,
    document: dict[str, Any],
    timer: Callable[[], Callable[[], None]] | None,
    scores: Callable[[str, str], Sequence[Mapping[str, Any]] | None],
) -> Verdict:
    if timer is None:
        return selector.evaluate(document, scores)
    done = timer()
    try:
        return selector.evaluate(document, scores)
    finally:
        done()
