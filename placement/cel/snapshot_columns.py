"""CEL selectors of column tests (`placement.cel.columns`) answered from the snapshot's columns
for many clusters at once: the verdicts the interpreter would give, without inflating one
object or running one expression, but for the clusters the columns cannot be sure of (a
resource missing or too close to the literal), which are left to the interpreter.

Each test gives every cluster one of four states: true, false, an error (with the
interpreter's message) or unknown; `&&`, `||` and `!` combine them as CEL does (an error loses
to a deciding operand on either side, of two errors the left one stands), unknown whenever the
outcome depends on it."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from placement.arrays import RowIndex
from placement.cel.columns import TIE, TIE_RANGE, Both, ColumnNode, LabelTest, Not, QuantityTest
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["column_verdicts"]

FALSE, TRUE, ERROR, UNKNOWN = 0, 1, 2, 3
_NEGATE = np.array([TRUE, FALSE, ERROR, UNKNOWN], dtype=np.int8)

States = npt.NDArray[np.int8]
Messages = dict[int, str]
"""An error message by position in the rows evaluated."""

_UNIT = {"cpu": 1e-3, "memory": 1.0}
"""How far a resource column may be from the object's value: the index's row-made document
writes cpu in millicores and memory in bytes; float rounding is far below both."""


class _Fleet:
    """The rows being evaluated, and what several tests share about them."""

    def __init__(self, fleet: FleetSnapshot, rows: RowIndex) -> None:
        self.fleet = fleet
        self.rows = rows
        self._unlabelled: npt.NDArray[np.bool_] | None = None

    def unlabelled(self) -> npt.NDArray[np.bool_]:
        """Which rows have no label at all (their document has no `labels`)."""
        if self._unlabelled is None:
            labelled = np.zeros(self.rows.size, dtype=bool)
            for column in self.fleet.labels.values():
                labelled |= column.codes[self.rows] >= 0
            self._unlabelled = ~labelled
        return self._unlabelled


def column_verdicts(
    plan: tuple[ColumnNode, ...], fleet: FleetSnapshot, rows: RowIndex
) -> tuple[npt.NDArray[np.int16], Messages, npt.NDArray[np.bool_]]:
    """For each of `rows`: the index of the first expression it fails (-1: all pass), the
    error of the rows whose failing expression did not evaluate (by position in `rows`), and
    which rows the columns could not decide (their verdict is to be asked of the interpreter)."""
    failed = np.full(rows.size, -1, dtype=np.int16)
    errors: Messages = {}
    undecided = np.zeros(rows.size, dtype=bool)
    view = _Fleet(fleet, rows)
    alive = np.arange(rows.size)
    for index, node in enumerate(plan):
        if not alive.size:
            break
        states, messages = _states(node, view, alive)
        undecided[alive[states == UNKNOWN]] = True
        failed[alive[(states == FALSE) | (states == ERROR)]] = index
        for at in alive[states == ERROR].tolist():
            errors[at] = messages[at]
        alive = alive[states == TRUE]
    return failed, errors, undecided


def _states(node: ColumnNode, view: _Fleet, at: RowIndex) -> tuple[States, Messages]:
    """The state of `node` on the rows at positions `at`, and the errors by position."""
    if isinstance(node, LabelTest):
        return _label(node, view, at)
    if isinstance(node, QuantityTest):
        return _quantity(node, view, at), {}
    if isinstance(node, Not):
        states, found = _states(node.operand, view, at)
        return _NEGATE[states], found
    left, left_messages = _states(node.left, view, at)
    right, right_messages = _states(node.right, view, at)
    decides, gives = (FALSE, FALSE) if isinstance(node, Both) else (TRUE, TRUE)
    keeps = TRUE if isinstance(node, Both) else FALSE
    out = np.full(at.size, ERROR, dtype=np.int8)
    out[(left == UNKNOWN) | (right == UNKNOWN)] = UNKNOWN
    out[(left == keeps) & (right == keeps)] = keeps
    out[(left == decides) | (right == decides)] = gives
    messages: Messages = {}
    for i in np.flatnonzero(out == ERROR).tolist():
        position = int(at[i])
        messages[position] = (
            left_messages[position] if left[i] == ERROR else right_messages[position]
        )
    return out, messages


def _label(test: LabelTest, view: _Fleet, at: RowIndex) -> tuple[States, Messages]:
    rows = view.rows[at]
    if test.key is None:  # metadata.name: always there
        index = view.fleet.index
        named = [index[value] for value in test.values if value in index]
        hit = np.isin(rows, np.asarray(named, dtype=np.intp))
        present = np.ones(rows.size, dtype=bool)
    else:
        column = view.fleet.label(test.key)
        codes = column.codes[rows]
        present = codes >= 0
        wanted = [column.code_of(v) for v in test.values]
        hit = np.isin(codes, np.asarray(wanted, dtype=np.int32))
    passed = present & (~hit if test.operator == "!=" else hit)
    states = np.where(passed, TRUE, FALSE).astype(np.int8)
    states[~present] = ERROR
    messages: Messages = {}
    absent = at[~present]
    if absent.size:
        unlabelled = view.unlabelled()
        for position in absent.tolist():
            key = "labels" if unlabelled[position] else str(test.key)
            messages[position] = f"no such key: {key}"
    return states, messages


def _quantity(test: QuantityTest, view: _Fleet, at: RowIndex) -> States:
    columns = view.fleet.allocatable if test.field == "allocatable" else view.fleet.capacity
    values = columns[test.resource][view.rows[at]]
    threshold = test.threshold
    with np.errstate(invalid="ignore", over="ignore"):
        margin = 1e-9 * np.maximum(abs(threshold), np.abs(values)) + _UNIT[test.resource]
        distance = values - threshold
        apart = np.isfinite(values) & (np.abs(distance) > margin)
        sure = apart
        if test.ties:
            sure = apart | ((np.abs(distance) <= TIE) & (np.abs(values) <= TIE_RANGE))
    outcome = np.sign(np.where(apart, distance, 0.0)).astype(np.int8)
    passed = np.isin(outcome, np.asarray(sorted(test.passes), dtype=np.int8))
    states = np.where(passed, TRUE, FALSE).astype(np.int8)
    states[~sure] = UNKNOWN
    return states
