"""`placement explain`: the debugger JSON and the table on every sample placement, an unknown
placement, and the spread picks of the spread samples."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controllers.cli.main import EXIT_ERROR, EXIT_OK, main
from tests.controllers.cli.samples import NOW, PLACEMENTS, SAMPLES, run


@pytest.mark.parametrize("key", [pytest.param(k, id=k) for k in PLACEMENTS])
def test_explain_json_works_on_every_sample_placement(
    capsys: pytest.CaptureFixture[str], key: str
) -> None:
    code, out, _ = run(capsys, "explain", "-f", SAMPLES, "--placement", key, *NOW)
    assert code == EXIT_OK
    doc: dict[str, Any] = json.loads(out)
    namespace, name = key.split("/")
    assert doc["placement"]["metadata"]["name"] == name
    assert doc["placement"]["metadata"]["namespace"] == namespace
    for section in ("filteredPipelineResults", "prioritizeResults", "aggregatedScores", "error"):
        assert section in doc
    if not doc["error"]:
        assert [r["name"] for r in doc["filteredPipelineResults"]] == [
            "Predicate",
            "Predicate,TaintToleration",
        ]
        feasible = doc["filteredPipelineResults"][-1]["filteredClusters"]
        assert sorted(s["clusterName"] for s in doc["aggregatedScores"]) == sorted(feasible)
        scores = [(-s["score"], s["clusterName"].encode()) for s in doc["aggregatedScores"]]
        assert scores == sorted(scores)
        assert all(r["weight"] != 0 for r in doc["prioritizeResults"])


@pytest.mark.parametrize("key", [pytest.param(k, id=k) for k in PLACEMENTS])
def test_explain_table_works_on_every_sample_placement(
    capsys: pytest.CaptureFixture[str], key: str
) -> None:
    code, out, _ = run(capsys, "explain", "-f", SAMPLES, "--placement", key, "-o", "table", *NOW)
    assert code == EXIT_OK
    header, *rows = out.splitlines()
    assert header.split()[0] == "CLUSTER"
    assert header.split()[-2:] == ["TOTAL", "PICKED"]
    assert rows, "every sample placement has clusters available to it"


def test_explain_json_of_cel_sample_reports_the_misconfiguration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "explain", "-f", SAMPLES, "--placement", "apps/web-cel-predicate")
    assert code == EXIT_OK
    assert json.loads(out)["error"].startswith("Predicate:celSelector is not supported yet")


def test_unknown_placement_exits_1_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "-f", SAMPLES, "--placement", "apps/nope")
    assert code == EXIT_ERROR
    assert out == ""
    assert "Placement apps/nope" in err


def test_explain_shows_each_spread_pick_and_why_clusters_were_excluded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "explain",
            "-f",
            str(SAMPLES),
            "--placement",
            "spread-demo/spread-max-skew-1",
            "--now",
            "2026-11-01T00:01:00Z",
        ]
    )
    assert code == EXIT_OK
    spread = json.loads(capsys.readouterr().out)["spread"]
    assert spread["weight"] == 2
    assert [p["picked"] for p in spread["picks"]] == [
        "aws-us-east-1a-1",
        "aws-us-east-1b-1",
        "aws-us-east-1a-2",
    ]
    second = {c["cluster"]: c for c in spread["picks"][1]["candidates"]}
    assert second["aws-us-east-1a-2"]["excluded"] == {
        "term": 0,
        "topologyKey": "zone",
        "domain": ["us-east-1a"],
        "skew": 2,
        "maxSkew": 1,
    }
    assert second["aws-us-east-1b-1"]["finalScore"] == 0


def test_explain_has_no_spread_section_without_spread_constraints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["explain", "-f", str(SAMPLES), "--placement", "apps/web-label-predicate"])
    assert code == EXIT_OK
    assert "spread" not in json.loads(capsys.readouterr().out)
