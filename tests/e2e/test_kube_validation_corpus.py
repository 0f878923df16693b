"""kube-apiserver v1.36 still answers the corpus of tests/data/kube-validation as recorded in
kube-answers.yaml, the record the fast tests hold `placement validate`, `scheduler simulate` and the
embedded server to (container ports, pod affinity, topology spread, node affinity,
PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver, CSIStorageCapacity,
VolumeAttachment, PodDisruptionBudget, the resource.k8s.io kinds, a pod's resourceClaims): each
object goes to the real apiserver as a dry-run create, and its 422's causes (`field: message`, in
order) are compared with the record — and with `apis.kubevalidation`, the one function the three
entry points share."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from apis.kubevalidation import kube_problems
from tests.e2e.conftest import unique_name
from tests.e2e.controlplane import TOKEN, ControlPlane

DATA = Path(__file__).resolve().parents[1] / "data" / "kube-validation"
PLURALS = {
    "Pod": "pods",
    "PersistentVolumeClaim": "persistentvolumeclaims",
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


def _dry_run_causes(plane: ControlPlane, namespace: str, doc: dict[str, Any]) -> list[str]:
    plural = PLURALS[doc["kind"]]
    if not plural.startswith("/"):
        plural = f"/api/v1/namespaces/{namespace}/{plural}"
        doc = {**doc, "metadata": {**doc["metadata"], "namespace": namespace}}
    request = urllib.request.Request(
        f"{plane.url}{plural}?dryRun=All",
        data=json.dumps(doc).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30):
            return []
    except urllib.error.HTTPError as exc:
        status = json.loads(exc.read())
    assert status["code"] == 422, status
    return [f"{c['field']}: {c['message']}" for c in status["details"]["causes"]]


def test_kube_apiserver_answers_as_recorded(control_plane: ControlPlane) -> None:
    namespace = unique_name("kv")
    control_plane.kubectl("create", "namespace", namespace)
    # a pod's create needs its namespace's default ServiceAccount (admission); when
    # kube-controller-manager runs (another test started it) it may make it first
    made = control_plane.kubectl(
        "create", "serviceaccount", "default", "-n", namespace, check=False
    )
    assert made.returncode == 0 or "AlreadyExists" in made.stderr or "already exists" in made.stderr

    docs = list(yaml.safe_load_all((DATA / "corpus.yaml").read_text(encoding="utf-8")))
    recorded = yaml.safe_load((DATA / "kube-answers.yaml").read_text(encoding="utf-8"))
    differ = {}
    for doc in docs:
        name = doc["metadata"]["name"]
        theirs = _dry_run_causes(control_plane, namespace, doc)
        ours = [str(p) for p in kube_problems(doc)]
        if not theirs == recorded[name] == ours:
            differ[name] = {"kube-apiserver": theirs, "recorded": recorded[name], "ours": ours}
    assert not differ, yaml.safe_dump(differ, width=1000)
    print(f"\nkube validation corpus: {len(docs)} objects, all answered as recorded")
