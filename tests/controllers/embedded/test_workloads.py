"""The kinds a pod scheduler reads besides pods and nodes: scheduling.k8s.io PriorityClass (with
the two system classes every cluster has), apps/v1 Deployment, ReplicaSet, StatefulSet and
batch/v1 Job, stored without controllers; discovery, validation, the status subresource and the
`kubectl get` columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client

from apis.core import Pod
from apis.registry import parse_object
from apis.scheduling import PriorityClass
from apis.workloads import Deployment, Job, ReplicaSet, StatefulSet
from controllers.kube.errors import ForbiddenError, InvalidError
from tests.controllers.embedded.hub import hub, kubectl
from tests.controllers.embedded.test_tables import TABLE, lines

pytestmark = pytest.mark.asyncio

TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
}


def workload(kind: str, name: str = "web", **spec: Any) -> Any:
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    if kind != "Job":
        spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    return parse_object(
        {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"template": TEMPLATE, **spec},
        }
    )


def priority_class(name: str, value: int, **extra: Any) -> PriorityClass:
    doc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }
    obj = parse_object(doc)
    assert isinstance(obj, PriorityClass)
    return obj


async def test_discovery_serves_the_workload_and_priority_groups() -> None:
    async with hub() as (server, _), client.ApiClient(client.Configuration(host=server.url)) as api:
        apps = await client.AppsV1Api(api).get_api_resources()
        names = {r.name for r in apps.resources}
        assert {"deployments", "deployments/status", "replicasets", "statefulsets"} <= names
        short = {r.name: r.short_names for r in apps.resources if r.short_names}
        assert short["deployments"] == ["deploy"] and short["statefulsets"] == ["sts"]
        batch = await client.BatchV1Api(api).get_api_resources()
        assert {"jobs", "jobs/status"} <= {r.name for r in batch.resources}
        scheduling = await client.SchedulingV1Api(api).get_api_resources()
        (pcs,) = [r for r in scheduling.resources if r.name == "priorityclasses"]
        assert (pcs.namespaced, pcs.kind, pcs.short_names) == (False, "PriorityClass", ["pc"])


async def test_every_cluster_has_the_two_system_priority_classes() -> None:
    async with hub() as (server, _), client.ApiClient(client.Configuration(host=server.url)) as api:
        listed = await client.SchedulingV1Api(api).list_priority_class()
        assert {(pc.metadata.name, pc.value) for pc in listed.items} == {
            ("system-cluster-critical", 2_000_000_000),
            ("system-node-critical", 2_000_001_000),
        }


async def test_workloads_are_stored_without_creating_pods() -> None:
    async with hub() as (_, gw):
        for kind, spec in (
            ("Deployment", {"replicas": 3}),
            ("ReplicaSet", {"replicas": 2}),
            ("StatefulSet", {"replicas": 2, "serviceName": "web"}),
            ("Job", {"parallelism": 2, "completions": 4}),
        ):
            await gw.create(workload(kind, **spec))
        deploy = await gw.get(Deployment, "web", "default")
        assert deploy.spec.replicas == 3 and deploy.metadata.generation == 1
        sts = await gw.get(StatefulSet, "web", "default")
        assert sts.spec.service_name == "web"
        job = await gw.get(Job, "web", "default")
        assert (job.spec.parallelism, job.spec.completions) == (2, 4)
        assert [r.name for r in (await gw.list(ReplicaSet)).items] == ["web"]
        assert (await gw.list(Pod)).items == []


async def test_a_workload_without_its_selector_is_invalid() -> None:
    async with hub() as (_, gw):
        doc = workload("Deployment").to_wire()
        del doc["spec"]["selector"]
        with pytest.raises(InvalidError) as err:
            await gw._request("POST", "/apis/apps/v1/namespaces/default/deployments", body=doc)
        assert [c.field for c in err.value.causes] == ["spec.selector"]


async def test_workload_status_is_a_subresource() -> None:
    async with hub() as (_, gw):
        await gw.create(workload("Deployment", replicas=3))
        written = await gw.patch_status(
            Deployment,
            "web",
            {"spec": {"replicas": 9}, "status": {"replicas": 3, "readyReplicas": 2}},
            "default",
        )
        assert written.spec.replicas == 3
        assert written.status is not None and written.status.ready_replicas == 2
        scaled = await gw.merge_patch(
            Deployment, "web", {"spec": {"replicas": 5}, "status": {"replicas": 0}}, "default"
        )
        assert scaled.spec.replicas == 5 and scaled.metadata.generation == 2
        assert scaled.status is not None and scaled.status.replicas == 3


async def test_priority_classes_are_cluster_scoped_and_checked() -> None:
    async with hub() as (_, gw):
        created = await gw.create(
            priority_class("high", 1000, preemptionPolicy="Never", description="batch")
        )
        assert created.metadata.namespace is None
        assert (created.value, created.preemption_policy) == (1000, "Never")
        bad = priority_class("bad", 1).to_wire()
        bad["preemptionPolicy"] = "Sometimes"
        with pytest.raises(InvalidError) as err:
            await gw._request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body=bad)
        assert [c.field for c in err.value.causes] == ["preemptionPolicy"]


async def test_priority_classes_are_admitted_as_kube_admits_them() -> None:
    async with hub() as (_, gw):
        plain = await gw.create(priority_class("plain", 10))
        assert plain.preemption_policy == "PreemptLowerPriority"
        with pytest.raises(InvalidError) as err:
            await gw.create(priority_class("huge", 1_000_000_001))
        assert [c.field for c in err.value.causes] == ["value"]
        assert "maximum allowed value of a user defined priority is 1000000000" in str(err.value)
        with pytest.raises(InvalidError) as err:
            await gw.create(priority_class("system-mine", 5))
        assert [c.field for c in err.value.causes] == ["metadata.name"]
        await gw.create(priority_class("default", 100, globalDefault=True))
        with pytest.raises(ForbiddenError) as forbidden:
            await gw.create(priority_class("another", 200, globalDefault=True))
        assert "PriorityClass default is already marked as default" in str(forbidden.value)


async def table(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(url, headers={"Accept": TABLE}) as resp:
        assert resp.status == 200
        doc: dict[str, Any] = await resp.json()
        return doc


async def test_tables_have_kube_apiservers_columns() -> None:
    async with hub() as (server, gw):
        await gw.create(workload("Deployment", replicas=3))
        await gw.patch_status(
            Deployment,
            "web",
            {"status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}},
            "default",
        )
        await gw.create(workload("Job", completions=4, parallelism=2))
        await gw.patch_status(
            Job,
            "web",
            {
                "status": {
                    "succeeded": 4,
                    "startTime": "2026-01-01T00:00:00Z",
                    "completionTime": "2026-01-01T00:02:05Z",
                    "conditions": [{"type": "Complete", "status": "True"}],
                }
            },
            "default",
        )
        await gw.create(priority_class("high", 1000, globalDefault=True))
        deploys = await table(f"{server.url}/apis/apps/v1/namespaces/default/deployments")
        assert [c["name"] for c in deploys["columnDefinitions"]] == [
            *("Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images"),
            "Selector",
        ]
        (row,) = deploys["rows"]
        assert row["cells"][:4] == ["web", "2/3", 3, 2]
        assert row["cells"][5:] == ["web", "nginx:1.27", "app=web"]
        jobs = await table(f"{server.url}/apis/batch/v1/namespaces/default/jobs")
        (job_row,) = jobs["rows"]
        assert job_row["cells"][:4] == ["web", "Complete", "4/4", "2m5s"]
        classes = await table(f"{server.url}/apis/scheduling.k8s.io/v1/priorityclasses")
        cells = {row["cells"][0]: row["cells"] for row in classes["rows"]}
        assert cells["high"][1:3] == [1000, True]
        assert cells["system-node-critical"][1:3] == [2_000_001_000, False]


async def test_kubectl_gets_workloads_and_priority_classes(tmp_path: Path) -> None:
    async with hub() as (server, gw):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        await gw.create(workload("StatefulSet", replicas=2))
        await gw.create(workload("ReplicaSet", replicas=1))
        await gw.create(priority_class("high", 1000))
        code, out, err = await kubectl(config, "get", "sts,rs", "-o", "wide")
        assert code == 0, err
        rows = lines(out)
        assert rows[0] == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]
        assert rows[1][:2] == ["statefulset.apps/web", "0/2"]
        assert rows[1][3:] == ["web", "nginx:1.27"]
        rs_header = ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES"]
        assert rows[3] == [*rs_header, "SELECTOR"]
        assert rows[4][:4] == ["replicaset.apps/web", "1", "0", "0"]
        code, out, err = await kubectl(config, "get", "pc", "high")
        assert code == 0, err
        header, row = lines(out)
        assert header == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
        assert row[:3] == ["high", "1000", "false"]
        assert row[4] == "PreemptLowerPriority"
