"""`placement explain`: the debugger JSON and the table on every sample placement, an unknown
placement, and the spread picks of the spread samples."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.cluster import ManagedCluster
from controllers.cli.main import EXIT_ERROR, EXIT_OK, main
from controllers.cli.manifests import load_paths
from tests.controllers.cli.samples import NOW, PLACEMENTS, SAMPLES, broken_cel, run

SPREAD_PLACEMENTS = [k for k in PLACEMENTS if k.startswith("spread-demo/")]


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


def _explain(capsys: pytest.CaptureFixture[str], key: str, *output: str) -> str:
    code, out, _ = run(capsys, "explain", "-f", SAMPLES, "--placement", key, *output, *NOW)
    assert code == EXIT_OK
    return out


def _tables(out: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each table of the output: its header and its rows, cells cut where the header's columns
    start (a header cell has no spaces; a row cell may be empty or hold some)."""
    tables = []
    for block in out.strip("\n").split("\n\n"):
        header, *lines = block.splitlines()
        starts = [m.start() for m in re.finditer(r"\S+", header)]
        bounds = list(zip(starts, [*starts[1:], None], strict=True))
        rows = [[line[a:b].strip() for a, b in bounds] for line in lines]
        tables.append((header.split(), rows))
    return tables


def test_explain_yaml_is_the_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    key = PLACEMENTS[0]
    code, as_json, _ = run(capsys, "explain", "-f", SAMPLES, "--placement", key, *NOW)
    assert code == EXIT_OK
    code, as_yaml, _ = run(capsys, "explain", "-f", SAMPLES, "--placement", key, *NOW, "-o", "yaml")
    assert code == EXIT_OK
    assert yaml.safe_load(as_yaml) == json.loads(as_json)
    assert not as_yaml.lstrip().startswith("{")


@pytest.mark.parametrize("key", [pytest.param(k, id=k) for k in PLACEMENTS])
def test_explain_table_fits_120_columns_and_says_why_each_cluster_was_removed(
    capsys: pytest.CaptureFixture[str], key: str
) -> None:
    doc = json.loads(_explain(capsys, key))
    out = _explain(capsys, key, "-o", "table")
    assert max(len(line) for line in out.splitlines()) <= 120
    (header, rows), *rest = _tables(out)
    if doc["error"]:  # the cycle stopped: one table says where and why, for every cluster
        assert header == ["CLUSTER", "PLUGIN", "REASON"] and rows and not rest
        plugin, _, message = doc["error"].partition(":")
        assert all(r[1] == plugin and message in r[2] for r in rows)
        return
    assert header[0] == "CLUSTER"
    assert header[-2:] == ["TOTAL", "PICKED"] or header[-3:] == ["TOTAL", "PICKED", "NOTE"]
    feasible = [s["clusterName"] for s in doc["aggregatedScores"]]
    assert sorted(r[0] for r in rows) == sorted(feasible)
    reasons = {
        cluster: (name, why)
        for name, clusters in doc.get("filterReasons", {}).items()
        for cluster, why in clusters.items()
    }
    if not rest:
        assert not reasons
        return
    ((removed_header, removed),) = rest
    assert removed_header == ["CLUSTER", "FILTER", "REASON"]
    assert {r[0] for r in removed} == set(reasons)
    for cluster, name, why in removed:
        assert name == reasons[cluster][0]
        assert why == reasons[cluster][1] or (
            why.endswith("...") and reasons[cluster][1].startswith(why[:-3])
        )


@pytest.mark.parametrize("key", [pytest.param(k, id=k) for k in PLACEMENTS])
def test_explain_wide_has_every_filter_and_every_reason_whole(
    capsys: pytest.CaptureFixture[str], key: str
) -> None:
    doc = json.loads(_explain(capsys, key))
    ((header, rows),) = _tables(_explain(capsys, key, "-o", "wide"))
    filters = [r["name"].rsplit(",", 1)[-1] for r in doc["filteredPipelineResults"]]
    assert header[: 1 + len(filters)] == ["CLUSTER", *filters]
    assert header[-1] == "REASON"
    for name, clusters in doc.get("filterReasons", {}).items():
        column = header.index(name)
        for cluster, why in clusters.items():
            row = next(r for r in rows if r[0] == cluster)
            assert row[column] == "FAIL"
            assert row[-1] == why


def test_a_fail_names_the_untolerated_taint_and_the_failed_requirement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clusters = {
        o.obj.name: o.obj
        for o in load_paths([SAMPLES]).objects
        if isinstance(o.obj, ManagedCluster)
    }
    out = _tables(_explain(capsys, "apps/web-label-predicate", "-o", "table"))
    removed = {r[0]: (r[1], r[2]) for r in out[1][1]}
    unreachable = clusters["gcp-europe-west1-c-1"].spec.taints or []
    (taint,) = [t for t in unreachable if t.effect == "NoSelect"]
    assert removed["gcp-europe-west1-c-1"] == (
        "TaintToleration",
        f"untolerated taint {taint.key}:{taint.effect}",
    )
    # the sample's predicate: env=prod, provider In [aws, gcp, azure], ...
    provider = (clusters["alibaba-cn-hangzhou-e-1"].metadata.labels or {})["provider"]
    assert removed["alibaba-cn-hangzhou-e-1"] == (
        "Predicate",
        f"predicate 0: label provider In [aws, gcp, azure] (got {provider})",
    )


@pytest.mark.parametrize("key", [pytest.param(k, id=k) for k in SPREAD_PLACEMENTS])
def test_spread_table_totals_what_the_selector_compared(
    capsys: pytest.CaptureFixture[str], key: str
) -> None:
    spread = json.loads(_explain(capsys, key))["spread"]
    ((header, rows), *_) = _tables(_explain(capsys, key, "-o", "table"))
    assert f"Spread(x{spread['weight']})" in header
    column, total, picked = (
        header.index(h) for h in (f"Spread(x{spread['weight']})", "TOTAL", "PICKED")
    )
    by_name = {r[0]: r for r in rows}
    for pick, step in enumerate(spread["picks"], start=1):
        row = by_name[step["picked"]]
        record = next(c for c in step["candidates"] if c["cluster"] == step["picked"])
        assert row[picked] == f"yes #{pick}"
        assert row[column] == f"{record['rawSpreadScore']}/{record['spreadScore']}"
        assert int(row[total]) == record["finalScore"]
    # the picks come first, in pick order
    assert [r[0] for r in rows[: len(spread["picks"])]] == [p["picked"] for p in spread["picks"]]
    for record in spread.get("stopped", {}).get("candidates", []):
        row = by_name[record["cluster"]]
        assert (row[column], row[total], row[picked]) == ("excluded", "-", "")
        assert row[-1].startswith(f"{record['excluded']['topologyKey']} ")


def test_explain_json_of_a_cel_that_does_not_compile_reports_the_misconfiguration(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    extra = broken_cel(tmp_path)
    argv = ["explain", "-f", SAMPLES, "-f", extra, "--placement", "apps/web-cel-broken"]
    code, out, _ = run(capsys, *argv)
    assert code == EXIT_OK
    assert json.loads(out)["error"].startswith("Predicate:compilation failed: ERROR:")


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
