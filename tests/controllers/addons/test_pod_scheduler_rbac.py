"""The RBAC of config/addons/pod-scheduler is what the scheduler and its status controller use,
measured on the embedded server's audit log, not listed by hand: a run with leader election, a
gang preempting lower-priority pods, an unschedulable pod, an ElasticQuota, a pod whose
WaitForFirstConsumer claim the scheduler binds to a local volume and one whose claim is
provisioned (by a stand-in provisioner) on the node chosen, and a pod whose ResourceClaim (made
from a template by the embedded server's resourceclaim controller) gets a device."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import yaml

from apis.core import Namespace, Pod
from apis.meta import ObjectMeta
from apis.registry import parse_as, parse_object
from apis.scheduling import ElasticQuota
from controllers.addons.gateway import PodGateway
from controllers.addons.scheduler import SchedulerOptions, _start
from controllers.cli.crds import SOURCE_CONFIG
from controllers.embedded.apiserver import EmbeddedApiServer
from controllers.embedded.kubelet import KubeletOptions
from controllers.kube.config import ClusterAccess, new_api_client
from tests.controllers.addons.cluster import node, pod
from tests.controllers.addons.test_gang_e2e import create_priorities, group, member
from tests.controllers.embedded.hub import eventually
from tests.e2e.provisioner import StandInProvisioner
from tests.placement.pods.test_volumes_engine import volumes as claim_volumes
from tests.plugins.pods.volume_builders import claim, local_pv, storage_class

RBAC = SOURCE_CONFIG / "addons" / "pod-scheduler" / "rbac.yaml"
LEASES = "ocm-pod-scheduler"
# What this test itself writes (the scheduler creates none of these).
TEST_WRITES = {
    ("", "pods", "create"),
    ("scheduling.x-k8s.io", "podgroups", "create"),
    ("scheduling.x-k8s.io", "elasticquotas", "create"),
    ("", "persistentvolumes", "create"),
    ("", "persistentvolumeclaims", "create"),
    ("storage.k8s.io", "storageclasses", "create"),
    ("", "nodes", "create"),  # the node that makes `huge` fail a second time
    ("", "nodes", "get"),  # the stand-in provisioner reads the node chosen for its volume
    ("resource.k8s.io", "deviceclasses", "create"),
    ("resource.k8s.io", "resourceslices", "create"),
    ("resource.k8s.io", "resourceclaimtemplates", "create"),
}
# Granted for paths a run without failures does not take: a claim read again after a conflict
# on PreBind's write, and Unreserve taking a pod out of a claim's reservedFor after a failure.
# And one no request names: kube-apiserver v1.36 checks it when a status write changes a claim's
# allocation or reservedFor (tests/e2e/test_pod_dra.py runs the scheduler with this role).
RARE = {
    ("resource.k8s.io", "resourceclaims", "get"),
    ("resource.k8s.io", "resourceclaims/status", "patch"),
    ("resource.k8s.io", "resourceclaims/binding", "update"),
}
DRA_OBJECTS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-node}
spec:
  driver: gpu.example.com
  nodeName: gpu-node
  pool: {name: gpu-node, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
"""


def granted() -> set[tuple[str, str, str]]:
    out = set()
    for doc in yaml.safe_load_all(RBAC.read_text()):
        if doc and doc["kind"] in ("ClusterRole", "Role"):
            for rule in doc["rules"]:
                for group_ in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        out |= {(group_, resource, verb) for verb in rule["verbs"]}
    return out


@pytest.mark.asyncio
async def test_the_rbac_grants_exactly_what_the_scheduler_and_status_controller_call() -> None:
    server = EmbeddedApiServer(kubelet=KubeletOptions())
    url = await server.start()
    gw = PodGateway(await new_api_client(ClusterAccess(url=url)), backoff=0.01)
    opened: list[Any] = []
    try:
        await gw.create(Namespace(metadata=ObjectMeta(name=LEASES)))
        await create_priorities(gw)
        for i in range(2):
            await gw.create(node(f"n{i}", cpu="4"))
        await gw.create(
            node("small", cpu="500m")
        )  # the local volume's node: too small for the rest
        quota = {"metadata": {"name": "q", "namespace": "default"}}
        spec = {"min": {"cpu": "100"}, "max": {"cpu": "100"}}
        doc = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota"}
        server.audit.clear()
        options = SchedulerOptions(
            url=url, http_addr=None, leader_elect=True, lease_namespace=LEASES
        )
        await _start(options, opened)
        await gw.create(parse_as(ElasticQuota, {**doc, **quota, "spec": spec}))
        low = [
            pod(f"low{i}", "2", "64Mi", priorityClassName="low", terminationGracePeriodSeconds=1)
            for i in range(4)
        ]
        for p in low:
            await gw.create(p)

        async def all_bound() -> bool:
            return all(p.spec.node_name for p in (await gw.list(Pod, "default")).items)

        await eventually(all_bound, timeout=30)
        await gw.create(group("hi", 2))
        for i in range(2):
            await gw.create(member(f"hi-m{i}", "hi", "2", priorityClassName="high"))
        await gw.create(pod("huge", "50", "64Mi"))
        for obj in (storage_class(), local_pv("pv-small", "small"), claim("data")):
            await gw.create(obj)
        await gw.create(pod("stateful", "100m", "64Mi", volumes=claim_volumes("data")))
        provisioned = storage_class("fast", provisioner="disk.csi.example.com")
        for obj in (provisioned, claim("fresh", cls="fast")):
            await gw.create(obj)
        await gw.create(pod("fresh", "100m", "64Mi", volumes=claim_volumes("fresh")))
        await gw.create(node("gpu-node", cpu="1"))  # its device is the trainer's
        for doc in yaml.safe_load_all(DRA_OBJECTS):
            await gw.create(parse_object(doc))
        entry = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
        await gw.create(pod("trainer", "100m", "64Mi", resourceClaims=[entry]))

        async def gang_bound() -> bool:
            pods = {p.name: p for p in (await gw.list(Pod, "default")).items}
            gang = all(pods[f"hi-m{i}"].spec.node_name for i in range(2))
            fresh = pods["fresh"].spec.node_name
            trainer = pods["trainer"].spec.node_name == "gpu-node"  # its device's node
            return gang and pods["stateful"].spec.node_name == "small" and bool(fresh) and trainer

        async with StandInProvisioner(gw, "disk.csi.example.com"):
            await eventually(gang_bound, timeout=60)
        # A node too small for `huge` moves it back to the queue: its second FailedScheduling
        # continues the first one's series, which is a PATCH of the event.
        await gw.create(node("n-extra", cpu="1"))

        async def series_patched() -> bool:
            return "patch" in server.audit.verbs().get(("events.k8s.io", "events"), set())

        await eventually(series_patched, timeout=30)
        await asyncio.sleep(0.5)  # the status controller's last patches and the events
        for item in reversed(opened):
            await item.stop() if hasattr(item, "stop") else await item.close()
        opened.clear()
        used = {
            (group_, resource, verb)
            for (group_, resource), verbs in server.audit.verbs().items()
            for verb in verbs
        }
        assert used - TEST_WRITES == granted() - RARE
        assert granted() >= RARE
    finally:
        for item in reversed(opened):
            await item.stop() if hasattr(item, "stop") else await item.close()
        await gw.close()
        await server.stop()
