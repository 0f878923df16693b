"""The embedded API server as a whole: discovery through the generated kubernetes_asyncio APIs,
Status bodies on errors, pagination, the snapshot folder, and the standalone entry point."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import aiohttp
import pytest
import yaml
from kubernetes_asyncio import client

from apis.cluster import ManagedCluster
from apis.placements import Placement
from controllers.embedded import EmbeddedApiServer
from tests.controllers.embedded.hub import WAIT, cluster, hub

pytestmark = pytest.mark.asyncio

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples" / "hub"


async def test_discovery_serves_core_kinds_and_every_crd() -> None:
    async with hub() as (server, _), client.ApiClient(client.Configuration(host=server.url)) as api:
        core = await client.CoreV1Api(api).get_api_resources()
        names = {r.name for r in core.resources}
        assert {
            "namespaces",
            "pods",
            "pods/status",
            "pods/binding",
            "pods/eviction",
            "nodes",
        } <= names
        assert {"events", "namespaces/status"} <= names
        groups = await client.ApisApi(api).get_api_versions()
        by_name = {g.name: [v.version for v in g.versions] for g in groups.groups}
        assert set(by_name["cluster.open-cluster-management.io"]) == {
            "v1",
            "v1beta1",
            "v1beta2",
            "v1alpha1",
        }
        assert {"scheduling.x-k8s.io", "coordination.k8s.io", "events.k8s.io"} <= set(by_name)
        version = await client.VersionApi(api).get_code()
        assert version.major == "1"


async def test_generated_clients_read_and_write_objects() -> None:
    async with hub() as (server, gw):
        await gw.create(cluster("c1", {"env": "prod"}))
        async with client.ApiClient(client.Configuration(host=server.url)) as api:
            custom = client.CustomObjectsApi(api)
            listed = await custom.list_cluster_custom_object(
                "cluster.open-cluster-management.io",
                "v1",
                "managedclusters",
                label_selector="env=prod",
            )
            assert [i["metadata"]["name"] for i in listed["items"]] == ["c1"]
            core = client.CoreV1Api(api)
            await core.create_namespace(
                client.V1Namespace(metadata=client.V1ObjectMeta(name="team"))
            )
            namespaces = await core.list_namespace()
            # A new cluster's own namespaces, and the one just created.
            assert [(n.metadata.name, n.status.phase) for n in namespaces.items] == [
                ("default", "Active"),
                ("kube-node-lease", "Active"),
                ("kube-public", "Active"),
                ("kube-system", "Active"),
                ("team", "Active"),
            ]


async def test_errors_are_answered_as_metav1_status() -> None:
    async with hub() as (server, _), aiohttp.ClientSession() as http:
        url = f"{server.url}/apis/cluster.open-cluster-management.io/v1/managedclusters/nope"
        async with http.get(url) as response:
            body = await response.json()
        assert response.status == 404
        assert body["kind"] == "Status" and body["status"] == "Failure"
        assert (body["code"], body["reason"]) == (404, "NotFound")
        assert (
            body["message"] == 'managedclusters.cluster.open-cluster-management.io "nope" not found'
        )


async def test_list_pages_with_limit_and_continue() -> None:
    async with hub() as (server, gw):
        for i in range(5):
            await gw.create(cluster(f"c{i}"))
        names: list[str] = []
        token = ""
        async with client.ApiClient(client.Configuration(host=server.url)) as api:
            custom = client.CustomObjectsApi(api)
            for _ in range(5):
                page = await custom.list_cluster_custom_object(
                    "cluster.open-cluster-management.io",
                    "v1",
                    "managedclusters",
                    limit=2,
                    _continue=token,
                )
                names += [i["metadata"]["name"] for i in page["items"]]
                token = page["metadata"].get("continue", "")
                if not token:
                    break
        assert names == ["c0", "c1", "c2", "c3", "c4"]


async def test_snapshot_folder_is_loaded_at_start_with_status() -> None:
    async with hub(snapshot=SAMPLES) as (_, gw):
        clusters = (await gw.list(ManagedCluster)).items
        assert len(clusters) == 20
        assert all(c.status is not None for c in clusters)
        assert len((await gw.list(Placement)).items) > 0


async def test_standalone_server_prints_a_working_kubeconfig(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controllers.embedded",
        "--kubeconfig",
        str(config),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(WAIT * 2):
            first = (await process.stdout.readline()).decode()
            second = (await process.stdout.readline()).decode()
        assert first.startswith("embedded API server listening on http://127.0.0.1:")
        assert second.strip() == f"export KUBECONFIG={config}"
        server = yaml.safe_load(config.read_text())["clusters"][0]["cluster"]["server"]
        async with aiohttp.ClientSession() as http, http.get(f"{server}/version") as response:
            assert json.loads(await response.text())["major"] == "1"
    finally:
        process.terminate()
        async with asyncio.timeout(WAIT):
            assert await process.wait() == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_standalone_server_removes_the_folder_of_its_kubeconfig_at_exit(
    sig: signal.Signals,
) -> None:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "controllers.embedded"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(60):  # a guard only: start-up on a busy machine
            while not (line := (await process.stdout.readline()).decode()).startswith("export"):
                assert line, "ended before printing its kubeconfig"
        config = Path(line.strip().removeprefix("export KUBECONFIG="))
        assert config.is_file()
        process.send_signal(sig)
        async with asyncio.timeout(60):
            _, stderr = await process.communicate()
        assert process.returncode == 0, stderr
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert not config.parent.exists()


async def test_port_zero_picks_a_free_port_and_two_servers_coexist() -> None:
    async with EmbeddedApiServer() as one, EmbeddedApiServer() as two:
        assert one.port != 0 and two.port != 0 and one.port != two.port
