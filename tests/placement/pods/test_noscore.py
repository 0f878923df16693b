"""`no_scores`: the Score plugins' Skip (issue 29). The marker is a shared read-only vector of
zeros the cycle leaves out of the total; plugins answer it only when every row scores 0, and an
ordinary vector of zeros is not mistaken for it."""

from __future__ import annotations

import numpy as np
import pytest

from placement.pods.framework.noscore import adds_nothing, no_scores
from plugins.pods.nodeaffinity.node_affinity import NodeAffinity
from tests.plugins.pods.builders import all_rows, cycle, node, pod, snapshot
from tests.plugins.pods.imagelocality.test_imagelocality import BIG, SMALL, fed, image_pod

PREFERS_SPOT = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 5,
                "preference": {
                    "matchExpressions": [{"key": "kind", "operator": "In", "values": ["spot"]}]
                },
            }
        ]
    }
}


def test_the_marker_is_shared_read_only_zeros() -> None:
    first = no_scores(7)
    assert first is no_scores(7)
    assert first.dtype == np.int64 and first.shape == (7,) and not first.any()
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 1
    assert adds_nothing(first)
    assert not adds_nothing(np.zeros(7, dtype=np.int64))  # an ordinary zero vector counts


def test_node_affinity_skips_only_without_preferred_terms() -> None:
    nodes = snapshot([node("a", labels={"kind": "spot"}), node("b", labels={"kind": "od"})])
    plugin = NodeAffinity()
    rows = all_rows(nodes)
    assert adds_nothing(plugin.score(cycle(), pod(), nodes, rows))
    preferring = plugin.score(cycle(), pod(affinity=PREFERS_SPOT), nodes, rows)
    assert not adds_nothing(preferring)
    assert preferring.tolist() == [100, 0]


def test_image_locality_skips_only_when_no_node_holds_an_image() -> None:
    plugin, nodes = fed(BIG, SMALL)
    rows = all_rows(nodes)
    assert adds_nothing(plugin.score(cycle(), image_pod("gcr.io/unknown:v9"), nodes, rows))
    held = plugin.score(cycle(), image_pod("gcr.io/2000:latest"), nodes, rows)
    assert not adds_nothing(held) and held.any()
    # asked again (the memo), the answers stay apart
    assert adds_nothing(plugin.score(cycle(), image_pod("gcr.io/unknown:v9"), nodes, rows))
