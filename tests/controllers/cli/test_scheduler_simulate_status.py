"""`placement scheduler simulate` runs the status controllers' rules beside the scheduler: the
PodGroups and ElasticQuotas come out with the status their controller would write, and the table
ends with the plugins' story (gangs, quotas, preemptions and their rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controllers.cli.common import EXIT_OK
from controllers.cli.crds import SAMPLES_DIR
from tests.controllers.cli.samples import run

NOW = ["--now", "2026-01-01T00:00:00Z"]
PODS = SAMPLES_DIR / "pods"


def objects(out: str, kind: str) -> dict[str, dict[str, Any]]:
    items = json.loads(out)["items"]
    return {i["metadata"]["name"]: i for i in items if i["kind"] == kind}


def test_competing_gangs_come_out_running_and_scheduling(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(
        capsys,
        "scheduler",
        "simulate",
        "-f",
        str(PODS / "gangs" / "competing.yaml"),
        *NOW,
        "-o",
        "json",
    )
    assert code == EXIT_OK
    groups = objects(out, "PodGroup")
    assert groups["train-a"]["status"]["phase"] == "Running"
    assert groups["train-a"]["status"]["scheduled"] == 4
    assert groups["train-b"]["status"]["phase"] == "Scheduling"
    assert groups["train-b"]["status"]["running"] == 0
    reasons = {e["reason"] for e in json.loads(out)["items"] if e["kind"] == "Event"}
    assert {"Pending", "Scheduling", "Running"} <= reasons  # the phase changes on the way


def test_the_table_tells_each_gangs_story(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "scheduler",
        "simulate",
        "-f",
        str(PODS / "gangs" / "competing.yaml"),
        *NOW,
        "-o",
        "wide",
    )
    assert code == EXIT_OK
    assert "PodGroup gang-compete/train-a: phase Running, scheduled 4, running 4" in out
    assert "gang gang-compete/train-b: phase Scheduling, minMember 4: 0 bound" in out
    assert "last rejection:" in out


def test_a_quota_story_prints_used_borrowed_and_the_preemption_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(PODS / "quotas" / "kep-story-1.yaml")
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", path, *NOW, "-o", "wide")
    assert code == EXIT_OK
    assert (
        "ElasticQuota kep1-b/quota: min nvidia.com/gpu=6; max nvidia.com/gpu=8; "
        "used nvidia.com/gpu=6" in out
    )
    assert (
        "preemption: kep1-b/b3 on kep1-gpu-node evicted kep1-a/a4 "
        "(ElasticQuota kep1-b within its min" in out
    )
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", path, *NOW, "-o", "json")
    quotas = {
        q["metadata"]["namespace"]: q
        for q in json.loads(out)["items"]
        if q["kind"] == "ElasticQuota"
    }
    assert quotas["kep1-a"]["status"]["used"] == {"nvidia.com/gpu": "4"}
    assert quotas["kep1-b"]["status"]["used"] == {"nvidia.com/gpu": "6"}


DUPLICATE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", pods: "10"}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: ElasticQuota
metadata: {name: first, namespace: team, creationTimestamp: "2025-12-01T00:00:00Z"}
spec: {min: {cpu: "3"}, max: {cpu: "4"}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: ElasticQuota
metadata: {name: second, namespace: team, creationTimestamp: "2025-12-02T00:00:00Z"}
spec: {max: {cpu: "1"}}
"""


def test_a_duplicate_quota_and_min_above_capacity_are_shown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "quotas.yaml").write_text(DUPLICATE)
    code, out, _ = run(capsys, "scheduler", "simulate", "-f", str(tmp_path), *NOW, "-o", "wide")
    assert code == EXIT_OK
    assert (
        "ElasticQuota team/second: Active=False (Duplicate: namespace team already has "
        'ElasticQuota "first"' in out
    )
    assert (
        "ElasticQuota team/first: MinWithinCapacity=False (MinAboveCapacity: the "
        "ElasticQuotas' min adds up to more than the nodes' allocatable (cpu: min 3 > "
        "allocatable 2)" in out
    )


def test_a_gang_waiting_48_hours_gets_the_timeout_warning_once_and_keeps_its_phase(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def simulate(max_time: str) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
        argv = ["scheduler", "simulate", "-f", str(PODS / "gangs" / "competing.yaml"), *NOW]
        code, out, _ = run(capsys, *argv, "--max-time", max_time, "-o", "json")
        assert code == EXIT_OK
        events = [e for e in json.loads(out)["items"] if e["kind"] == "Event"]
        return objects(out, "PodGroup"), [e for e in events if e["reason"] == "Timeout"]

    groups, timeouts = simulate("3600")  # the default hour: too early
    assert timeouts == []
    # 50 hours: nothing else happens to train-b, its 48-hour mark alone wakes the rule.
    groups, timeouts = simulate(str(50 * 3600))
    assert [
        (e["involvedObject"]["name"], e["type"], e["message"], e["count"]) for e in timeouts
    ] == [("train-b", "Warning", "schedule time longer than 48 hours", 1)]
    created = groups["train-b"]["metadata"]["creationTimestamp"]
    assert created.startswith("2026-01-01T00:00:")
    assert timeouts[0]["firstTimestamp"] == created.replace("2026-01-01", "2026-01-03")
    assert groups["train-b"]["status"]["phase"] == "Scheduling"  # unchanged by the warning
    assert groups["train-a"]["status"]["phase"] == "Running"
