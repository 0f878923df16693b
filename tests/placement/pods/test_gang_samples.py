"""config/samples/pods/gangs/: each sample, run alone with `placement scheduler simulate -f`,
reaches the outcome its header states (whole gangs or none), and the plugin's report of the
same run says where each gang stands."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controllers.cli.common import EXIT_OK
from controllers.cli.manifests import load_paths
from placement.pods.scheduler.engine import Engine
from placement.pods.simulator.simulation import simulate
from plugins.pods.coscheduling.coscheduling import Coscheduling
from tests.controllers.cli.samples import run
from tests.placement.pods.test_engine import SCHEDULER, default_profile

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples" / "pods" / "gangs"
NOW = "2026-01-01T00:01:00Z"


def outcome(capsys: pytest.CaptureFixture[str], name: str) -> dict[str, Any]:
    """Running / Pending / Evicted pods (names) of one sample run alone, and the messages of
    the pending ones."""
    code, out, err = run(
        capsys, "scheduler", "simulate", "-f", str(SAMPLES / name), "-o", "json", "--now", NOW
    )
    assert (code, err) == (EXIT_OK, "")
    items: list[dict[str, Any]] = json.loads(out)["items"]
    result: dict[str, Any] = {"Running": [], "Pending": [], "Evicted": [], "messages": {}}
    for pod in (i for i in items if i["kind"] == "Pod"):
        name = pod["metadata"]["name"]
        evicted = pod["status"].get("reason") == "Evicted" or pod["metadata"].get(
            "deletionTimestamp"
        )
        state = "Evicted" if evicted else ("Running" if pod["spec"].get("nodeName") else "Pending")
        result[state].append(name)
        if state == "Pending":
            [condition] = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
            result["messages"][name] = condition["message"]
    for state in ("Running", "Pending", "Evicted"):
        result[state].sort()
    return result


def report(name: str) -> list[str]:
    objects = [o.obj for o in load_paths([SAMPLES / name]).objects if o.obj.KIND != "Namespace"]
    engine = Engine(default_profile())
    now = datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    simulate(objects, engine, now, scheduler_name=SCHEDULER)
    [plugin] = [p for p in engine.profile.pre_filters if isinstance(p, Coscheduling)]
    return plugin.simulation_report(engine.cluster, now)


def test_spark_driver_and_executors_run_together(capsys: pytest.CaptureFixture[str]) -> None:
    got = outcome(capsys, "spark.yaml")
    assert got["Running"] == ["spark-pi-driver", *(f"spark-pi-exec-{i}" for i in range(1, 6))]
    assert got["Pending"] == [] and got["Evicted"] == []
    assert report("spark.yaml") == [
        "gang gang-spark/spark-pi: phase Running, minMember 5: 6 bound, 0 binding, "
        "0 waiting at Permit, 0 pending"
    ]


def test_two_competing_gangs_the_older_runs_whole_the_other_not_at_all(
    capsys: pytest.CaptureFixture[str],
) -> None:
    got = outcome(capsys, "competing.yaml")
    assert got["Running"] == [f"train-a-worker-{i}" for i in range(4)]
    assert got["Pending"] == [f"train-b-worker-{i}" for i in range(4)]
    for message in got["messages"].values():
        assert message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
        assert "PodGroup gang-compete/train-b gets rejected due to Pod train-b-worker-" in message
    lines = report("competing.yaml")
    assert lines[1].startswith(
        "gang gang-compete/train-b: phase Scheduling, minMember 4: 0 bound, 0 binding, "
        "0 waiting at Permit, 4 pending; last rejection: PodGroup gang-compete/train-b gets "
        "rejected due to Pod train-b-worker-"
    )


def test_min_resources_rejects_the_gang_the_cluster_cannot_hold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    got = outcome(capsys, "min-resources.yaml")
    assert got["Running"] == ["small-0", "small-1"]
    assert got["Pending"] == ["huge-0", "huge-1"]
    for message in got["messages"].values():
        assert message.startswith("0/2 nodes are available: resource gap: cpu: 8.")


def test_gang_preemption_sample(capsys: pytest.CaptureFixture[str]) -> None:
    got = outcome(capsys, "preemption.yaml")
    assert len(got["Evicted"]) == 3 and all(n.startswith("batch-") for n in got["Evicted"])
    assert [n for n in got["Running"] if n.startswith("urgent-")] == [
        "urgent-0", "urgent-1", "urgent-2",
    ]  # fmt: skip
    assert got["Pending"] == [f"huge-{i}" for i in range(4)]
    for message in got["messages"].values():
        assert "gang preemption: PodGroup gang-preempt/huge cannot fit even if every " in message


def test_a_partly_fitting_gang_does_not_spin(capsys: pytest.CaptureFixture[str]) -> None:
    got = outcome(capsys, "partial.yaml")
    assert got["Running"] == ["pair-0", "pair-1", "solo"]
    assert got["Pending"] == ["stuck-0", "stuck-1", "stuck-2"]
    assert "PodGroup gang-partial/stuck gets rejected" in " ".join(got["messages"].values())
    [line] = [r for r in report("partial.yaml") if r.startswith("gang gang-partial/stuck")]
    assert "minMember 3: 0 bound" in line


def test_an_anti_affine_gang_runs_one_member_per_node_or_not_at_all(
    capsys: pytest.CaptureFixture[str],
) -> None:
    got = outcome(capsys, "anti-affine.yaml")
    assert got["Running"] == ["replicas-0", "replicas-1", "replicas-2"]
    assert got["Pending"] == [f"crowd-{i}" for i in range(4)]
    assert got["Evicted"] == []
    assert any(
        m.startswith("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.")
        for m in got["messages"].values()
    )
    for message in got["messages"].values():
        assert "PodGroup gang-anti/crowd gets rejected due to Pod crowd-" in message
    code, out, err = run(
        capsys,
        *("scheduler", "simulate", "-f", str(SAMPLES / "anti-affine.yaml")),
        *("-o", "json", "--now", NOW),
    )
    assert (code, err) == (EXIT_OK, "")
    nodes = {
        p["metadata"]["name"]: p["spec"].get("nodeName")
        for p in json.loads(out)["items"]
        if p["kind"] == "Pod"
    }
    assert sorted(nodes[f"replicas-{i}"] for i in range(3)) == [
        "gang-anti-node-1", "gang-anti-node-2", "gang-anti-node-3",
    ]  # fmt: skip
    assert report("anti-affine.yaml")[1] == (
        "gang gang-anti/replicas: phase Running, minMember 3: 3 bound, 0 binding, "
        "0 waiting at Permit, 0 pending"
    )
