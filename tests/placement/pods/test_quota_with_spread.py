"""Capacity scheduling composes with the pod-spec plugins: a quota-bounded Deployment whose
pods spread over zones and are anti-affine per node binds no more than its quota's max, keeps
the zones within maxSkew and never puts two replicas on one node; the pods over the quota wait
with CapacityScheduling's reason."""

from __future__ import annotations

from collections import Counter
from typing import Any

from apis.core import Node, Pod
from tests.placement.pods.test_quota_world import QuotaWorld, qpod, quota

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def node(name: str, zone: str) -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": {HOST: name, ZONE: zone}},
            "status": {"allocatable": {"cpu": 8, "memory": "32Gi", "pods": 110}},
        }
    )


def replica(name: str) -> Pod:
    wire: dict[str, Any] = qpod(name, "team", cpu=1).to_wire()
    wire["metadata"]["labels"] = {"app": "web"}
    selector = {"matchLabels": {"app": "web"}}
    wire["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
        }
    ]
    wire["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector, "topologyKey": HOST}
            ]
        }
    }
    return Pod.model_validate(wire)


def test_a_quota_bounded_deployment_spreads_over_zones_one_replica_per_node() -> None:
    nodes = [node(f"n{i}", "abc"[i % 3]) for i in range(9)]
    world = QuotaWorld.of()
    world.add_nodes(*nodes)
    # "other" lends its unused min: team may borrow up to its max.
    world.add_quotas(
        quota("team", min_={"cpu": 3}, max_={"cpu": 7}),
        quota("other", min_={"cpu": 6}, max_={"cpu": 6}),
    )
    world.submit(*(replica(f"web-{i}") for i in range(10)))
    running = world.running("team")
    assert len(running) == 7  # the quota's max: 7 cpu of 1 each
    placed = {key: world.pods[key].spec.node_name for key in running}
    assert len(set(placed.values())) == 7  # anti-affinity: one per node
    zones = Counter("abc"[int(str(n)[1:]) % 3] for n in placed.values())
    assert max(zones.values()) - min(zones.values()) <= 1, zones
    for key in world.pending():  # over max: CapacityScheduling's reason, not the others'
        assert "ElasticQuota" in world.message(key), world.message(key)
