"""Table responses, as `kubectl get` asks for them: the CRDs' printer columns (priority > 0
only with `-o wide`), the core kinds' columns, `includeObject`, a Table per watch event; and
Events where operators look (`kubectl get events`, `kubectl describe`)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from apis.core import CoreEvent
from apis.placements import Placement
from controllers.cli.crds import CRD_DIR
from controllers.embedded import EmbeddedApiServer
from controllers.runtime.events import EventRecorder
from placement.testing import binding, cluster_set
from placement.testing import cluster as fleet_cluster
from placement.testing import placement as placement_of
from tests.controllers.embedded.hub import (
    WAIT,
    cluster,
    ensure_namespaces,
    hub,
    kubectl,
    placement,
    pod,
)
from tests.controllers.hub.controller_hub import hub as controller_hub

pytestmark = pytest.mark.asyncio

GROUP = "cluster.open-cluster-management.io"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_ACCEPT = f"{TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
SATISFIED = {
    "status": {
        "numberOfSelectedClusters": 3,
        "conditions": [
            {
                "type": "PlacementSatisfied",
                "status": "True",
                "reason": "AllDecisionsScheduled",
                "message": "All cluster decisions scheduled",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
}


async def get(url: str, accept: str = KUBECTL_ACCEPT) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(url, headers={"Accept": accept}) as response,
    ):
        return response.status, await response.json()


def lines(out: str) -> list[list[str]]:
    """kubectl's table output as cells (columns are separated by two or more spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in out.strip().splitlines()]


async def test_a_list_asked_as_table_is_the_crds_printer_columns() -> None:
    async with hub() as (server, gw):
        await gw.create(placement("web"))
        await gw.create(placement("db"))
        await gw.patch_status(Placement, "web", SATISFIED, "default")
        code, table = await get(f"{server.url}/apis/{GROUP}/v1beta1/namespaces/default/placements")
        assert code == 200
        assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
        assert table["metadata"]["resourceVersion"] == str(server.store.rv)
        names = [c["name"] for c in table["columnDefinitions"]]
        assert names == ["Name", "Succeeded", "Reason", "SelectedClusters"]
        assert table["columnDefinitions"][0]["format"] == "name"
        assert [row["cells"] for row in table["rows"]] == [
            ["db", None, None, None],
            ["web", "True", "AllDecisionsScheduled", 3],
        ]
        # includeObject=Metadata by default: what kubectl needs for -A and --show-labels.
        row_object = table["rows"][1]["object"]
        assert row_object["kind"] == "PartialObjectMetadata"
        assert row_object["metadata"]["namespace"] == "default"
        assert "spec" not in row_object


@pytest.mark.parametrize(
    ("include", "expected"),
    [
        pytest.param("Object", "Placement", id="object"),
        pytest.param("Metadata", "PartialObjectMetadata", id="metadata"),
        pytest.param("None", None, id="none"),
    ],
)
async def test_include_object_says_what_each_row_carries(include: str, expected: str) -> None:
    async with hub() as (server, gw):
        await gw.create(placement("web"))
        path = f"/apis/{GROUP}/v1beta1/namespaces/default/placements/web"
        code, table = await get(f"{server.url}{path}?includeObject={include}")
        assert code == 200 and len(table["rows"]) == 1
        assert (table["rows"][0].get("object") or {}).get("kind") == expected


async def test_without_the_table_media_type_the_objects_come_back() -> None:
    async with hub() as (server, gw):
        await gw.create(placement("web"))
        url = f"{server.url}/apis/{GROUP}/v1beta1/namespaces/default/placements"
        _, doc = await get(url, "application/json")
        assert doc["kind"] == "PlacementList"
        code, doc = await get(url + "?includeObject=Everything")
        assert code == 400


async def test_a_table_watch_sends_one_row_per_event_and_the_columns_once() -> None:
    async with hub() as (server, gw):
        await gw.create(placement("web"))
        rv = server.store.rv
        await gw.create(placement("db"))
        await gw.patch_status(Placement, "web", SATISFIED, "default")
        url = f"{server.url}/apis/{GROUP}/v1beta1/namespaces/default/placements"
        events = []
        async with (
            aiohttp.ClientSession() as http,
            http.get(
                url,
                params={"watch": "1", "resourceVersion": str(rv), "timeoutSeconds": "1"},
                headers={"Accept": KUBECTL_ACCEPT},
            ) as response,
        ):
            async for line in response.content:
                events.append(json.loads(line))
        assert [(e["type"], e["object"]["kind"]) for e in events] == [
            ("ADDED", "Table"),
            ("MODIFIED", "Table"),
        ]
        assert events[0]["object"]["columnDefinitions"][0]["name"] == "Name"
        assert events[1]["object"]["columnDefinitions"] == []
        assert events[1]["object"]["rows"][0]["cells"] == [
            "web",
            "True",
            "AllDecisionsScheduled",
            3,
        ]


async def test_kubectl_get_shows_the_placement_columns(tmp_path: Path) -> None:
    async with hub(namespaces=["apps"]) as (server, gw):
        await gw.create(placement("web", "apps"))
        await gw.create(placement("db"))
        await gw.patch_status(Placement, "web", SATISFIED, "apps")
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(config, "get", "placements", "-n", "apps")
        assert code == 0, err
        assert lines(out) == [
            ["NAME", "SUCCEEDED", "REASON", "SELECTEDCLUSTERS"],
            ["web", "True", "AllDecisionsScheduled", "3"],
        ]
        code, out, err = await kubectl(config, "get", "placements", "-A")
        assert code == 0, err
        assert lines(out)[0] == ["NAMESPACE", "NAME", "SUCCEEDED", "REASON", "SELECTEDCLUSTERS"]
        assert [row[:2] for row in lines(out)[1:]] == [["apps", "web"], ["default", "db"]]


async def test_kubectl_get_managedclusters_shows_ocms_columns_with_ages(tmp_path: Path) -> None:
    async with hub() as (server, gw):
        await gw.create(cluster("c1"))
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(config, "get", "managedclusters")
        assert code == 0, err
        header, row = lines(out)
        assert header == ["NAME", "HUB ACCEPTED", "JOINED", "AVAILABLE", "AGE"]
        assert row[:2] == ["c1", "true"]
        assert re.fullmatch(r"\d+s", row[-1])  # an age, as kubectl shows one


async def test_wide_output_adds_the_columns_of_priority_above_zero(tmp_path: Path) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    for path in CRD_DIR.glob("*.yaml"):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if doc.get("kind") == "CustomResourceDefinition" and doc["spec"]["names"]["kind"] == (
            "Placement"
        ):
            for version in doc["spec"]["versions"]:
                version["additionalPrinterColumns"].append(
                    {
                        "name": "Sets",
                        "type": "string",
                        "jsonPath": ".spec.clusterSets",
                        "priority": 1,
                    }
                )
        (crds / path.name).write_text(yaml.safe_dump(doc), encoding="utf-8")
    async with hub(crd_dir=crds) as (server, gw):
        await gw.create(placement("web", spec={"clusterSets": ["prod", "dev"]}))
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(config, "get", "placements")
        assert code == 0, err
        assert lines(out)[0] == ["NAME", "SUCCEEDED", "REASON", "SELECTEDCLUSTERS"]
        code, out, err = await kubectl(config, "get", "placements", "-o", "wide")
        assert code == 0, err
        assert lines(out)[0][-1] == "SETS"
        assert lines(out)[1][-1] == '["prod","dev"]'


async def test_kubectl_get_pods_and_namespaces_show_the_core_columns(tmp_path: Path) -> None:
    async with hub() as (server, gw):
        await gw.create(pod("p1"))
        await gw.bind("default", "p1", "node-a")
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(config, "get", "pods")
        assert code == 0, err
        assert lines(out)[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert lines(out)[1][:4] == ["p1", "0/1", "Pending", "0"]
        code, out, err = await kubectl(config, "get", "pods", "-o", "wide")
        assert code == 0, err
        assert lines(out)[0][5:7] == ["IP", "NODE"]
        assert lines(out)[1][5:7] == ["<none>", "node-a"]
        code, out, err = await kubectl(config, "get", "namespaces")
        assert code == 0, err
        assert [row[:2] for row in lines(out)] == [
            ["NAME", "STATUS"],
            *(
                [name, "Active"]
                for name in ("default", "kube-node-lease", "kube-public", "kube-system")
            ),
        ]


# --- Events where operators look --------------------------------------------------------------


async def test_kubectl_get_events_lists_what_the_recorder_wrote(tmp_path: Path) -> None:
    async with hub() as (server, gw):
        web = await gw.create(placement("web"))
        recorder = EventRecorder(gw, controller="placement-controller", instance="hub-1")
        recorder.record(web, None, "Normal", "DecisionCreate", "DecisionCreated", "made web-1")
        await recorder.flush()
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(config, "get", "events")
        assert code == 0, err
        header, row = lines(out)
        assert header == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
        assert row[1:] == ["Normal", "DecisionCreate", "placement/web", "made web-1"]
        code, out, err = await kubectl(config, "get", "events", "-o", "wide")
        assert code == 0, err
        assert "placement-controller, hub-1" in lines(out)[1]


async def test_kubectl_describe_placement_shows_the_controllers_events(tmp_path: Path) -> None:
    async with controller_hub(namespaces=["apps"]) as h:
        for obj in (
            fleet_cluster("c1", labels={"env": "prod"}, cluster_set="prod"),
            fleet_cluster("c2", labels={"env": "prod"}, cluster_set="prod"),
            cluster_set("prod"),
            binding("apps", "prod"),
            placement_of("apps", "web"),
            placement_of("apps", "other"),
        ):
            await h.gateway.create(obj)
        manager = await h.manager()
        await manager.wait_idle()

        async def recorded() -> bool:
            selector = "involvedObject.name=web,involvedObject.kind=Placement"
            return bool((await h.gateway.list(CoreEvent, "apps", field_selector=selector)).items)

        async with asyncio.timeout(WAIT):
            while not await recorded():
                await asyncio.sleep(0.02)
        config = h.server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(config, "describe", "placement", "web", "-n", "apps")
        assert code == 0, err
        events = out[out.index("Events:") :].splitlines()
        assert lines("\n".join(events[1:2]))[0] == ["Type", "Reason", "Age", "From", "Message"]
        rows = [lines(line)[0] for line in events[3:]]
        assert rows and all(row[3] == "placement-controller" for row in rows)
        assert any("web" in row[-1] for row in rows)
        assert not any("other" in row[-1] for row in rows)  # only the described object's


async def test_a_snapshot_without_namespaces_loads_with_them_created(tmp_path: Path) -> None:
    docs = [placement("web", "apps").to_wire(), placement("db", "ops").to_wire()]
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    async with EmbeddedApiServer(snapshot=tmp_path) as server:
        assert server.store.has_namespace("apps") and server.store.has_namespace("ops")
    async with hub() as (_, gw):
        await ensure_namespaces(gw, ["apps", "apps"])  # the fixture's own helper is idempotent
        assert (await gw.create(placement("web", "apps"))).key == "apps/web"
