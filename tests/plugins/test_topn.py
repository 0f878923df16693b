"""`TopN`: score descending, name ascending (byte order); numberOfClusters unset = all."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from placement.framework import Cycle
from placement.testing import NOW, cluster, placement, snapshot
from plugins.topn import TopN

# Byte order puts digits before letters, and "a-2" before "a1".
FLEET = snapshot([cluster(n) for n in ("b", "a1", "a-2", "0b", "c")])


def picked(total: list[int], number: int | None, candidates: list[bool] | None = None) -> list[str]:
    # totals are given in snapshot row order: 0b, a-2, a1, b, c
    assert FLEET.names == ("0b", "a-2", "a1", "b", "c")
    mask = np.ones(FLEET.size, bool) if candidates is None else np.array(candidates)
    rows = np.flatnonzero(mask)
    spec: dict[str, Any] = {} if number is None else {"numberOfClusters": number}
    totals = np.array(total, dtype=np.int64)[rows]  # aligned with the candidate rows
    selection = TopN().select(Cycle(NOW), placement("apps", "p", **spec), FLEET, rows, totals)
    return FLEET.rows_to_names(selection.rows)


def test_topn_orders_by_score_descending() -> None:
    assert picked([1, 5, 3, 4, 2], None) == ["a-2", "b", "a1", "c", "0b"]


def test_topn_breaks_ties_by_name_in_byte_order() -> None:
    assert picked([0, 0, 0, 0, 0], None) == ["0b", "a-2", "a1", "b", "c"]


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        pytest.param(0, [], id="zero-selects-none"),
        pytest.param(2, ["b", "a1"], id="top-two"),
        pytest.param(10, ["b", "a1", "0b", "a-2", "c"], id="more-than-feasible"),
    ],
)
def test_topn_takes_number_of_clusters(number: int, expected: list[str]) -> None:
    assert picked([7, 7, 9, 10, 7], number) == expected


def test_topn_ignores_non_candidates() -> None:
    assert picked([0, 100, 0, 0, 0], 2, [True, False, True, True, True]) == ["0b", "a1"]
