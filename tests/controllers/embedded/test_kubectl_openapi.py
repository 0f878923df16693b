"""The real kubectl against the embedded server finds every OpenAPI document it asks for: apply
of a sample, then again (patching what exists, where kubectl looks up the strategic-merge
metadata and falls back to `/openapi/v2`), with no "failed to download openapi" and without
`--validate=false`; a kubectl that validates with the v2 document alone (before v1.29, when
installed beside the system's kubectl) applies too, and still sends `fieldValidation=Strict`
(the v2 document says the server takes it), so the server refuses an unknown field."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.controllers.embedded.hub import hub, kubectl

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "config" / "samples" / "hub" / "00-namespaces.yaml"
# -v=6 logs each response: `GET <url> 200 OK` (older kubectls) or `url="<url>" status="200 OK"`.
RESPONSE = re.compile(r'(?:GET |url=")(\S+?)"? (?:status=")?(\d{3})')
OLD_KUBECTL = Path("/usr/lib/google-cloud-sdk/bin/kubectl.1.27")  # v2-only validation
TYPO = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: typo, namespace: apps}
spec: {numberOfCluster: 2}
"""


async def old_kubectl(config: Path, *args: str, stdin: str = "") -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        str(OLD_KUBECTL),
        "--kubeconfig",
        str(config),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(60):
        out, err = await process.communicate(stdin.encode())
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


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


@pytest.mark.skipif(not OLD_KUBECTL.exists(), reason=f"no {OLD_KUBECTL} on this machine")
async def test_a_kubectl_that_validates_with_the_v2_document_applies_strictly(
    tmp_path: Path,
) -> None:
    async with hub() as (server, _):
        config = server.kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await old_kubectl(config, "apply", "-f", str(SAMPLE))
        assert code == 0 and "namespace/apps created" in out, err
        code, _, err = await old_kubectl(config, "apply", "-f", "-", "-v=6", stdin=TYPO)
        assert openapi_answers(err).get("v2") == "200", err
        assert code == 1 and "fieldValidation=Strict" in err
        assert 'strict decoding error: unknown field "spec.numberOfCluster"' in err
