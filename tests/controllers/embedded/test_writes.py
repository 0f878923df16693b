"""What a write asks beyond its body, answered as a real API server does: `fieldValidation`
(Strict rejects unknown fields, Warn sends `Warning` headers, Ignore prunes silently) and
`dryRun=All` (validated and answered, never stored, never seen by a watch), through raw HTTP,
the client and kubectl; and namespaces that must exist before what lives in them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from apis.placements import Placement
from controllers.kube.errors import NotFoundError
from tests.controllers.embedded.hub import WAIT, hub, kubectl, namespaces, placement

pytestmark = pytest.mark.asyncio

GROUP = "cluster.open-cluster-management.io"
PLACEMENTS = f"/apis/{GROUP}/v1beta1/namespaces/default/placements"
TYPO: dict[str, Any] = {
    "apiVersion": f"{GROUP}/v1beta1",
    "kind": "Placement",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"numberOfCluster": 2, "clusterSets": ["prod"]},
}
TYPO_YAML = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: web
  namespace: default
spec:
  numberOfCluster: 2
"""
GOOD_YAML = TYPO_YAML.replace("numberOfCluster:", "numberOfClusters:")


async def send(
    url: str, method: str, path: str, body: Any, content_type: str = "application/json"
) -> tuple[int, Any, list[str]]:
    """(status, decoded body, Warning headers) of one raw request."""
    headers = {"Content-Type": content_type}
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url + path, json=body, headers=headers) as response,
    ):
        return response.status, await response.json(), response.headers.getall("Warning", [])


# --- fieldValidation ----------------------------------------------------------------------------


async def test_strict_create_is_a_bad_request_naming_the_unknown_field() -> None:
    async with hub() as (server, gw):
        code, body, _ = await send(server.url, "POST", PLACEMENTS + "?fieldValidation=Strict", TYPO)
        assert (code, body["reason"]) == (400, "BadRequest")
        assert body["message"] == (
            'Placement in version "v1beta1" cannot be handled as a Placement: '
            'strict decoding error: unknown field "spec.numberOfCluster"'
        )
        assert (await gw.list(Placement)).items == []


async def test_warn_stores_the_object_pruned_and_says_so_in_a_warning_header() -> None:
    async with hub() as (server, gw):
        code, body, warnings = await send(server.url, "POST", PLACEMENTS, TYPO)  # Warn: default
        assert code == 201
        assert warnings == ['299 - "unknown field \\"spec.numberOfCluster\\""']
        assert body["spec"] == {"clusterSets": ["prod"]}
        assert (await gw.get(Placement, "web", "default")).spec.cluster_sets == ["prod"]


async def test_ignore_prunes_without_a_word() -> None:
    async with hub() as (server, _):
        query = "?fieldValidation=Ignore"
        code, body, warnings = await send(server.url, "POST", PLACEMENTS + query, TYPO)
        assert (code, warnings, body["spec"]) == (201, [], {"clusterSets": ["prod"]})


async def test_a_strict_patch_adding_an_unknown_field_is_invalid_and_changes_nothing() -> None:
    async with hub() as (server, gw):
        await gw.create(placement("web"))
        rv = server.store.rv
        patch = {"spec": {"numberOfCluster": 3}}
        code, body, _ = await send(
            server.url,
            "PATCH",
            PLACEMENTS + "/web?fieldValidation=Strict",
            patch,
            "application/merge-patch+json",
        )
        assert (code, body["reason"]) == (422, "Invalid")
        assert body["message"].startswith(f'Placement.{GROUP} "web" is invalid: patch: ')
        assert body["message"].endswith(
            'strict decoding error: unknown field "spec.numberOfCluster"'
        )
        assert body["details"]["causes"][0]["field"] == "patch"
        assert server.store.rv == rv


async def test_an_unknown_field_validation_directive_is_a_bad_request() -> None:
    async with hub() as (server, _):
        code, body, _ = await send(server.url, "POST", PLACEMENTS + "?fieldValidation=Loud", TYPO)
        assert code == 400 and "fieldValidation" in body["message"]


async def test_kubectl_rejects_an_unknown_field_by_default_and_warns_when_asked(
    tmp_path: Path,
) -> None:
    async with hub() as (server, gw):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        for verb in ("create", "apply"):
            code, _, err = await kubectl(config, verb, "-f", "-", stdin=TYPO_YAML)
            assert code == 1
            assert 'strict decoding error: unknown field "spec.numberOfCluster"' in err
        assert (await gw.list(Placement)).items == []

        code, out, err = await kubectl(
            config, "apply", "--validate=warn", "-f", "-", stdin=TYPO_YAML
        )
        assert code == 0 and "created" in out
        assert 'Warning: unknown field "spec.numberOfCluster"' in err
        # The next apply is a PATCH: strict again, and a 422 this time.
        code, _, err = await kubectl(config, "apply", "-f", "-", stdin=TYPO_YAML)
        assert code == 1 and 'unknown field "spec.numberOfCluster"' in err


# --- dryRun -------------------------------------------------------------------------------------


async def test_dry_run_writes_answer_as_if_written_and_store_nothing_nor_tell_watches() -> None:
    async with hub() as (server, gw):
        await gw.create(placement("web"))
        events: list[tuple[str, str]] = []
        rv = server.store.rv

        async def watch() -> None:
            async for event in gw.watch(Placement, str(rv), "default", bookmarks=False):
                assert event.object is not None
                events.append((event.type, event.object.name))
                return

        watching = asyncio.create_task(watch())
        await server.wait_for_watchers(1)
        dry = "?dryRun=All"
        created = dict(TYPO, metadata={"name": "new", "namespace": "default"}, spec={})
        code, body, _ = await send(server.url, "POST", PLACEMENTS + dry, created)
        assert code == 201 and body["metadata"]["uid"] and "resourceVersion" not in body["metadata"]
        merge = "application/merge-patch+json"
        patch = {"spec": {"numberOfClusters": 2}}
        code, body, _ = await send(server.url, "PATCH", PLACEMENTS + "/web" + dry, patch, merge)
        assert (code, body["spec"]["numberOfClusters"], body["metadata"]["generation"]) == (
            200,
            2,
            2,
        )
        current = (await gw.get(Placement, "web", "default")).to_wire()
        current["spec"]["numberOfClusters"] = 5
        code, body, _ = await send(server.url, "PUT", PLACEMENTS + "/web" + dry, current)
        assert (code, body["spec"]["numberOfClusters"]) == (200, 5)
        code, body, _ = await send(server.url, "DELETE", PLACEMENTS + "/web" + dry, None)
        assert code == 200
        code, body, _ = await send(server.url, "DELETE", PLACEMENTS + dry, None)
        assert code == 200
        assert server.store.rv == rv
        stored = await gw.get(Placement, "web", "default")
        assert stored.spec.number_of_clusters is None and stored.metadata.generation == 1
        with pytest.raises(NotFoundError):
            await gw.get(Placement, "new", "default")

        await gw.merge_patch(Placement, "web", {"metadata": {"labels": {"real": "yes"}}}, "default")
        await asyncio.wait_for(watching, WAIT)
        assert events == [("MODIFIED", "web")]  # the first event is the real write


async def test_dry_run_still_validates() -> None:
    async with hub() as (server, gw):
        bad = dict(TYPO, spec={"numberOfClusters": -1})
        code, body, _ = await send(server.url, "POST", PLACEMENTS + "?dryRun=All", bad)
        assert (code, body["reason"]) == (422, "Invalid")
        code, body, _ = await send(server.url, "POST", PLACEMENTS + "?dryRun=Some", TYPO)
        assert code == 400 and "dryRun" in body["message"]
        assert (await gw.list(Placement)).items == []


async def test_kubectl_server_dry_run_and_diff_change_nothing(tmp_path: Path) -> None:
    async with hub() as (server, gw):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(
            config, "apply", "--dry-run=server", "-f", "-", stdin=GOOD_YAML
        )
        assert (code, err) == (0, "")
        assert out.strip().endswith("created (server dry run)")
        assert (await gw.list(Placement)).items == []

        code, out, err = await kubectl(config, "diff", "-f", "-", stdin=GOOD_YAML)
        assert code == 1, err  # 1: there are differences
        assert "+  name: web" in out and "+  numberOfClusters: 2" in out
        assert (await gw.list(Placement)).items == []

        code, _, err = await kubectl(config, "apply", "-f", "-", stdin=GOOD_YAML)
        assert code == 0, err
        rv = server.store.rv
        changed = GOOD_YAML.replace("numberOfClusters: 2", "numberOfClusters: 4")
        code, out, err = await kubectl(
            config, "diff", "-f", "-", stdin=changed, env={"KUBECTL_EXTERNAL_DIFF": "diff -u"}
        )
        assert code == 1, err
        assert "-  numberOfClusters: 2" in out and "+  numberOfClusters: 4" in out
        code, out, err = await kubectl(
            config, "apply", "--dry-run=server", "-f", "-", stdin=changed
        )
        assert code == 0 and "configured (server dry run)" in out, err
        code, out, err = await kubectl(
            config, "delete", "--dry-run=server", "placement", "web", "-n", "default"
        )
        assert code == 0 and "(server dry run)" in out, err
        assert server.store.rv == rv
        assert (await gw.get(Placement, "web", "default")).spec.number_of_clusters == 2


# --- namespaces ---------------------------------------------------------------------------------


async def test_a_namespaced_object_needs_its_namespace_first() -> None:
    async with hub() as (_, gw):
        with pytest.raises(NotFoundError) as err:
            await gw.create(placement("web", "apps"))
        assert str(err.value).endswith('namespaces "apps" not found')
        await namespaces(gw, "apps")
        assert (await gw.create(placement("web", "apps"))).key == "apps/web"
        # A new cluster's own namespaces are there from the start.
        assert (await gw.create(placement("web", "kube-system"))).key == "kube-system/web"


async def test_kubectl_reports_a_missing_namespace_as_a_real_server_does(tmp_path: Path) -> None:
    async with hub() as (server, _):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        elsewhere = GOOD_YAML.replace("namespace: default", "namespace: apps")
        code, _, err = await kubectl(config, "create", "-f", "-", stdin=elsewhere)
        assert code == 1
        assert err.startswith("Error from server (NotFound)")
        assert 'namespaces "apps" not found' in err
        namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n---\n"
        code, out, err = await kubectl(config, "apply", "-f", "-", stdin=namespace + elsewhere)
        assert code == 0, err
        assert "namespace/apps created" in out and "placement" in out
