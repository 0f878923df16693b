"""Explain records: OCM's debugger JSON and the per-cluster table rows."""

from __future__ import annotations

from placement.explain import explain_json, explain_rows
from placement.testing import (
    NOW,
    builtin,
    cluster,
    global_set,
    placement,
    predicate,
    snapshot,
    taint,
)
from plugins import default_scheduler

FLEET = snapshot(
    [
        cluster("a", labels={"env": "prod"}, cpu="2"),
        cluster("b", labels={"env": "prod"}, cpu="8"),
        cluster("c", labels={"env": "prod"}, taints=[taint("k")]),
        cluster("d", labels={"env": "dev"}),
        *global_set("apps"),
    ]
)
WEB = placement(
    "apps",
    "web",
    numberOfClusters=1,
    predicates=[predicate({"env": "prod"})],
    prioritizerPolicy={
        "mode": "Exact",
        "configurations": [builtin("ResourceAllocatableCPU", 2), builtin("Steady", 0)],
    },
)


def test_explain_json_has_ocms_debugger_sections() -> None:
    result = default_scheduler().schedule(WEB, FLEET, NOW)
    doc = explain_json(result, FLEET)
    assert doc["placement"]["metadata"] == {"name": "web", "namespace": "apps"}
    assert doc["filteredPipelineResults"] == [
        {"name": "Predicate", "filteredClusters": ["a", "b", "c"]},
        {"name": "Predicate,TaintToleration", "filteredClusters": ["a", "b"]},
    ]
    assert doc["prioritizeResults"] == [
        {"name": "ResourceAllocatableCPU", "weight": 2, "scores": {"a": -100, "b": 100}}
    ]
    assert doc["aggregatedScores"] == [
        {"clusterName": "b", "score": 200},
        {"clusterName": "a", "score": -200},
    ]
    assert doc["error"] == ""


def test_explain_json_reports_the_error_of_a_misconfigured_placement() -> None:
    bad = placement("apps", "web", predicates=[predicate(cel=["true"])])
    doc = explain_json(default_scheduler().schedule(bad, FLEET, NOW), FLEET)
    assert doc["error"] == "Predicate:celSelector is not supported yet (spec.predicates[0])"
    assert doc["aggregatedScores"] == []


def test_explain_rows_tell_each_clusters_story() -> None:
    result = default_scheduler().schedule(WEB, FLEET, NOW)
    rows = {row.cluster: row for row in explain_rows(result, FLEET)}
    assert [r.cluster for r in explain_rows(result, FLEET)] == ["b", "a", "c", "d"]
    assert rows["b"].picked and not rows["a"].picked
    assert rows["b"].total == 200
    assert rows["a"].scores == {"ResourceAllocatableCPU": -100}
    assert rows["c"].verdicts == {"Predicate": True, "TaintToleration": False}
    assert rows["c"].total is None
    assert rows["d"].verdicts == {"Predicate": False}
