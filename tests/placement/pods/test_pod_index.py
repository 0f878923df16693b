"""The counted-pod index the pod-aware plugins read, and the hypothetical overlay."""

from __future__ import annotations

import numpy as np

from apis.core import Pod
from apis.meta import LabelSelector, LabelSelectorRequirement
from placement.pods.cluster.overlay import NO_OVERLAY
from placement.pods.cluster.pod_index import HISTORY, PodIndex
from placement.pods.cluster.podinfo import PodInfo


def _info(name: str, ns: str = "a", priority: int = 0, **labels: str) -> PodInfo:
    pod = Pod.model_validate(
        {"metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": {"containers": []}}
    )
    return PodInfo.of(pod, priority=priority)


def _names(pods: list[PodInfo]) -> list[str]:
    return sorted(p.name for p in pods)


def test_matching_narrows_by_label_and_checks_the_whole_selector() -> None:
    index = PodIndex()
    index.add(_info("web-1", app="web", tier="front"), "n1")
    index.add(_info("web-2", app="web", tier="back"), "n2")
    index.add(_info("db", app="db"), "n1")
    index.add(_info("web-b", ns="b", app="web"), "n3")
    sel = LabelSelector(
        match_labels={"app": "web"},
        match_expressions=[LabelSelectorRequirement(key="tier", operator="In", values=["front"])],
    )
    assert _names(index.matching(sel, ["a"])) == ["web-1"]
    web = LabelSelector(match_labels={"app": "web"})
    assert _names(index.matching(web, None)) == ["web-1", "web-2", "web-b"]
    assert _names(index.matching(LabelSelector(), ["a"])) == ["db", "web-1", "web-2"]
    assert index.matching(None, None) == []
    index.remove("a/web-1")
    assert _names(index.matching(web, ["a"])) == ["web-2"]
    assert index.node_of("a/web-1") is None and index.node_of("a/db") == "n1"


def test_subsets_follow_counts_and_changes_replay() -> None:
    index = PodIndex()
    index.add(_info("x", special="yes"), "n1")
    special = index.subset("special", lambda p: "special" in p.labels)
    assert list(special) == ["a/x"]
    start = index.generation
    index.add(_info("y", special="no"), "n2")
    index.add(_info("z"), "n2")
    index.remove("a/x")
    assert sorted(special) == ["a/y"]
    changes = index.changes_since(start)
    assert changes is not None
    assert [(c.info.name, c.node, c.sign) for c in changes] == [
        ("y", "n2", 1),
        ("z", "n2", 1),
        ("x", "n1", -1),
    ]
    assert index.changes_since(index.generation) == []
    for i in range(HISTORY + 1):
        index.add(_info(f"p{i}"), "n1")
    assert index.changes_since(start) is None


def test_moving_a_pod_is_one_uncount_and_one_count() -> None:
    index = PodIndex()
    index.add(_info("x", app="a"), "n1")
    before = index.generation
    index.add(_info("x", app="b"), "n2")
    changes = index.changes_since(before)
    assert changes is not None and [(c.node, c.sign) for c in changes] == [("n1", -1), ("n2", 1)]
    assert index.matching(LabelSelector(match_labels={"app": "a"}), None) == []
    assert len(index) == 1


def test_overlay_gone_and_added() -> None:
    low, high = _info("low", priority=1), _info("high", priority=10)
    assert NO_OVERLAY.empty and not NO_OVERLAY.gone(low, 0)
    below = NO_OVERLAY.below_priority(np.array([5, np.iinfo(np.int64).min], dtype=np.int64))
    assert below.gone(low, 0) and not below.gone(high, 0) and not below.gone(low, 1)
    removing = below.removing(["a/high"])
    assert removing.gone(high, 1) and not removing.empty
    added = NO_OVERLAY.adding([(3, high)])
    assert added.added_on(3) == [high] and added.added_on(2) == []
