"""Dynamic provisioning on a real control plane: a pod whose WaitForFirstConsumer claim has no
volume yet, of a class whose CSI driver publishes its capacity. `placement scheduler run` keeps
the node a CSIStorageCapacity of the class selects (the other node "did not have enough free
storage"), writes `volume.kubernetes.io/selected-node` on the claim at PreBind and waits;
kube-controller-manager's PV controller hands the claim to its provisioner (the claim's
`volume.kubernetes.io/storage-provisioner`), a stand-in provisioner creates the volume for the
node, the PV controller binds the two, and only then is the pod bound, to that node."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubelet import Kubelet, NodeSpec
from tests.e2e.pod_helpers import PROFILES, JsonGateway, container, kubectl_apply, wait_until
from tests.e2e.provisioner import StandInProvisioner

SCHEDULER = PROFILES["volumes"]
pytest_plugins = ["tests.e2e.pod_fixtures"]
pytestmark = pytest.mark.usefixtures("pod_scheduler")
SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"


@pytest.mark.asyncio
async def test_a_claim_is_provisioned_on_the_node_chosen_and_the_pod_bound_there(
    controller_manager: ControlPlane,
) -> None:
    namespace = unique_name("e2e-provisioning")
    klass = unique_name("e2e-fast")
    driver = f"{unique_name('e2e-driver')}.csi.example.com"
    nodes = [NodeSpec(unique_name("e2e-prov-node")) for _ in range(2)]
    roomy = nodes[1].name
    gateway = await JsonGateway.open(controller_manager.kubeconfig)
    kubectl = controller_manager.kubectl
    provisioner = StandInProvisioner(gateway, driver)
    try:
        await gateway.namespace(namespace)
        async with Kubelet(gateway, nodes, drain=[namespace]):
            kubectl_apply(
                controller_manager,
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSIDriver",
                    "metadata": {"name": driver},
                    "spec": {"attachRequired": False, "storageCapacity": True},
                },
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "metadata": {"name": klass},
                    "provisioner": driver,
                    "volumeBindingMode": "WaitForFirstConsumer",
                },
                *(
                    {
                        "apiVersion": "storage.k8s.io/v1",
                        "kind": "CSIStorageCapacity",
                        "metadata": {"name": f"cap-{i}", "namespace": namespace},
                        "storageClassName": klass,
                        "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": spec.name}},
                        "capacity": size,
                    }
                    for i, (spec, size) in enumerate(zip(nodes, ("1Gi", "100Gi"), strict=True))
                ),
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": "data", "namespace": namespace},
                    "spec": {
                        "storageClassName": klass,
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "5Gi"}},
                    },
                },
            )
            async with provisioner:
                kubectl_apply(
                    controller_manager,
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "db", "namespace": namespace},
                        "spec": {
                            "schedulerName": SCHEDULER,
                            "containers": [container()],
                            "volumes": [
                                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
                            ],
                        },
                    },
                )
                pod_path = f"/api/v1/namespaces/{namespace}/pods/db"

                async def placed() -> str:
                    pod = await gateway.read(pod_path)
                    return str(pod["spec"].get("nodeName") or "")

                assert await wait_until(placed, 8, "the pod bound") == roomy
            claim = await gateway.read(
                f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/data"
            )
            annotations = claim["metadata"]["annotations"]
            assert annotations[SELECTED_NODE] == roomy
            assert annotations[STORAGE_PROVISIONER] == driver  # kube's PV controller's
            ((claim_key, node, volume),) = provisioner.made
            assert (claim_key, node) == (f"{namespace}/data", roomy)
            assert claim["spec"]["volumeName"] == volume
            assert annotations["pv.kubernetes.io/bind-completed"] == "yes"

            async def bound() -> dict[str, object] | None:
                pv = await gateway.read(f"/api/v1/persistentvolumes/{volume}")
                return pv if (pv.get("status") or {}).get("phase") == "Bound" else None

            pv = await wait_until(bound, 5, "the volume Bound")
            assert pv["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]  # type: ignore[index]
    finally:
        kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        made = [volume for _, _, volume in provisioner.made]
        if made:
            kubectl("delete", "pv", *made, "--ignore-not-found", "--wait=false", check=False)
        kubectl("delete", "storageclass", klass, "--ignore-not-found", check=False)
        kubectl("delete", "csidriver", driver, "--ignore-not-found", check=False)
        await gateway.close()
