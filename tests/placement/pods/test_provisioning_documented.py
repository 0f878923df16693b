"""Dynamic provisioning as Kubernetes' documentation describes it, held back from the code:
the examples of the Storage Classes page (`allowedTopologies` restricts where volumes are
provisioned; `WaitForFirstConsumer` provisions where the pod's own constraints put it) and of
the Storage Capacity page (a driver with `storageCapacity: true` is only given nodes whose
CSIStorageCapacity can hold the volume; a pod that fits nowhere stays pending), run through the
engine and the simulated provisioner."""

from __future__ import annotations

from typing import Any

from apis.meta import KubeObject
from apis.storage import (
    CSIDriver,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from placement.pods.simulator.simulation import pods_by_key
from tests.placement.pods.test_engine import make_node, make_pod
from tests.placement.pods.test_volumes_engine import run, stored, volumes
from tests.plugins.pods.volume_builders import HOST, claim

ZONE = "topology.kubernetes.io/zone"
ZONES = {"n-1a": "us-central-1a", "n-1b": "us-central-1b", "n-1c": "us-central-1c"}


def nodes() -> list[KubeObject]:
    return [make_node(n, labels={HOST: n, ZONE: z}) for n, z in ZONES.items()]


def standard(**extra: Any) -> StorageClass:
    """The Storage Classes page's "Allowed topologies" example."""
    doc = {
        "metadata": {"name": "standard"},
        "provisioner": "example.com/example",
        "parameters": {"type": "pd-standard"},
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [
            {"matchLabelExpressions": [{"key": ZONE, "values": ["us-central-1a", "us-central-1b"]}]}
        ],
        **extra,
    }
    return StorageClass.model_validate(doc)


def placed(objects: list[KubeObject]) -> dict[str, str]:
    result = run(objects)
    return {p.name: p.spec.node_name or "" for p in pods_by_key(result).values()}


def test_allowed_topologies_restrict_where_volumes_are_provisioned() -> None:
    objects: list[KubeObject] = [*nodes(), standard()]
    for i in range(6):
        objects.append(claim(f"c{i}", cls="standard"))
        objects.append(make_pod(f"p{i}", cpu="100m", volumes=volumes(f"c{i}")))
    result = run(objects)
    pods = pods_by_key(result)
    assert all(pods[f"default/p{i}"].spec.node_name in ("n-1a", "n-1b") for i in range(6))
    provisioned = stored(result, PersistentVolume)
    assert len(provisioned) == 6
    for pv in provisioned.values():
        (term,) = pv.spec.node_affinity.required.node_selector_terms
        (host,) = term.match_expressions
        assert host.values[0] in ("n-1a", "n-1b")


def test_wait_for_first_consumer_provisions_where_the_pods_constraints_put_it() -> None:
    objects: list[KubeObject] = [*nodes(), standard(), claim("data", cls="standard")]
    objects.append(make_pod("p", cpu="100m", volumes=volumes("data"), nodeSelector={HOST: "n-1b"}))
    result = run(objects)
    (claim_,) = stored(result, PersistentVolumeClaim).values()
    assert pods_by_key(result)["default/p"].spec.node_name == "n-1b"
    assert claim_.metadata.annotations["volume.kubernetes.io/selected-node"] == "n-1b"
    assert claim_.status.phase == "Bound"


def test_storage_capacity_tracking_only_gives_nodes_that_can_hold_the_volume() -> None:
    driver = CSIDriver.model_validate(
        {
            "metadata": {"name": "example.com/example".replace("/", ".")},
            "spec": {"storageCapacity": True},
        }
    )
    klass = standard(provisioner=driver.name)
    capacity = [
        CSIStorageCapacity.model_validate(
            {
                "metadata": {"name": f"cap-{zone}", "namespace": "kube-system"},
                "storageClassName": "standard",
                "nodeTopology": {"matchLabels": {ZONE: zone}},
                "capacity": size,
            }
        )
        for zone, size in (("us-central-1a", "4Gi"), ("us-central-1b", "100Gi"))
    ]
    objects: list[KubeObject] = [*nodes(), klass, driver, *capacity]
    objects += [
        claim("big", cls="standard", size="10Gi"),
        claim("huge", cls="standard", size="1Ti"),
    ]
    objects.append(make_pod("big", cpu="100m", volumes=volumes("big")))
    objects.append(make_pod("huge", cpu="100m", volumes=volumes("huge")))
    where = placed(objects)
    assert where == {"big": "n-1b", "huge": ""}  # no zone holds 1Ti: the pod stays pending
