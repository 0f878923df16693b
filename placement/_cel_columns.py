"""Label-test CEL selectors (`placement.cel.columns`) answered from the snapshot's label
columns for many clusters at once: the verdicts the interpreter would give, without inflating
one object or running one expression."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from placement.arrays import RowIndex
from placement.cel.columns import LabelTest
from placement.snapshot import FleetSnapshot

__all__ = ["column_verdicts"]


def column_verdicts(
    tests: tuple[LabelTest, ...], fleet: FleetSnapshot, rows: RowIndex
) -> tuple[npt.NDArray[np.int16], dict[int, str]]:
    """For each of `rows`: the index of the first test it fails (-1: all pass), and the error
    of the rows whose failing test could not read its label (by position in `rows`)."""
    failed = np.full(rows.size, -1, dtype=np.int16)
    errors: dict[int, str] = {}
    unlabelled: npt.NDArray[np.bool_] | None = None
    for index, test in enumerate(tests):
        alive = np.flatnonzero(failed < 0)
        if not alive.size:
            break
        if test.key is None:  # metadata.name: always there
            names = [fleet.names[row] for row in rows[alive].tolist()]
            hit = np.fromiter((n in test.values for n in names), bool, len(names))
            present = np.ones(alive.size, dtype=bool)
        else:
            column = fleet.label(test.key)
            codes = column.codes[rows[alive]]
            present = codes >= 0
            wanted = [column.code_of(v) for v in test.values]
            hit = np.isin(codes, np.asarray(wanted, dtype=np.int32))
        passed = present & (~hit if test.operator == "!=" else hit)
        failing = alive[~passed]
        failed[failing] = index
        absent = alive[~present]
        if absent.size:
            if unlabelled is None:
                unlabelled = _unlabelled(fleet, rows)
            for at in absent.tolist():
                key = "labels" if unlabelled[at] else str(test.key)
                errors[at] = f"no such key: {key}"
    return failed, errors


def _unlabelled(fleet: FleetSnapshot, rows: RowIndex) -> npt.NDArray[np.bool_]:
    """Which of `rows` have no label at all (their document has no `labels`)."""
    labelled = np.zeros(rows.size, dtype=bool)
    for column in fleet.labels.values():
        labelled |= column.codes[rows] >= 0
    return ~labelled
