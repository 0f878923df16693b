"""Explain records: OCM's debugger JSON and the per-cluster table rows, with why each filter
removed each cluster and, for a spread placement, the scores the selector compared."""

from __future__ import annotations

from datetime import timedelta

from placement.explain import SpreadScore, explain_json, explain_rows, spread_weight
from placement.testing import (
    NOW,
    builtin,
    cluster,
    global_set,
    placement,
    predicate,
    snapshot,
    taint,
    toleration,
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
    # A CEL expression that does not compile misconfigures the placement (OCM's message).
    bad = placement("apps", "web", predicates=[predicate(cel=["managedCluster.metadata.name =="])])
    doc = explain_json(default_scheduler().schedule(bad, FLEET, NOW), FLEET)
    assert doc["error"].startswith("Predicate:compilation failed: ERROR: <input>:1:32: Syntax")
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


def test_a_plain_cycle_records_no_reasons() -> None:
    # The controller's cycles pay nothing for explain: reasons come only when asked for.
    result = default_scheduler().schedule(WEB, FLEET, NOW)
    assert [r.reasons for r in result.filters] == [None, None]
    assert "filterReasons" not in explain_json(result, FLEET)


def test_explained_rows_say_which_requirement_and_which_taint_failed() -> None:
    result = default_scheduler().schedule(WEB, FLEET, NOW, explain=True)
    rows = {row.cluster: row for row in explain_rows(result, FLEET)}
    assert rows["d"].reasons == {"Predicate": "predicate 0: label env In [prod] (got dev)"}
    assert rows["c"].reasons == {"TaintToleration": "untolerated taint k:NoSelect"}
    assert rows["a"].reasons == {} and rows["b"].reasons == {}
    assert explain_json(result, FLEET)["filterReasons"] == {
        "Predicate": {"d": "predicate 0: label env In [prod] (got dev)"},
        "TaintToleration": {"c": "untolerated taint k:NoSelect"},
    }


def test_predicate_reasons_name_the_first_failing_part_of_every_predicate() -> None:
    fleet = snapshot(
        [
            cluster("a", labels={"env": "prod", "tier": "db"}, claims={"region": "eu"}),
            cluster("b", labels={"tier": "web"}),
            *global_set("apps"),
        ]
    )
    spec = placement(
        "apps",
        "p",
        predicates=[
            predicate(
                {"env": "prod"}, claims=[{"key": "region", "operator": "In", "values": ["us"]}]
            ),
            predicate(expressions=[{"key": "tier", "operator": "DoesNotExist"}]),
        ],
    )
    result = default_scheduler().schedule(spec, fleet, NOW, explain=True)
    rows = {row.cluster: row.reasons.get("Predicate") for row in explain_rows(result, fleet)}
    assert rows == {
        "a": "predicate 0: claim region In [us] (got eu); predicate 1: label tier DoesNotExist"
        " (got db)",
        "b": "predicate 0: label env In [prod] (not set); predicate 1: label tier DoesNotExist"
        " (got web)",
    }


def test_taint_reasons_tell_an_expired_toleration_and_a_new_cluster_apart() -> None:
    added = NOW - timedelta(minutes=10)
    fleet = snapshot(
        [
            cluster("late", taints=[taint("gone", value="x", added=added)]),
            cluster("new", taints=[taint("fresh", effect="NoSelectIfNew")]),
            cluster("ok"),
            *global_set("apps"),
        ]
    )
    spec = placement("apps", "p", tolerations=[toleration("gone", value="x", seconds=60)])
    result = default_scheduler().schedule(spec, fleet, NOW, explain=True)
    rows = {row.cluster: row.reasons.get("TaintToleration") for row in explain_rows(result, fleet)}
    assert rows == {
        "ok": None,
        "late": "untolerated taint gone=x:NoSelect (toleration expired)",
        "new": "untolerated taint fresh:NoSelectIfNew",
    }


ZONES = snapshot(
    [
        cluster("a1", labels={"zone": "a"}),
        cluster("a2", labels={"zone": "a"}),
        cluster("a3", labels={"zone": "a"}),
        cluster("b1", labels={"zone": "b"}),
        cluster("nozone"),
        *global_set("apps"),
    ]
)
SPREAD = placement(
    "apps",
    "spread",
    numberOfClusters=4,
    prioritizerPolicy={"mode": "Exact", "configurations": [builtin("Spread", 3)]},
    spreadPolicy={
        "spreadConstraints": [
            {
                "topologyKey": "zone",
                "topologyKeyType": "Label",
                "maxSkew": 1,
                "whenUnsatisfiable": "DoNotSchedule",
            }
        ]
    },
)


def test_spread_rows_total_what_the_selector_compared_at_each_pick() -> None:
    result = default_scheduler().schedule(SPREAD, ZONES, NOW, explain=True)
    doc = explain_json(result, ZONES)
    rows = explain_rows(result, ZONES)
    assert spread_weight(result) == 3
    # picks first, in pick order: a1, then b1 (zone a would be 2 ahead), then a2
    assert [(r.cluster, r.pick) for r in rows if r.picked] == [("a1", 1), ("b1", 2), ("a2", 3)]
    for pick, step in enumerate(doc["spread"]["picks"], start=1):
        row = next(r for r in rows if r.pick == pick)
        record = next(c for c in step["candidates"] if c["cluster"] == row.cluster)
        assert row.spread == SpreadScore(
            record["rawSpreadScore"], record["spreadScore"], record["finalScore"]
        )
        # weight x normalized spread + prioritizer total (Exact mode, no prioritizer: 0)
        assert row.total == 3 * record["spreadScore"] == record["finalScore"]
    # the 4th pick found nothing eligible: a3 would make zone a 3 against zone b's 1
    by_name = {r.cluster: r for r in rows}
    assert doc["spread"]["stopped"]["candidates"] == [
        {
            "cluster": "a3",
            "excluded": {
                "term": 0,
                "topologyKey": "zone",
                "domain": ["a"],
                "skew": 2,
                "maxSkew": 1,
            },
        }
    ]
    assert by_name["a3"].spread == SpreadScore(excluded="zone a: skew 2 > maxSkew 1")
    assert by_name["a3"].total is None and not by_name["a3"].picked
    assert by_name["nozone"].spread is not None
    assert "topology key missing" in (by_name["nozone"].spread.excluded or "")


def test_a_placement_without_spread_has_no_spread_scores() -> None:
    result = default_scheduler().schedule(WEB, FLEET, NOW, explain=True)
    assert spread_weight(result) is None
    assert all(r.spread is None and r.pick is None for r in explain_rows(result, FLEET))
