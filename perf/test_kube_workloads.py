"""The scheduler_perf workloads of `perf.kube_workloads` at their smoke sizes (CI): each runs to
the end with every measured pod bound and its own check clean (anti-affinity: alone on a node
without a green pod; spread: zones within the skew; preemption: one eviction per preemptor at
most; gangs: whole or none), the objects the end to end runs create are the same workload, and
scheduler_perf's per-second throughput samples are computed as it does
(`perf.kube_throughput`). Figures come from `python -m perf`, never from here."""

from __future__ import annotations

import itertools

import pytest

from perf.kube_throughput import per_second, summary
from perf.kube_workloads import GANG_SMOKE, SMOKE, WORKLOADS, gangs, main, objects, run


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_workload_runs_clean_at_smoke_size(workload: str) -> None:
    nodes, running, pending = SMOKE[workload]
    out = run(workload, nodes, running, pending)
    assert out["problems"] == []
    assert out["bound"] == pending
    if workload == "PreemptionBasic":
        assert 0 < out["evicted"] <= pending  # the cluster is full: preemptors must evict


def test_command_line_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--smoke", "--only", "SchedulingBasic"]) == 0
    assert '"workload": "SchedulingBasic"' in capsys.readouterr().out


def test_gangs_through_the_engine_bind_whole_gangs_only() -> None:
    out = gangs(*GANG_SMOKE)  # 5 gangs of 4 members of 1 cpu on 4 nodes of 4 cpu: 4 fit
    assert out["problems"] == []
    assert out["fit"] == 4
    assert out["bound"] == 16 and out["whole_gangs"] == 4 and out["partial_gangs"] == 0


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_objects_are_the_workload_the_engine_runs(workload: str) -> None:
    nodes, running, pending = SMOKE[workload]
    cluster, before, measured = objects(workload, nodes, running, pending)
    per_node = nodes if workload == "PreemptionBasic" else 1
    assert len(cluster) == nodes and len(before) == running * per_node
    assert len(measured) == pending
    assert all(p.spec.node_name for p in before)  # running: bound by another scheduler
    assert not any(p.spec.node_name for p in measured)
    names = {n.metadata.name for n in cluster}
    assert {p.spec.node_name for p in before} <= names
    out = run(workload, nodes, running, pending)
    assert [n for _, n in out["timeline"]][-1] == pending  # the curve ends with every pod bound
    assert all(a <= b for (_, a), (_, b) in itertools.pairwise(out["timeline"]))


def test_per_second_samples_are_the_pods_bound_in_each_whole_second() -> None:
    # 300 pods bound in the first second, 100 in the second, 0 in the third, 50 in the fourth
    timeline = [(0.5, 200), (0.9, 300), (1.7, 400), (3.2, 420), (3.9, 450), (4.3, 460)]
    assert per_second(timeline) == [300, 100, 0, 50]
    assert per_second([(0.25, 100)]) == [400]  # shorter than a second: one sample
    assert per_second([]) == []
    stats = summary([300, 100, 0, 50])
    assert stats["Average"] == 112.5
    assert (stats["Perc50"], stats["Perc90"], stats["Perc99"]) == (50, 300, 300)
    assert summary([]) == {}
