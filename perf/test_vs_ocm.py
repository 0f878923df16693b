"""The side-by-side with OCM's placement controller (`perf.vs_ocm`) without a control plane:
the hub's documents, each churn step and its revert, the apiserver's request counts, the
watch's view of "every placement decided", the comparison of decisions and the report."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from perf.vs_ocm_fleet import STEPS, TIERS, UNREACHABLE, churn, hub, revert, traits
from perf.vs_ocm_report import aggregate, differences, verdicts, write
from perf.vs_ocm_run import Watch, request_counts

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def small() -> Any:
    return hub(60, 40, seed=3, now=NOW)


def test_the_hub_creates_namespaces_first_then_writes_the_status_of_clusters_and_scores(
    small: Any,
) -> None:
    kinds = [d["kind"] for d in small.creates]
    assert kinds.index("ManagedCluster") > max(i for i, k in enumerate(kinds) if k == "Namespace")
    assert not any("status" in d for d in small.creates)
    paths = [p.path for p in small.statuses]
    assert sum("/managedclusters/" in p for p in paths) == 60
    assert all(p.endswith("/status") for p in paths)
    assert len(small.placements) == 40
    assert any("celSelector" in json.dumps(spec) for spec in small.placements.values())
    # no time in the fleet lapses during a run: taints a day old, valid scores for a day
    for doc in small.clusters.values():
        for taint in doc["spec"].get("taints") or []:
            assert taint.get("timeAdded", "2026-11-30T12:00:00Z") == "2026-11-30T12:00:00Z"


@pytest.mark.parametrize("step", STEPS)
def test_each_churn_step_is_undone_by_its_revert(small: Any, step: str) -> None:
    sent, back = churn(step, small, 0, now=NOW), revert(step, small, 0)
    assert sent and [p.path for p in sent] == [p.path for p in back]
    assert [p.body for p in sent] != [p.body for p in back]
    assert [p.path for p in churn(step, small, 1, now=NOW)] != [p.path for p in sent]
    if step == "labels":
        assert len(sent) == 6 and all(p.body["metadata"]["labels"]["tier"] in TIERS for p in sent)
    if step == "taints":  # appended to what the cluster has, lapsing 8 s after the step
        taint = sent[0].body["spec"]["taints"][-1]
        assert taint == {
            "key": UNREACHABLE,
            "effect": "NoSelect",
            "timeAdded": "2026-12-01T11:59:08Z",
        }
    if step == "placements":
        key = sorted(small.placements)[0]
        assert all(isinstance(p.body["spec"]["numberOfClusters"], int) for p in sent)
        assert key in small.placements


def test_request_counts_sum_the_apiserver_counter_by_verb_and_resource() -> None:
    text = "\n".join(
        [
            "# TYPE apiserver_request_total counter",
            'apiserver_request_total{code="201",group="cluster.open-cluster-management.io",'
            'resource="placementdecisions",scope="resource",subresource="",verb="POST"} 4',
            'apiserver_request_total{code="409",group="cluster.open-cluster-management.io",'
            'resource="placementdecisions",scope="resource",subresource="",verb="POST"} 1',
            'apiserver_request_total{code="200",group="",resource="placements",'
            'subresource="status",verb="PATCH"} 7',
            'apiserver_request_total{code="200",group="",resource="",subresource="",verb="GET"} 9',
        ]
    )
    assert request_counts(text) == {"POST placementdecisions": 5, "PATCH placements/status": 7}


def _placement(name: str, *conditions: tuple[str, str]) -> dict[str, Any]:
    status = {"conditions": [{"type": t, "status": s} for t, s in conditions]}
    return {"metadata": {"namespace": "a", "name": name}, "status": status}


def _decision(name: str, placement: str, *clusters: str) -> dict[str, Any]:
    labels = {"cluster.open-cluster-management.io/placement": placement}
    return {
        "metadata": {"namespace": "a", "name": name, "labels": labels},
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    }


def test_every_placement_is_decided_once_satisfied_with_decisions_or_misconfigured() -> None:
    watch = Watch()
    assert not watch.decided()
    watch.apply("placements", "ADDED", _placement("p"))
    watch.apply("placements", "ADDED", _placement("q", ("PlacementMisconfigured", "True")))
    assert not watch.decided()
    watch.apply("placements", "MODIFIED", _placement("p", ("PlacementSatisfied", "True")))
    assert not watch.decided() and watch.changes == 0  # no decisions written yet
    watch.apply("placementdecisions", "ADDED", _decision("p-decision-1", "p", "c1"))
    assert watch.decided() and watch.changes == 1
    snap = watch.snapshot()
    assert snap["a/p"]["decisions"] == [["p-decision-1", "", "", ["c1"]]]


def _run(name: str, round_: int, snapshot: dict[str, Any], seconds: float) -> dict[str, Any]:
    phase = {
        "seconds": seconds, "settled_s": seconds, "idle_s": seconds, "cpu_s": seconds / 2,
        "decision_changes": 10, "sent": 0, "snapshot": snapshot,
        "requests": {"POST placementdecisions": 10, "PATCH placements/status": 10,
                     "POST events": 5, "PUT leases": 3},
    }  # fmt: skip
    phases = {"cold": phase, "labels": {**phase, "seconds": seconds / 10}}
    return {"controller": name, "round": round_, "phases": phases, "rss_mib": 100.0}


def _side(*clusters: str) -> dict[str, Any]:
    return {"conditions": [], "decisions": [["x-decision-1", "0", "", list(clusters)]]}


def test_decisions_compared_and_each_difference_classified(tmp_path: Path) -> None:
    same = {"a/same": _side("c1")}
    ours = {**same, "a/spread": _side("c1"), "a/bal": _side("c2"), "a/bug": _side("c3")}
    ocm = {**same, "a/spread": _side("c2"), "a/bal": _side("c3"), "a/bug": _side("c4")}
    marks = {"spread": False, "balance": False, "steady": False, "cel_scores": False,
             "tolerates_spot": False}  # fmt: skip
    found_traits = {
        "placements": {
            "a/spread": {**marks, "spread": True},
            "a/bal": {**marks, "balance": True, "steady": True},
            "a/bug": marks,
        },
        "prefer_no_select": [],
    }
    runs = [_run("ours", 0, ours, 2.0), _run("ocm", 0, ocm, 10.0)]
    found = differences(runs, found_traits)
    by_phase = {(d["phase"], d["placement"]): d["class"] for d in found}
    assert by_phase == {
        ("cold", "a/bal"): "balance", ("cold", "a/bug"): "unexplained",
        ("cold", "a/spread"): "spread", ("labels", "a/bal"): "carried",
        ("labels", "a/bug"): "unexplained", ("labels", "a/spread"): "spread",
    }  # fmt: skip
    medians = aggregate(runs)
    assert medians[("ours", "cold")]["requests"] == 25  # the apiserver's own leases left out
    assert medians[("ours", "cold")]["events"] == 5
    checks = {(name, phase): (value, verdict) for name, phase, value, verdict in verdicts(runs)}
    assert checks[("cold start (x faster)", "cold")] == (5.0, "met")
    assert checks[("controller CPU (ours / OCM)", "all")] == (0.2, "met")
    assert checks[("requests per decision change (ours / OCM)", "all")] == (1.0, "met")
    result = {"clusters": 5, "placements": 4, "runs": runs, "traits": found_traits}
    report = write(tmp_path, result, plots=lambda out, medians, checks: [])
    text = report.read_text()
    assert "| cold | ours | 2.00 |" in text and "`a/bug`" in text
    assert "| 1 | cold | 3 of 4 | 1 | 0 | 1 | 0 | 0 | 0 | 0 | 1 |" in text


def test_a_toleration_lapsing_in_the_slower_controllers_step_is_timing() -> None:
    marks = {"numbered": True, "unreachable_s": 300}
    traits_ = {"placements": {"a/p": marks}}
    ours, ocm = {"a/p": _side("tainted", "c1")}, {"a/p": _side("c2", "c1")}
    runs = []
    for name, snap in (("ours", ours), ("ocm", ocm)):
        run = _run(name, 0, snap, 1.0)
        run["phases"] = {"taints": run["phases"]["cold"]}
        runs.append(run)
    found = differences(runs, traits_, {"0": ["tainted"]})
    assert [d["class"] for d in found] == ["lapsed"]
    assert [d["class"] for d in differences(runs, traits_, {"0": []})] == ["unexplained"]


def test_traits_weigh_balance_as_ocm_does(small: Any) -> None:
    found = traits(small)["placements"]
    for key, spec in small.placements.items():
        mode = (spec.get("prioritizerPolicy") or {}).get("mode")
        if mode != "Exact" and "Balance" not in json.dumps(spec):
            assert found[f"{key[0]}/{key[1]}"]["balance"], key
