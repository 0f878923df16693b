"""The scheduler_perf workloads of `perf.kube_workloads` at their smoke sizes (CI): each runs to
the end with every measured pod bound and its own check clean (anti-affinity: alone on a node
without a green pod; spread: zones within the skew; preemption: one eviction per preemptor at
most). Figures come from `python -m perf.kube_workloads`, never from here."""

from __future__ import annotations

import pytest

from perf.kube_workloads import SMOKE, WORKLOADS, main, run


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
