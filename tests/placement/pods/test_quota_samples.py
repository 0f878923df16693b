"""config/samples/pods/quotas/: each sample, run alone with `placement scheduler simulate -f`,
reaches the KEP's outcome (the better one for the cross-node example); the plugin's report
of the same run names the quotas' use and each preemption with its rule."""

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
from plugins.pods.capacityscheduling.capacity_scheduling import CapacityScheduling
from tests.controllers.cli.samples import run
from tests.placement.pods.test_engine import SCHEDULER, default_profile

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples" / "pods" / "quotas"
NOW = "2026-01-01T00:01:00Z"


def outcome(capsys: pytest.CaptureFixture[str], name: str) -> dict[str, list[str]]:
    """running / pending / evicted pods (namespace/name) of one sample run alone."""
    code, out, err = run(
        capsys, "scheduler", "simulate", "-f", str(SAMPLES / name), "-o", "json", "--now", NOW
    )
    assert (code, err) == (EXIT_OK, "")
    items: list[dict[str, Any]] = json.loads(out)["items"]
    pods = [i for i in items if i["kind"] == "Pod"]
    result: dict[str, list[str]] = {"Running": [], "Pending": [], "Evicted": []}
    for pod in pods:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        evicted = pod["status"].get("reason") == "Evicted" or pod["metadata"].get(
            "deletionTimestamp"
        )
        state = "Evicted" if evicted else ("Running" if pod["spec"].get("nodeName") else "Pending")
        result[state].append(key)
    return {k: sorted(v) for k, v in result.items()}


def report(name: str) -> list[str]:
    objects = [o.obj for o in load_paths([SAMPLES / name]).objects if o.obj.KIND != "Namespace"]
    engine = Engine(default_profile())
    simulate(objects, engine, datetime(2026, 1, 1, 0, 1, tzinfo=UTC), scheduler_name=SCHEDULER)
    [plugin] = [p for p in engine.profile.pre_filters if isinstance(p, CapacityScheduling)]
    return plugin.simulation_report(engine.cluster, datetime(2026, 1, 1, tzinfo=UTC))


def test_story_1(capsys: pytest.CaptureFixture[str]) -> None:
    got = outcome(capsys, "kep-story-1.yaml")
    assert got["Evicted"] == ["kep1-a/a4"]
    assert got["Pending"] == ["kep1-a/a5", "kep1-b/b4"]
    assert got["Running"] == [
        "kep1-a/a1", "kep1-a/a2", "kep1-a/a3", "kep1-b/b1", "kep1-b/b2", "kep1-b/b3",
    ]  # fmt: skip
    lines = report("kep-story-1.yaml")
    assert lines[:2] == [
        "ElasticQuota kep1-a/quota: min nvidia.com/gpu=4; max nvidia.com/gpu=6; "
        "used nvidia.com/gpu=4; borrowed -",
        "ElasticQuota kep1-b/quota: min nvidia.com/gpu=6; max nvidia.com/gpu=8; "
        "used nvidia.com/gpu=6; borrowed -",
    ]
    assert lines[2:] == [
        "preemption: kep1-b/b3 on kep1-gpu-node evicted kep1-a/a4 (ElasticQuota kep1-b within"
        " its min: pods of quotas over their min (kep1-a), any priority)"
    ]


def test_story_2_reclaim(capsys: pytest.CaptureFixture[str]) -> None:
    got = outcome(capsys, "kep-story-2-reclaim.yaml")
    assert got["Evicted"] == ["kep2-a/a4"]
    assert got["Pending"] == []
    assert [k for k in got["Running"] if k.startswith("kep2-c/")] == [
        "kep2-c/c1", "kep2-c/c2", "kep2-c/c3",
    ]  # fmt: skip
    used = [
        line.split("; used ")[1].split(";")[0] for line in report("kep-story-2-reclaim.yaml")[:3]
    ]
    assert used == ["nvidia.com/gpu=3", "nvidia.com/gpu=4", "nvidia.com/gpu=3"]


def test_story_2_same_namespace(capsys: pytest.CaptureFixture[str]) -> None:
    got = outcome(capsys, "kep-story-2-same-namespace.yaml")
    assert got["Evicted"] == ["kep2s-b/pod-a"]
    assert "kep2s-b/pod-c" in got["Running"] and "kep2s-b/pod-b" in got["Running"]
    assert got["Pending"] == []
    assert report("kep-story-2-same-namespace.yaml")[-1] == (
        "preemption: kep2s-b/pod-c on kep2s-gpu-node evicted kep2s-b/pod-a (ElasticQuota kep2s-b"
        " above its min: lower-priority pods of kep2s-b only)"
    )


def test_cross_namespace_example_stays_pending(capsys: pytest.CaptureFixture[str]) -> None:
    got = outcome(capsys, "cross-namespace.yaml")
    assert got == {
        "Running": ["xns-quota1/nginx"],
        "Pending": ["xns-quota2/nginx"],
        "Evicted": [],
    }


def test_cross_node_example_schedules(capsys: pytest.CaptureFixture[str]) -> None:
    got = outcome(capsys, "cross-node.yaml")
    assert got == {
        "Running": ["xnode-quota2/nginx"],
        "Pending": [],
        "Evicted": ["xnode-quota1/nginx-1", "xnode-quota1/nginx-2"],
    }
    assert report("cross-node.yaml")[-1] == (
        "preemption: xnode-quota2/nginx on xnode-node-1 evicted xnode-quota1/nginx-1 and, for"
        " quota headroom, xnode-quota1/nginx-2 (ElasticQuota xnode-quota2 within its min: pods"
        " of quotas over their min (xnode-quota1), any priority)"
    )


def test_two_preemptors_count_the_leaving_victim_once(capsys: pytest.CaptureFixture[str]) -> None:
    got = outcome(capsys, "two-preemptors.yaml")
    assert got == {
        "Running": ["twop-a/a-high", "twop-b/b1", "twop-b/p1", "twop-b/p2"],
        "Pending": [],
        "Evicted": ["twop-a/a-low"],  # before: twop-a/a-high too, and twop-a at 0 (min 2)
    }
    lines = report("two-preemptors.yaml")
    assert [line.split("; borrowed")[0].split("; used ")[1] for line in lines[:2]] == [
        "nvidia.com/gpu=2",
        "nvidia.com/gpu=4",
    ]
    assert lines[2:] == [
        "preemption: twop-b/p1 on twop-node-1 evicted twop-a/a-low (ElasticQuota twop-b within"
        " its min: pods of quotas over their min (twop-a), any priority)",
        "preemption: twop-b/p2 on twop-node-2 evicted - (ElasticQuota twop-b within its min:"
        " pods of quotas over their min (-), any priority)",
    ]
