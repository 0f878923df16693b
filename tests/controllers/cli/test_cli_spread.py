"""`placement explain` shows the spread picks of the spread samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controllers.cli.main import EXIT_OK, main

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples"


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
