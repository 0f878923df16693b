"""Everything we ship installs on a real kube-apiserver with kubectl, as a user installs it:
the CRDs, `config/default`, every add-on overlay and every sample file, each first with
`kubectl apply --dry-run=server` (the server validates, nothing is stored) and then for real,
and the samples' `status` through the status subresource as their READMEs say.

The tier's control plane is shared: what a file puts there that another test's controller or
scheduler would see (sample Nodes and pods, the spot webhook's registration, the design
samples' clusters) is deleted once checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
SAMPLES = CONFIG / "samples"
THIRD_PARTY_CRDS = Path(__file__).resolve().parent / "data" / "third-party-crds.yaml"

# kubectl apply -k of each overlay, in the order the docs give them.
OVERLAYS = [
    "crds",
    "default",
    "addons/pod-scheduler",
    "addons/spot-webhook/base",
    "addons/spot-webhook/cert-manager",
    "addons/ocm",
]
SAMPLE_FILES = sorted(SAMPLES.rglob("*.yaml"))
# The folders whose files are applied together, Namespaces first (`kubectl apply -f DIR`).
SAMPLE_FOLDERS = ["hub", "pods"]


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def rendered(plane: ControlPlane, overlay: str) -> list[dict[str, Any]]:
    return documents(plane.kubectl("kustomize", str(CONFIG / overlay)).stdout)


def as_yaml(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs)


# What a server-side dry-run of other objects needs to exist for real: their Namespace, the
# PriorityClass a Pod names (the Priority admission plugin refuses a Pod naming none).
PREREQUISITES = {"Namespace", "PriorityClass"}


_created: set[tuple[str, str]] = set()


def create_prerequisites(plane: ControlPlane, docs: list[dict[str, Any]]) -> None:
    """Apply the Namespaces and PriorityClasses among `docs` for real, those this module has
    not applied yet (applying an existing object again costs kubectl a second)."""
    needed = [
        d
        for d in docs
        if d.get("kind") in PREREQUISITES and (d["kind"], d["metadata"]["name"]) not in _created
    ]
    if needed:
        plane.kubectl("apply", "-f", "-", input=as_yaml(needed))
        _created.update((d["kind"], d["metadata"]["name"]) for d in needed)


def dry_run_then_apply(plane: ControlPlane, docs: list[dict[str, Any]], label: str) -> str:
    create_prerequisites(plane, docs)
    dry = plane.kubectl("apply", "--dry-run=server", "-f", "-", input=as_yaml(docs), check=False)
    assert dry.returncode == 0, f"{label}: server-side dry-run refused: {dry.stderr}"
    assert "(server dry run)" in dry.stdout, dry.stdout
    done = plane.kubectl("apply", "-f", "-", input=as_yaml(docs), check=False)
    assert done.returncode == 0, f"{label}: apply refused: {done.stderr}"
    return done.stdout


def stored(plane: ControlPlane, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects of `docs` as the server stores them (`kubectl get -f`)."""
    got = plane.kubectl("get", "-f", "-", "-o", "json", input=as_yaml(docs))
    answer = json.loads(got.stdout)
    items: list[dict[str, Any]] = answer.get("items", [answer])
    return items


def delete(plane: ControlPlane, docs: list[dict[str, Any]], kinds: set[str]) -> None:
    """Delete the objects of `docs` of `kinds` (their Namespaces stay)."""
    gone = [d for d in docs if d.get("kind") in kinds]
    if gone:
        plane.kubectl(
            "delete", "--ignore-not-found", "--wait=false", "-f", "-", input=as_yaml(gone)
        )


# Kinds a sample or overlay holds that another test's scheduler, webhook or controller would
# act on in the shared control plane.
DISTURBING = {
    "Node",
    "Pod",
    "Deployment",
    "StatefulSet",
    "Job",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "MutatingWebhookConfiguration",
    "ManagedCluster",
    "Placement",
    "PodGroup",
    "ElasticQuota",
    # DRA (dra/): a driver's devices and the claims on them, which the schedulers and
    # kube-controller-manager's resourceclaim controller of other tests would see
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaimTemplate",
    "ResourceClaim",
}


def disturbing(folder: str) -> set[str]:
    """The kinds of a sample folder to delete once checked: the hub samples stay (the hub's
    e2e tests run the controller on them; applying them again changes nothing)."""
    return DISTURBING - {"Placement", "ManagedCluster"} if folder == "hub" else DISTURBING


def test_every_crd_is_established_with_its_names(control_plane: ControlPlane) -> None:
    ours = documents(control_plane.kubectl("kustomize", str(CONFIG / "crds")).stdout)
    assert len(ours) == 8
    for crd in ours:
        got = json.loads(
            control_plane.kubectl("get", "crd", crd["metadata"]["name"], "-o", "json").stdout
        )
        conditions = {c["type"]: c["status"] for c in got["status"]["conditions"]}
        assert conditions["Established"] == "True", crd["metadata"]["name"]
        assert conditions["NamesAccepted"] == "True", crd["metadata"]["name"]
        assert got["status"]["acceptedNames"]["kind"] == crd["spec"]["names"]["kind"]


@pytest.mark.parametrize("overlay", OVERLAYS, ids=OVERLAYS)
def test_overlay_installs_with_kubectl_apply_k(
    controller_manager: ControlPlane, overlay: str
) -> None:
    plane = controller_manager
    if overlay.startswith(("addons/ocm", "addons/spot-webhook/cert-manager")):
        plane.kubectl("apply", "-f", str(THIRD_PARTY_CRDS))
        plane.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", "-f", str(THIRD_PARTY_CRDS)
        )
    docs = rendered(plane, overlay)
    assert docs, overlay
    out = dry_run_then_apply(plane, docs, overlay)
    assert out.count("\n") == len(docs), out
    for doc, got in zip(docs, stored(plane, docs), strict=True):
        assert (got["kind"], got["metadata"]["name"]) == (doc["kind"], doc["metadata"]["name"])
    # Re-applying the same manifests changes nothing (what `kubectl apply -k` in a pipeline does).
    again = plane.kubectl("apply", "-k", str(CONFIG / overlay)).stdout
    assert all(line.endswith(("unchanged", "configured")) for line in again.splitlines()), again
    delete(plane, docs, {"MutatingWebhookConfiguration", "Deployment"})


@pytest.mark.parametrize(
    "path", SAMPLE_FILES, ids=[str(p.relative_to(SAMPLES)) for p in SAMPLE_FILES]
)
def test_sample_file_installs_and_its_status_is_written_through_the_subresource(
    controller_manager: ControlPlane, path: Path
) -> None:
    plane = controller_manager
    folder = path.parent
    docs = documents(path.read_text())
    # the folder's Namespaces and PriorityClasses, which its README applies first
    for first in ("00-namespaces.yaml", "01-priorityclasses.yaml"):
        if (folder / first).exists() and folder / first != path:
            create_prerequisites(plane, documents((folder / first).read_text()))
    dry_run_then_apply(plane, docs, str(path.relative_to(ROOT)))
    with_status = [d for d in docs if d.get("status")]
    if with_status:
        # the samples' README: server-side apply of the files' status through /status
        plane.kubectl(
            "apply",
            "--server-side",
            "--subresource=status",
            "-f",
            "-",
            input=as_yaml(with_status),
        )
        for doc, got in zip(with_status, stored(plane, with_status), strict=True):
            assert_status_stored(doc, got)
    delete(
        plane,
        docs,
        DISTURBING - {"Placement", "ManagedCluster"} if folder.name == "hub" else DISTURBING,
    )


def assert_status_stored(doc: dict[str, Any], got: dict[str, Any]) -> None:
    """Every field the file gives in `status` is what the server stores (quantities may be
    written back in canonical form, so those compare by their text when both are strings)."""
    name = f"{doc['kind']} {doc['metadata']['name']}"
    for key, value in doc["status"].items():
        assert key in got.get("status", {}), f"{name}: status.{key} not stored"
        if key == "conditions":
            want = {c["type"]: c["status"] for c in value}
            have = {c["type"]: c["status"] for c in got["status"][key]}
            assert have == want, name
        elif key in ("allocatable", "capacity"):
            assert set(got["status"][key]) == set(value), name


def readme_patch(plane: ControlPlane, name: str) -> None:
    """config/samples/hub/README.md's one-liner, verbatim but for the name and the value."""
    plane.kubectl(
        "patch",
        "managedcluster",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"allocatable":{"cpu":"7","memory":"32Gi"}}}',
    )


def test_the_samples_readme_patch_one_liner_writes_status(control_plane: ControlPlane) -> None:
    plane = control_plane
    docs = documents((SAMPLES / "hub" / "fleet.yaml").read_text())[:1]
    # a copy of the README's cluster under a name of this test's, so that the samples' own
    # status stays as their server-side apply wrote it (a second field manager would make
    # the next `apply --server-side --subresource=status` of the samples a conflict)
    name = unique_name(docs[0]["metadata"]["name"])
    docs[0]["metadata"]["name"] = name
    docs[0]["metadata"].get("labels", {}).pop("cluster.open-cluster-management.io/clusterset", None)
    plane.kubectl("apply", "-f", "-", input=as_yaml(docs))
    readme_patch(plane, name)
    got = json.loads(plane.kubectl("get", "managedcluster", name, "-o", "json").stdout)
    assert got["status"]["allocatable"] == {"cpu": "7", "memory": "32Gi"}
    # the README: the files' status applied again is a conflict, --force-conflicts takes it back
    ssa = ("apply", "--server-side", "--subresource=status", "-f", "-")
    refused = plane.kubectl(*ssa, input=as_yaml(docs), check=False)
    assert refused.returncode != 0 and "conflict" in refused.stderr.lower(), refused.stderr
    plane.kubectl(*ssa, "--force-conflicts", input=as_yaml(docs))
    got = json.loads(plane.kubectl("get", "managedcluster", name, "-o", "json").stdout)
    assert got["status"]["allocatable"] == docs[0]["status"]["allocatable"]
    readme_patch(plane, name)
    # a plain apply of the file writes no status: the subresource is the only way in
    plane.kubectl("apply", "-f", "-", input=as_yaml(docs))
    got = json.loads(plane.kubectl("get", "managedcluster", name, "-o", "json").stdout)
    assert got["status"]["allocatable"]["cpu"] == "7"
    plane.kubectl("delete", "managedcluster", name)


@pytest.mark.parametrize("folder", SAMPLE_FOLDERS)
def test_a_sample_folder_applies_as_one_kubectl_apply_f(
    controller_manager: ControlPlane, folder: str
) -> None:
    """`kubectl apply -f config/samples/<folder>` (its files in name order, Namespaces first)
    works as the READMEs promise."""
    plane = controller_manager
    done = plane.kubectl("apply", "-f", str(SAMPLES / folder), check=False)
    assert done.returncode == 0, done.stderr
    docs = [d for p in sorted((SAMPLES / folder).glob("*.yaml")) for d in documents(p.read_text())]
    assert done.stdout.count("\n") == len(docs)
    delete(
        plane, docs, DISTURBING - {"Placement", "ManagedCluster"} if folder == "hub" else DISTURBING
    )
