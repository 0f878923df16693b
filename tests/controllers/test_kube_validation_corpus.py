"""The corpus of tests/data/kube-validation (container ports, pod affinity, topology spread, node
affinity, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver,
CSIStorageCapacity, VolumeAttachment, PodDisruptionBudget, the resource.k8s.io kinds, a pod's
resourceClaims) refused at the three entry points with kube-apiserver v1.36's own words, as
recorded in kube-answers.yaml (the e2e tier checks that record against kube-apiserver):
`placement validate` and `placement scheduler simulate` print each cause as
`file: document N: Kind ns/name: field: message`, in kube's order and nothing else about the object;
the embedded API server answers 422 with the same causes; an object kube accepts is accepted by all
three."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from controllers.cli.common import EXIT_ERROR
from tests.controllers.cli.samples import run
from tests.controllers.embedded.hub import hub

DATA = Path(__file__).parents[1] / "data" / "kube-validation"
CORPUS = DATA / "corpus.yaml"
DOCS: list[dict[str, Any]] = list(yaml.safe_load_all(CORPUS.read_text(encoding="utf-8")))
ANSWERS: dict[str, list[str]] = yaml.safe_load((DATA / "kube-answers.yaml").read_text())
PATHS = {
    "Pod": "/api/v1/namespaces/default/pods",
    "PersistentVolumeClaim": "/api/v1/namespaces/default/persistentvolumeclaims",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
    "CSIStorageCapacity": "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
    "VolumeAttachment": "/apis/storage.k8s.io/v1/volumeattachments",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
}


def _object_id(doc: dict[str, Any]) -> str:
    meta = doc["metadata"]
    where = f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]
    return f"{doc['kind']} {where}"


def test_the_record_covers_the_corpus() -> None:
    assert [d["metadata"]["name"] for d in DOCS] == list(ANSWERS)
    assert sum(1 for lines in ANSWERS.values() if lines) >= 60  # refusals, not only passes
    assert {d["kind"] for d in DOCS} == set(PATHS)


@pytest.mark.parametrize("verb", [("validate",), ("scheduler", "simulate")])
def test_the_cli_reports_kubes_causes(
    verb: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *verb, "-f", str(CORPUS))
    assert code == EXIT_ERROR
    assert out == ""
    assert "Traceback" not in err
    for index, doc in enumerate(DOCS, start=1):
        where = f"{CORPUS}: document {index}: {_object_id(doc)}"
        reported = [line for line in err.splitlines() if line.startswith(where + ":")]
        expected = [f"{where}: {line}" for line in ANSWERS[doc["metadata"]["name"]]]
        assert reported == expected, doc["metadata"]["name"]


@pytest.mark.asyncio
async def test_the_embedded_server_answers_with_kubes_causes() -> None:
    async with hub() as (server, _), aiohttp.ClientSession() as http:
        for doc in DOCS:
            name = doc["metadata"]["name"]
            url = server.url + PATHS[doc["kind"]] + "?dryRun=All"
            async with http.post(url, json=doc) as resp:
                body = await resp.json()
            if not ANSWERS[name]:
                assert resp.status == 201, (name, body)
                continue
            assert resp.status == 422, name
            causes = [f"{c['field']}: {c['message']}" for c in body["details"]["causes"]]
            assert causes == ANSWERS[name], name
