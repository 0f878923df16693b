"""`placement demo --local`: the scheduler binds the workloads' pods on the embedded cluster and
prints one row per pod; the GPU pod is reported with kube-scheduler's message."""

from __future__ import annotations

import io

import pytest

from controllers.cli.demo_local import demo_pods, run_local_demo
from controllers.cli.main import build_parser


@pytest.mark.asyncio
async def test_local_demo_binds_every_pod_that_fits_and_explains_the_one_that_does_not() -> None:
    out = io.StringIO()
    assert await run_local_demo(out, timeout=20) == 0
    lines = out.getvalue().splitlines()
    names = {pod.name for pod in demo_pods()}
    table_rows = [
        line.split() for line in lines[2:] if line.split()[:1] and line.split()[0] in names
    ]
    rows = {row[0]: row for row in table_rows}
    for pod in demo_pods():
        assert pod.name in rows
    for name, row in rows.items():
        if name.startswith(("spot-worker-", "batch-")):
            assert row[2] == "spot", row
        if name.startswith(("api-", "web-")) and row[1] != "-":
            assert row[2] == "on-demand", row
    # The API StatefulSet's replicas are anti-affine on the hostname: one per on-demand node.
    api_nodes = [row[1] for name, row in rows.items() if name.startswith("api-") and row[1] != "-"]
    assert sorted(api_nodes) == ["ondemand-0", "ondemand-1", "ondemand-2"]
    # The GPU pod asks nvidia.com/gpu, an extended resource no node has (the GPU nodes' GPUs
    # are DRA devices, and tainted for their gang): preemption cannot help (kube's PostFilter
    # texts, DynamicResources' first).
    assert (
        "trainer-0: Unschedulable: 0/8 nodes are available: 2 node(s) had untolerated taint "
        "{gpu.example.com/gpu: present}, 3 Insufficient nvidia.com/gpu, 3 node(s) had "
        "untolerated taint {spot: true}. no new claims to deallocate, preemption: 0/8 nodes are "
        "available: 8 Preemption is not helpful for scheduling." in lines
    )
    # The fourth API replica finds no node without one (kube's reasons, preemption cannot help:
    # the replicas in the way have its priority).
    assert (
        "api-3: Unschedulable: 0/8 nodes are available: 2 node(s) had untolerated taint "
        "{gpu.example.com/gpu: present}, 3 node(s) didn't match pod anti-affinity rules, 3 "
        "node(s) had untolerated taint {spot: true}. no new claims to deallocate, preemption: "
        "0/8 nodes are available: 3 No preemption victims found for incoming pod, 5 Preemption "
        "is not helpful for scheduling." in lines
    )
    # 16 pods and the GPU gang's 4 (tests/controllers/cli/test_demo_dra.py)
    assert lines[-1].startswith("18/20 pods bound by ocm-pod-scheduler in ")
    assert lines[-1].endswith(", 18 running, 2 unschedulable")  # the kubelets started them


def test_demo_has_the_local_flag() -> None:
    args = build_parser().parse_args(["demo", "--local"])
    assert args.local is True
