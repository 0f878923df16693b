"""Volume attach limits as Kubernetes' documentation describes them, held back from the code
(the "Node-specific Volume Limits" page and the CSINode API reference), run through the engine:

* a CSI driver that advertises a maximum number of volumes for a node is honoured (the page's
  EBS example: 25 volumes on an M5 instance);
* in-tree volumes migrated to a CSI driver take the limit the CSI driver reports;
* `allocatable.count` counts unique volumes: one shared by several pods on a node is used
  once; without a count the node's volumes are unbounded."""

from __future__ import annotations

from typing import Any

from apis.csinode import CSINode
from apis.meta import KubeObject
from apis.storage import PersistentVolume
from placement.pods.simulator.simulation import pods_by_key
from tests.placement.pods.test_engine import make_node, make_pod
from tests.placement.pods.test_volume_limits_engine import message
from tests.placement.pods.test_volumes_engine import run, volumes
from tests.plugins.pods.volume_builders import claim

EBS = "ebs.csi.aws.com"


def csinode(node: str, count: int | None) -> CSINode:
    driver: dict[str, Any] = {"name": EBS, "nodeID": f"i-{node}"}
    if count is not None:
        driver["allocatable"] = {"count": count}
    return CSINode.model_validate({"metadata": {"name": node}, "spec": {"drivers": [driver]}})


def ebs_volume(i: int, *, in_tree: bool = False) -> list[KubeObject]:
    """Claim `data-<i>` bound to volume `pv-<i>`: a CSI EBS volume, or the in-tree kind."""
    source: dict[str, Any] = (
        {"awsElasticBlockStore": {"volumeID": f"aws://us-east-1a/vol-{i:04d}"}}
        if in_tree
        else {"csi": {"driver": EBS, "volumeHandle": f"vol-{i:04d}"}}
    )
    spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], **source}
    spec["claimRef"] = {"namespace": "default", "name": f"data-{i}"}
    pv = PersistentVolume.model_validate({"metadata": {"name": f"pv-{i}"}, "spec": spec})
    return [pv, claim(f"data-{i}", cls="", volume=f"pv-{i}")]


def world(count: int | None, pods: int, *, in_tree: bool = False) -> dict[str, str]:
    objects: list[KubeObject] = [make_node("m5", cpu=64, pods=110), csinode("m5", count)]
    for i in range(pods):
        objects += ebs_volume(i, in_tree=in_tree)
        objects.append(make_pod(f"p{i:02d}", cpu="10m", volumes=volumes(f"data-{i}")))
    result = run(objects)
    placed = {p.name: p.spec.node_name or "" for p in pods_by_key(result).values()}
    for key, found in pods_by_key(result).items():
        if not found.spec.node_name:
            assert message(result, key).startswith(
                "0/1 nodes are available: 1 node(s) exceed max volume count."
            )
    return placed


def test_the_limit_a_csi_driver_advertises_for_a_node_is_honoured() -> None:
    placed = world(25, 26)
    assert sum(1 for node in placed.values() if node) == 25
    assert placed["p25"] == ""  # the 26th, in queue order, waits


def test_in_tree_volumes_migrated_to_csi_take_the_drivers_limit() -> None:
    placed = world(25, 26, in_tree=True)
    assert sum(1 for node in placed.values() if node) == 25


def test_a_volume_shared_by_pods_on_a_node_is_used_once() -> None:
    objects: list[KubeObject] = [make_node("m5"), csinode("m5", 1), *ebs_volume(0)]
    for i in range(3):
        objects.append(make_pod(f"reader-{i}", cpu="10m", volumes=volumes("data-0")))
    placed = {p.name: p.spec.node_name for p in pods_by_key(run(objects)).values()}
    assert placed == {"reader-0": "m5", "reader-1": "m5", "reader-2": "m5"}


def test_without_a_count_the_nodes_volumes_are_unbounded() -> None:
    placed = world(None, 30)
    assert all(placed.values())
