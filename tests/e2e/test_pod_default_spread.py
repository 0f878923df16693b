"""Default topology spreading on a real control plane, against kube-scheduler v1.36 itself: three
bare pods behind a Service, on a large node and two small ones (one zone each), are spread one
per zone by kube-scheduler (its system default constraints take the Service's selector) and by
our `scheduler run` alike, which watches Services with the ClusterRole we ship. Resource scoring
alone would put all three on the large node."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane, assets_dir
from tests.e2e.kubelet import Kubelet, NodeSpec
from tests.e2e.pod_helpers import (
    POOL,
    PROFILES,
    JsonGateway,
    container,
    kubectl_apply,
    wait_until,
)

OURS = PROFILES["workloads"]
ZONE = "topology.kubernetes.io/zone"
SIZES = {"big": ("a", "64"), "small-b": ("b", "4"), "small-c": ("c", "4")}
pytest_plugins = ["tests.e2e.pod_fixtures"]
pytestmark = pytest.mark.usefixtures("pod_scheduler")


@contextlib.contextmanager
def kube_scheduler(plane: ControlPlane, name: str) -> Iterator[Path]:
    """kube-scheduler v1.36 from KUBEBUILDER_ASSETS with one default profile named `name` (the
    system default constraints), as the control plane's admin; yields its log."""
    folder = assets_dir()
    assert folder is not None
    with tempfile.TemporaryDirectory(prefix="e2e-kube-scheduler-") as tmp:
        config = Path(tmp) / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"kubeconfig": str(plane.kubeconfig)},
                    "leaderElection": {"leaderElect": False},
                    "profiles": [{"schedulerName": name}],
                }
            )
        )
        log = Path(tmp) / "kube-scheduler.log"
        with log.open("wb") as handle:
            process = subprocess.Popen(
                [str(folder / "kube-scheduler"), f"--config={config}", "--secure-port=0"],
                stdout=handle,
                stderr=subprocess.STDOUT,
            )
        try:
            yield log
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _nodes(pool: str) -> list[NodeSpec]:
    return [
        NodeSpec(f"{pool}-{name}", cpu=cpu, labels={POOL: pool, ZONE: zone})
        for name, (zone, cpu) in SIZES.items()
    ]


def _objects(namespace: str, app: str, scheduler: str, pool: str) -> list[dict[str, Any]]:
    meta = {"namespace": namespace}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": app, **meta},
        "spec": {"selector": {"app": app}, "ports": [{"port": 80}]},
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{app}-{i}", "labels": {"app": app}, **meta},
            "spec": {
                "schedulerName": scheduler,
                "nodeSelector": {POOL: pool},
                "containers": [container("500m", "64Mi")],
            },
        }
        for i in range(3)
    ]
    return [service, *pods]


@pytest.mark.asyncio
async def test_bare_pods_behind_a_service_are_spread_as_kube_scheduler_spreads_them(
    controller_manager: ControlPlane,
) -> None:
    namespace = unique_name("e2e-default-spread")
    kube_name, ours_pool, kube_pool = (unique_name(f"e2e-spread-{p}") for p in ("k", "o", "kp"))
    nodes = [*_nodes(ours_pool), *_nodes(kube_pool)]
    zone_of = {n.name: n.labels[ZONE] for n in nodes}
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    try:
        await gateway.namespace(namespace)
        async with Kubelet(gateway, nodes, drain=[namespace]):
            with kube_scheduler(controller_manager, kube_name) as log:
                kubectl_apply(
                    controller_manager,
                    *_objects(namespace, "ours", OURS, ours_pool),
                    *_objects(namespace, "kube", kube_name, kube_pool),
                )

                async def bound() -> dict[str, str] | None:
                    pods = await gateway.pods(namespace)
                    found = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
                    return found if len(found) == 6 and all(found.values()) else None

                try:
                    placed = await wait_until(bound, 20, "6 bound pods")
                except AssertionError as err:
                    raise AssertionError(f"{err}\n{log.read_text()[-3000:]}") from None
        by_scheduler: dict[str, list[str]] = {"ours": [], "kube": []}
        for name, node in placed.items():
            by_scheduler[name.split("-")[0]].append(zone_of[node])
        assert sorted(by_scheduler["kube"]) == ["a", "b", "c"]  # kube's own answer
        assert sorted(by_scheduler["ours"]) == sorted(by_scheduler["kube"])
    finally:
        await gateway.drop_namespace(namespace)
        await gateway.close()
