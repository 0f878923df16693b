"""`placement demo --local`'s GPU part: the training gang claims GPUs a DRA driver publishes, the
scheduler allocates one distinct GPU per member on a GPU node and binds the gang whole, and the
demo prints which pod got which GPU on which node (from the claims' `status.allocation`)."""

from __future__ import annotations

import io
from collections import Counter

import pytest

from apis.core import Pod
from apis.registry import parse_as
from apis.resource import ResourceClaim
from controllers.cli.demo_dra import DRIVER, GANG, gang_pods, gpu_nodes, gpu_objects, gpu_rows
from controllers.cli.demo_local import run_local_demo


@pytest.mark.asyncio
async def test_the_demo_allocates_each_gang_member_its_own_gpu_on_the_node_it_runs_on() -> None:
    out = io.StringIO()
    assert await run_local_demo(out, timeout=20) == 0
    lines = out.getvalue().splitlines()
    members = {pod.name for pod in gang_pods()}
    # The pods' table: every member bound to a GPU node and Running.
    pod_rows = {
        row[0]: row
        for row in (line.split() for line in lines)
        if row[:1] and row[0] in members and len(row) >= 5
    }
    assert set(pod_rows) == members
    gpu_node_names = {node.name for node in gpu_nodes()}
    for row in pod_rows.values():
        assert row[1] in gpu_node_names, row
        assert row[3:5] == ["Running", "Scheduled"], row
    # The GPUs' table: one row per member, its claim made from the template, its device in the
    # pool of the node it runs on, no GPU given twice, two GPUs per node.
    at = [line.split() for line in lines].index(["POD", "NODE", "CLAIM", "GPU"])
    gpu_table = [line.split() for line in lines[at + 1 : at + 1 + len(members)]]
    assert [row[0] for row in gpu_table] == sorted(members)
    devices = []
    for pod, node, claim, device in gpu_table:
        assert claim.startswith(f"{pod}-gpu-"), claim  # kube's generateName <pod>-<entry>-
        assert node == pod_rows[pod][1]
        driver, pool, name = device.split("/")
        assert (driver, pool) == (DRIVER, node)
        devices.append((pool, name))
    assert len(set(devices)) == 4
    assert Counter(pool for pool, _ in devices) == {"gpu-0": 2, "gpu-1": 2}


def test_the_gpu_objects_are_what_a_driver_and_a_user_would_apply() -> None:
    kinds = [obj.KIND for obj in gpu_objects()]
    assert kinds == [
        "DeviceClass",
        "ResourceSlice",
        "ResourceSlice",
        "ResourceClaimTemplate",
        "PodGroup",
    ]
    members = gang_pods()
    assert len(members) == 4
    assert all(
        pod.metadata.labels and pod.metadata.labels["scheduling.x-k8s.io/pod-group"] == GANG
        for pod in members
    )


def _pod(
    name: str, node: str | None, claims: list[dict[str, str]], made: list[dict[str, str]]
) -> Pod:
    return parse_as(
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "resourceClaims": claims, "containers": [{"name": "c"}]},
            "status": {"resourceClaimStatuses": made},
        },
    )


def _claim(name: str, devices: list[tuple[str, str]] | None) -> ResourceClaim:
    status = (
        {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": DRIVER, "pool": pool, "device": device}
                        for pool, device in devices
                    ]
                }
            }
        }
        if devices is not None
        else {}
    )
    return parse_as(
        ResourceClaim,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}
            },
            "status": status,
        },
    )


def test_gpu_rows_read_direct_and_template_claims_and_show_a_claim_not_allocated() -> None:
    pods = [
        _pod("b", "n1", [{"name": "gpu", "resourceClaimName": "shared"}], []),
        _pod(
            "a",
            "n2",
            [{"name": "gpu", "resourceClaimTemplateName": "t"}],
            [{"name": "gpu", "resourceClaimName": "a-gpu-xyz"}],
        ),
        # a template entry whose claim is not made yet: no row
        _pod("c", None, [{"name": "gpu", "resourceClaimTemplateName": "t"}], []),
        _pod("d", None, [{"name": "gpu", "resourceClaimName": "waiting"}], []),
    ]
    claims = [
        _claim("shared", [("n1", "gpu-0"), ("n1", "gpu-1")]),
        _claim("a-gpu-xyz", [("n2", "gpu-1")]),
        _claim("waiting", None),
    ]
    assert gpu_rows(pods, claims) == [
        ["a", "n2", "a-gpu-xyz", f"{DRIVER}/n2/gpu-1"],
        ["b", "n1", "shared", f"{DRIVER}/n1/gpu-0"],
        ["b", "n1", "shared", f"{DRIVER}/n1/gpu-1"],
        ["d", "-", "waiting", "-"],
    ]
