"""`Steady`: 100 for clusters this placement already decides, 0 otherwise."""

from __future__ import annotations

import numpy as np

from placement.framework import Cycle
from placement.testing import NOW, cluster, decision, placement, snapshot
from plugins.steady import Steady


def test_steady_prefers_clusters_already_in_this_placements_decisions() -> None:
    fleet = snapshot(
        [
            cluster("a"),
            cluster("b"),
            cluster("c"),
            decision("apps", "web", ["b"], index=1),
            decision("apps", "web", ["c"], index=2),
        ]
    )
    result = Steady().score(Cycle(NOW), placement("apps", "web"), fleet, np.arange(3))
    assert result.scores.tolist() == [0, 100, 100]


def test_steady_ignores_decisions_of_other_placements_and_namespaces() -> None:
    fleet = snapshot(
        [
            cluster("a"),
            cluster("b"),
            decision("apps", "other", ["a"]),
            decision("elsewhere", "web", ["b"]),
        ]
    )
    result = Steady().score(Cycle(NOW), placement("apps", "web"), fleet, np.arange(2))
    assert result.scores.tolist() == [0, 0]
