"""The side-by-side with kube-scheduler (`perf.vs_kube`): its shapes and their checks, the
report's aggregation and verdicts. A small run of both schedulers on a real control plane is
`python -m perf --smoke`'s (`perf/test_harness.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perf.vs_kube_report import aggregate, verdicts, write
from perf.vs_kube_shapes import SHAPES, SIZES, compare, world


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_builds_at_smoke_size_with_pods_to_measure(shape: str) -> None:
    w = world(shape, *SIZES["smoke"][shape])
    assert w.nodes and w.measured
    assert all(not p["spec"].get("nodeName") for p in w.measured)
    assert all(p["spec"].get("nodeName") for p in w.before)
    if shape == "SchedulingWithPVs":
        assert len(w.claims) == len(w.measured)
    free = {n["metadata"]["name"]: 0 for n in w.nodes}
    placed = {p["metadata"]["name"]: next(iter(free)) for p in w.measured}
    if shape == "SchedulingBasic":
        assert w.check(placed, 0) == []  # 30 small pods fit one node


def test_checks_name_the_broken_rule() -> None:
    anti = world("SchedulingPodAntiAffinity", 10, 3, 5)
    taken = anti.before[0]["spec"]["nodeName"]
    assert any("two green pods" in p for p in anti.check({"m-0": taken}, 0))
    spread = world("TopologySpreading", 9, 0, 6)
    zone0 = [n["metadata"]["name"] for n in spread.nodes][::3]
    skewed = {f"m-{i}": zone0[i % len(zone0)] for i in range(6)}
    assert any("skewed" in p for p in spread.check(skewed, 0))
    pvs = world("SchedulingWithPVs", 4, 0, 2)
    problems = pvs.check({"m-0": "node-00000", "m-1": "node-00001"}, 0, {"m-0": "node-00000"})
    assert problems == ["1 pods away from their volume's node"]
    preemption = world("PreemptionBasic", 2, 4, 2)
    assert any("evictions" in p for p in preemption.check({"high-0": "n", "high-1": "n"}, 3))
    basic = world("SchedulingBasic", 2, 0, 3)
    assert basic.check({"m-0": "node-00000"}, 0) == ["1 of 3 measured pods bound"]
    dra = world("SchedulingWithResourceClaimTemplate", 2, 0, 11)
    assert len([d for d in dra.setup if d["kind"] == "ResourceSlice"]) == 2
    assert dra.check({f"m-{i}": "node-00000" for i in range(10)} | {"m-10": "node-00001"}, 0) == []
    crowded = {f"m-{i}": "node-00000" for i in range(11)}
    assert dra.check(crowded, 0) == ["1 nodes hold more pods than devices"]
    with pytest.raises(ValueError, match="unknown shape"):
        world("Nope", 1, 1, 1)


def test_compare_sets_two_placements_side_by_side() -> None:
    ours = {"a": "n1", "b": "n1", "c": "n2"}
    kube = {"a": "n1", "b": "n2", "c": "n3"}
    c = compare(ours, kube)
    assert c["same_pods_bound"] is True
    assert c["per_node_ours"] == (1, 2) and c["per_node_kube"] == (1, 1)
    assert c["same_node_share"] == pytest.approx(1 / 3, abs=1e-3)
    assert compare(ours, {"a": "n1"})["same_pods_bound"] is False


def _run(name: str, pods_per_s: float, rss: float, first: float, stop: float) -> dict[str, Any]:
    return {
        "scheduler": name,
        "shape": "SchedulingBasic",
        "mode": "before",
        "round": 0,
        "pods_per_s": pods_per_s,
        "cpu_ms_per_pod": 1.0 if name == "ours" else 2.0,
        "rss_mib": rss,
        "first_bind_s": first,
        "stop_s": stop,
        "throughput": {"Average": pods_per_s},
        "timeline": [(0.0, 1), (1.0, 10)],
        "placements": {"m-0": "node-00000"},
        "evicted": 0,
        "problems": [],
    }


def test_verdicts_are_ratios_to_kube_in_the_same_run(tmp_path: Path) -> None:
    runs = [
        _run("ours", 300.0, 150.0, 1.0, 0.2),
        _run("kube-scheduler", 100.0, 50.0, 1.0, 0.01),
        _run("ours", 100.0, 150.0, 1.0, 2.0),
        _run("kube-scheduler", 100.0, 50.0, 1.0, 0.01),
    ]
    medians = aggregate(runs)
    assert medians[("SchedulingBasic", "before", "ours")]["pods_per_s"] == 200.0
    found = {name: (value, verdict) for name, _, _, value, verdict in verdicts(runs)}
    assert found["throughput"] == (2.0, "met")
    assert found["scheduler CPU per pod"] == (0.5, "met")
    assert found["RSS"] == (3.0, "**missed**")
    assert found["start to first bind"] == (1.0, "met")
    assert found["SIGTERM to exit (s)"] == (1.1, "**missed**")
    report = write(tmp_path, {"runs": runs, "interrupted": []}, plots=lambda *_: [])
    text = report.read_text()
    assert "| SchedulingBasic | ours | 200.0 |" in text
    assert "| throughput | SchedulingBasic | before | 2.00x | met |" in text


def test_steady_state_claims_fill_nodes_in_order_and_the_table_gives_the_ratio() -> None:
    from perf.vs_kube_steady import _allocated_claim, _table

    claim, status = _allocated_claim(13, nodes=4)
    (result,) = status["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"]) == ("node-00001", "instance-3")
    term = status["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]
    assert term["matchFields"][0]["values"] == ["node-00001"]
    assert claim["metadata"]["name"] == "init-13"
    runs = [
        {"scheduler": "ours", "pods_per_s": 30.0, "cpu_ms_per_pod": 2.0, "rss_mib": 100.0},
        {"scheduler": "kube-scheduler", "pods_per_s": 20.0, "cpu_ms_per_pod": 3.0, "rss_mib": 90},
        {"scheduler": "ours", "pods_per_s": 40.0, "cpu_ms_per_pod": 2.0, "rss_mib": 100.0},
    ]
    table = _table(runs)
    assert "| ours | 35.0 | 30.0, 40.0 | 2.00 | 100 |" in table
    assert table[-1].startswith("| *ours / kube* | *1.75x*")
