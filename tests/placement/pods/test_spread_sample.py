"""config/samples/pods/spread/zones.yaml, run alone with `placement scheduler simulate -f`:
the Deployment's pods spread 3 + 3 + 2 over the zones, no node holds more than two (the soft
hostname constraint), and the ninth pod waits because the full zone holds the minimum."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from controllers.cli.common import EXIT_OK
from tests.controllers.cli.samples import run

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples" / "pods"
SAMPLE = SAMPLES / "spread" / "zones.yaml"


def test_the_spread_sample_fills_zones_within_max_skew(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "scheduler", "simulate", "-f", str(SAMPLE), "-o", "json", "--now",
        "2026-01-01T00:01:00Z",
    )  # fmt: skip
    assert (code, err) == (EXIT_OK, "")
    zone_of = {
        d["metadata"]["name"]: d["metadata"]["labels"]["topology.kubernetes.io/zone"]
        for d in yaml.safe_load_all(SAMPLE.read_text())
        if d["kind"] == "Node"
    }
    pods = [i for i in json.loads(out)["items"] if i["kind"] == "Pod"]
    assert len(pods) == 9
    placed = [p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")]
    assert Counter(zone_of[n] for n in placed) == {
        "eu-west-1a": 3,
        "eu-west-1b": 3,
        "eu-west-1c": 2,
    }
    assert max(Counter(placed).values()) == 2
    [pending] = [p for p in pods if not p["spec"].get("nodeName")]
    [condition] = [c for c in pending["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert condition["message"].startswith(
        "0/5 nodes are available: 1 Insufficient cpu, 4 node(s) didn't match pod topology "
        "spread constraints. no new claims to deallocate, preemption: "
    )
