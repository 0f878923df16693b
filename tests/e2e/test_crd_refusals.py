"""The embedded server refuses the CRDs kube-apiserver refuses, for the two rules the CRD
generator once broke (issue 42 item 2): metadata's schema beyond its type, and a CEL rule over
kube's cost budget. The ElasticQuota CRD as shipped and as it was before its quantities were
bounded (and metadata described), each renamed to a group of this test's own, goes to the real
apiserver with `kubectl apply --dry-run=server` and to the embedded server's CRD loader: the
verdicts and the messages agree."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.embedded import EmbeddedApiServer
from controllers.embedded.resources import CrdRefusedError
from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane

QUOTA = Path(__file__).resolve().parents[2] / "config/crds/scheduling.x-k8s.io_elasticquotas.yaml"


METADATA = (
    "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify "
    "anything other than name and generateName, but metadata is implicitly specified"
)
COST = (
    "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "
    "Forbidden: estimated rule cost exceeds budget by factor of 8.1x (try simplifying the "
    "rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings "
    "are declared)"
)


def renamed(group: str, *, metadata: bool, unbounded: bool) -> dict[str, Any]:
    crd: dict[str, Any] = copy.deepcopy(yaml.safe_load(QUOTA.read_text()))
    crd["spec"]["group"] = group
    crd["metadata"]["name"] = f"{crd['spec']['names']['plural']}.{group}"
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    if metadata:  # as the CRD generator wrote it before commit 636e337
        schema["properties"]["metadata"]["description"] = "Standard object's metadata"
    if unbounded:  # the quantities before commit 636e337
        for side in ("min", "max"):
            schema["properties"]["spec"]["properties"][side]["additionalProperties"].pop(
                "maxLength"
            )
    return crd


def embedded_verdict(crd: dict[str, Any]) -> str:
    """'' when the embedded server starts with the CRD among its CRDs, else its message."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "crd.yaml").write_text(yaml.safe_dump(crd))
        try:
            EmbeddedApiServer(crd_dir=Path(folder))  # loads the CRDs it serves
        except CrdRefusedError as exc:
            return str(exc)
    return ""


def kube_verdict(plane: ControlPlane, crd: dict[str, Any]) -> str:
    done = plane.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(crd), check=False
    )
    return "" if done.returncode == 0 else done.stderr.strip()


@pytest.mark.parametrize(
    ("metadata", "unbounded", "refusal"),
    [(True, True, METADATA), (False, True, COST), (False, False, "")],
    ids=["before-636e337", "unbounded-quantities", "as-shipped"],
)
def test_embedded_server_refuses_the_crds_kube_refuses(
    control_plane: ControlPlane, metadata: bool, unbounded: bool, refusal: str
) -> None:
    group = f"{unique_name('crdcost')}.example.com"
    crd = renamed(group, metadata=metadata, unbounded=unbounded)
    theirs, ours = kube_verdict(control_plane, crd), embedded_verdict(crd)
    name = crd["metadata"]["name"]
    if not refusal:
        assert (theirs, ours) == ("", "")
        return
    # kube refuses for the metadata first, without estimating the rule's cost; kubectl
    # prints the Status message after `The `
    assert theirs == f'The CustomResourceDefinition "{name}" is invalid: {refusal}'
    assert ours == f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: {refusal}'
