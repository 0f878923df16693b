"""The DRA sample (`config/samples/pods/dra/`) on a real control plane, as its README says: its
files applied with kubectl in the order of their numbers to kube-apiserver v1.36, the claims of
the gang's members made from the template by kube-controller-manager's resourceclaim
controller, and `placement scheduler run` (default configuration, scheduler name
`ocm-pod-scheduler`) scheduling the five pods.

The outcome is the one `placement scheduler simulate` prints for the sample
(tests/data/simulate_pods/dra.txt): every pod on the node simulate gives it, each claim
allocated one GPU of that node's pool and reserved for its pod, no GPU twice, the claim `h100`
an H100 of 80Gi.

The nodes are registered by the kubelet stand-in (Ready, the not-ready taint gone) with the
sample's labels, allocatable resources and scenario taint, rather than by `01-nodes.yaml`:
without a kubelet the real node lifecycle controller keeps a node not-ready, and no pod would
fit (the README says so).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.cli.main import main
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubelet import Kubelet, NodeSpec
from tests.e2e.pod_helpers import JsonGateway, scheduler_process, wait_until

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "config" / "samples" / "pods" / "dra"
NAMESPACE = "dra-training"
TAINT = "samples.ocm.io/scenario=dra:NoSchedule"
Doc = dict[str, Any]


def _docs(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _node_specs() -> list[NodeSpec]:
    """The sample's nodes as the kubelet stand-in registers them."""
    specs = []
    for node in _docs(SAMPLE / "01-nodes.yaml"):
        allocatable = node["status"]["allocatable"]
        specs.append(
            NodeSpec(
                node["metadata"]["name"],
                cpu=allocatable["cpu"],
                memory=allocatable["memory"],
                pods=allocatable["pods"],
                labels=node["metadata"]["labels"],
            )
        )
    return specs


def _simulated() -> dict[str, str]:
    """pod name -> node, as `scheduler simulate` places the sample."""
    out = io.StringIO()
    argv = ["scheduler", "simulate", "-f", str(SAMPLE), "-o", "json"]
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return {
        i["metadata"]["name"]: i["spec"]["nodeName"]
        for i in json.loads(out.getvalue())["items"]
        if i["kind"] == "Pod"
    }


@pytest.mark.asyncio
async def test_the_dra_sample_applied_with_kubectl_runs_as_simulate_says(
    controller_manager: ControlPlane,
) -> None:
    plane = controller_manager
    expected = _simulated()
    gateway = await JsonGateway.open(plane.kubeconfig)
    slices = _docs(SAMPLE / "03-resourceslices.yaml")
    try:
        with scheduler_process(plane) as scheduler:
            async with Kubelet(gateway, _node_specs(), drain=[NAMESPACE]):
                for spec in _node_specs():
                    plane.kubectl("taint", "node", spec.name, TAINT)
                for path in sorted(SAMPLE.glob("*.yaml")):
                    if path.name != "01-nodes.yaml":
                        plane.kubectl("apply", "-f", str(path))

                async def placed() -> dict[str, Doc] | None:
                    pods = await gateway.pods(NAMESPACE)
                    if len(pods) == len(expected) and all(p["spec"].get("nodeName") for p in pods):
                        return {p["metadata"]["name"]: p for p in pods}
                    return None

                try:
                    pods = await wait_until(placed, 60, "the sample's pods bound")
                except AssertionError as failed:
                    raise AssertionError(f"{failed}\n{scheduler.output()}") from None
                assert {name: p["spec"]["nodeName"] for name, p in pods.items()} == expected

                claims = {
                    c["metadata"]["name"]: c
                    for c in await gateway.items(
                        f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims"
                    )
                }
                given = set()
                for name, pod in pods.items():
                    made = {
                        s["name"]: s.get("resourceClaimName")
                        for s in pod["status"].get("resourceClaimStatuses", [])
                    }
                    claim = claims["h100" if name == "inference" else made["gpu"]]
                    if name != "inference":  # made by kube-controller-manager for this pod
                        (owner,) = claim["metadata"]["ownerReferences"]
                        assert (owner["kind"], owner["uid"]) == ("Pod", pod["metadata"]["uid"])
                    status = claim["status"]
                    assert status["reservedFor"] == [
                        {"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}
                    ]
                    (result,) = status["allocation"]["devices"]["results"]
                    node = pod["spec"]["nodeName"]
                    assert (result["driver"], result["pool"]) == ("gpu.example.com", node)
                    given.add((result["pool"], result["device"]))
                assert len(given) == len(pods) == 5
                h100 = claims["h100"]["status"]["allocation"]["devices"]["results"][0]
                device = next(
                    d
                    for s in slices
                    if s["spec"]["pool"]["name"] == h100["pool"]
                    for d in s["spec"]["devices"]
                    if d["name"] == h100["device"]
                )
                assert device["attributes"]["model"] == {"string": "H100"}
    finally:
        plane.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
        for name in ("04-claims.yaml", "03-resourceslices.yaml", "02-deviceclass.yaml"):
            plane.kubectl(
                "delete",
                "--ignore-not-found",
                "--wait=false",
                "-f",
                str(SAMPLE / name),
                check=False,
            )
        await gateway.close()
