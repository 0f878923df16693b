"""The paths, content types and bodies the differential script (`tests.e2e.differential_script`)
is written with. `{ns}` is the script's namespace, `{name}` the prefix of its cluster-scoped names.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.differential import Memory

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"

CM = "/api/v1/namespaces/{ns}/configmaps"
OCM = "/apis/cluster.open-cluster-management.io"
PLACEMENTS = OCM + "/v1beta1/namespaces/{ns}/placements"
DECISIONS = OCM + "/v1beta1/namespaces/{ns}/placementdecisions"
CLUSTERS = OCM + "/v1/managedclusters"
SCHED = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}"
PODGROUPS = SCHED + "/podgroups"
QUOTAS = SCHED + "/elasticquotas"
PODS = "/api/v1/namespaces/{ns}/pods"
NODES = "/api/v1/nodes"
LONG = "1" * 65  # a quantity of 65 characters: over the CRD's maxLength of 64


def configmap(name: str, data: dict[str, str], **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def placement(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "pl-a"},
        "spec": spec,
    }
    if status is not None:
        doc["status"] = status
    return doc


def stored_placement(memory: Memory, spec: dict[str, Any], status: dict[str, Any]) -> Any:
    doc = placement(spec, status)
    doc["metadata"]["resourceVersion"] = memory["pl"]
    return doc


def custom(group_version: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": group_version, "kind": kind, "metadata": {"name": name}, **fields}


def scheduling(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return custom("scheduling.x-k8s.io/v1alpha1", kind, name, spec=spec)


STATUS = {"numberOfSelectedClusters": 3}
SPEC = {"numberOfClusters": 2}

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
PRIORITY = "/apis/scheduling.k8s.io/v1/priorityclasses"
SETS = OCM + "/v1beta2/managedclustersets"
OCM_V1BETA2 = "cluster.open-cluster-management.io/v1beta2"
BINDINGS = OCM + "/v1beta2/namespaces/{ns}/managedclustersetbindings"
SCORES = OCM + "/v1alpha1/namespaces/{ns}/addonplacementscores"
# Cluster-scoped objects the script creates (the test deletes them from the shared plane).
CLUSTER_SCOPED: tuple[str, ...] = (
    *(f"{CLUSTERS}/{{name}}-mc", f"{NODES}/{{name}}-node", f"{PRIORITY}/{{name}}-pc"),
    *(f"{SETS}/{{name}}-set", f"{NODES}/Bad_Name", f"{SETS}/{{name}}-bad"),
    f"{PRIORITY}/{{name}}-high",
)
