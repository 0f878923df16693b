"""The real kubectl against the embedded server finds every OpenAPI document it asks for: apply
of a sample, then again (patching what exists, where kubectl looks up the strategic-merge
metadata and falls back to `/openapi/v2`), with no "failed to download openapi" and without
`--validate=false`; the v2 document holds what a kubectl that validates with it alone (before
v1.29) needs to apply and still send `fieldValidation=Strict`."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest

from controllers.embedded.openapi_v2 import PROTOBUF
from tests.controllers.embedded.hub import hub, kubectl

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "config" / "samples" / "hub" / "00-namespaces.yaml"
# -v=6 logs each response: `GET <url> 200 OK` (older kubectls) or `url="<url>" status="200 OK"`.
RESPONSE = re.compile(r'(?:GET |url=")(\S+?)"? (?:status=")?(\d{3})')
JSON = {"Accept": "application/json"}
PROTO = {"Accept": PROTOBUF}


def openapi_answers(log: str) -> dict[str, str]:
    """Each /openapi/ URL kubectl requested and the status it got."""
    return {
        url.split("?")[0].split("/openapi/", 1)[1]: status
        for url, status in RESPONSE.findall(log)
        if "/openapi/" in url
    }


async def test_kubectl_apply_finds_every_openapi_document_it_asks_for(tmp_path: Path) -> None:
    async with hub() as (server, _):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(config, "apply", "-f", str(SAMPLE))
        assert code == 0 and "openapi" not in err, err
        assert "namespace/apps created" in out
        code, out, err = await kubectl(config, "apply", "-f", str(SAMPLE), "-v=6")
        assert code == 0, err
        answers = openapi_answers(err)
        assert "v3" in answers and "v3/api/v1" in answers, err
        assert "v2" in answers  # the strategic-merge lookup of an existing core object
        assert set(answers.values()) == {"200"}, answers


async def test_the_v2_document_says_every_kind_takes_field_validation() -> None:
    """What a kubectl before v1.29 reads in it (checked by hand with kubectl v1.27 and v1.28:
    it applies the samples and still sends `fieldValidation=Strict`): a PATCH operation per
    served kind, tagged with its group/version/kind, taking `fieldValidation`; the protobuf
    kubectl asks for carries the same paths."""
    async with hub() as (server, _), aiohttp.ClientSession() as http:
        async with http.get(server.url + "/openapi/v2", headers=JSON) as resp:
            assert resp.status == 200
            document = await resp.json()
        async with http.get(server.url + "/openapi/v2", headers=PROTO) as resp:
            assert resp.status == 200
            assert resp.content_type == PROTOBUF
            wire = await resp.read()
        async with http.get(server.url + "/apis/cluster.open-cluster-management.io/v1beta1") as r:
            placements = [x for x in (await r.json())["resources"] if x["kind"] == "Placement"]
    assert document["swagger"] == "2.0"
    kinds = {}
    for path, operations in document["paths"].items():
        patch = operations["patch"]
        assert {"name": "fieldValidation", "in": "query", "type": "string"} in patch[
            "parameters"
        ], path
        kinds[patch["x-kubernetes-group-version-kind"]["kind"]] = path
        assert path.encode() in wire, path
    assert placements and kinds["Placement"] == (
        "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/{namespace}/placements/{name}"
    )
    assert {"Pod", "Node", "ManagedCluster", "PodGroup", "ConfigMap"} <= set(kinds)
