"""The resources the embedded API server serves, and its discovery documents.

The custom kinds come from the CRDs in `config/crds` (their names, scope, schema, status
subresource); the built-in ones (Namespace, Pod, Node, ConfigMap, Event, Lease, events.k8s.io Event,
PriorityClass, PersistentVolume, PersistentVolumeClaim, storage.k8s.io StorageClass, CSIDriver,
CSIStorageCapacity, apps/v1
Deployment, ReplicaSet, StatefulSet, batch/v1 Job, v1 Service, ReplicationController, policy/v1
PodDisruptionBudget, resource.k8s.io/v1 DeviceClass, ResourceClaim, ResourceClaimTemplate,
ResourceSlice) from the models' class data. The workloads are stored only: no controller
creates their pods. Each resource is paired with the `apis` model that validates its objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from apis.admissionregistration import MutatingWebhookConfiguration
from apis.core import ConfigMap, CoreEvent, Event, Lease, Namespace, Node, Pod
from apis.crdcost import crd_refusals
from apis.csinode import CSINode
from apis.fielderrors import aggregate
from apis.meta import KubeObject
from apis.policy import PodDisruptionBudget
from apis.registry import KINDS
from apis.resource import RESOURCE_KINDS
from apis.scheduling import PriorityClass
from apis.services import Service
from apis.storage import (
    CSIDriver,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from apis.volumeattachment import VolumeAttachment
from apis.workloads import WORKLOAD_MODELS
from controllers.cli.crds import CRD_DIR

__all__ = [
    "CORE_KINDS",
    "SERVER_VERSION",
    "CrdRefusedError",
    "Resource",
    "api_group_list",
    "api_resource_list",
    "load_resources",
]

CORE_KINDS: tuple[type[KubeObject], ...] = (
    *(Namespace, Pod, Node, ConfigMap, CoreEvent, Event, Lease, PriorityClass),
    *(PersistentVolume, PersistentVolumeClaim, StorageClass, CSIDriver, CSIStorageCapacity),
    *WORKLOAD_MODELS,
    Service,
    PodDisruptionBudget,
    CSINode,
    VolumeAttachment,
    MutatingWebhookConfiguration,
    *RESOURCE_KINDS,
)
# The built-in kinds kube-apiserver keeps no metadata.generation for (their strategies never set
# it); every other kind, custom ones included, starts at 1 and counts changes of its spec.
_NO_GENERATION = frozenset(
    {
        *(("", k) for k in ("ConfigMap", "Namespace", "Node", "Event")),
        *(("", k) for k in ("PersistentVolume", "PersistentVolumeClaim")),
        ("", "Service"),
        ("coordination.k8s.io", "Lease"),
        ("events.k8s.io", "Event"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIStorageCapacity"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "VolumeAttachment"),
        # a claim's spec is immutable and a template's copied as it is: neither counts changes
        ("resource.k8s.io", "ResourceClaim"),
        ("resource.k8s.io", "ResourceClaimTemplate"),
    }
)
# The built-in kinds whose DELETE answers the deleted object (kube's ReturnDeletedObject);
# the others, and custom kinds, answer a Status of Success.
_DELETE_ANSWERS_OBJECT = frozenset(
    {("", "Pod"), ("", "Namespace"), ("", "PersistentVolume"), ("", "PersistentVolumeClaim")}
    | {("storage.k8s.io", "StorageClass")}
    | {("resource.k8s.io", cls.KIND) for cls in RESOURCE_KINDS}
)
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SERVER_VERSION = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0+ocm-embedded",
    "gitCommit": "",
    "gitTreeState": "clean",
    "buildDate": "2026-11-22T00:00:00Z",
    "goVersion": "",
    "compiler": "python",
    "platform": "linux/amd64",
}


@dataclass(frozen=True, eq=False)
class Resource:
    """One served resource: where it lives in the API and how its objects are checked."""

    model: type[KubeObject]
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...]
    has_status: bool
    schema: dict[str, Any] | None = field(default=None, repr=False)
    # The CRD's additionalPrinterColumns (name, type, jsonPath, priority, ...), for Tables.
    columns: tuple[dict[str, Any], ...] = field(default=(), repr=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def builtin(self) -> bool:
        """A kind kube-apiserver serves itself (not from a CRD): its list items carry no
        apiVersion and kind."""
        return self.schema is None

    @property
    def generation(self) -> bool:
        """Whether its objects have a metadata.generation."""
        return (self.group, self.kind) not in _NO_GENERATION

    @property
    def delete_answers_object(self) -> bool:
        """Whether a DELETE that removes an object answers with it (else with a Status)."""
        return (self.group, self.kind) in _DELETE_ANSWERS_OBJECT

    def entry(self) -> dict[str, Any]:
        """Its APIResource in a discovery APIResourceList."""
        doc: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": VERBS,
        }
        if self.short_names:
            doc["shortNames"] = list(self.short_names)
        return doc


def _from_model(cls: type[KubeObject]) -> Resource:
    return Resource(
        cls,
        cls.GROUP,
        cls.VERSION,
        cls.KIND,
        cls.PLURAL,
        cls.KIND.lower(),
        cls.NAMESPACED,
        cls.SHORT_NAMES,
        cls.HAS_STATUS,
    )


class CrdRefusedError(ValueError):
    """A CRD kube-apiserver would refuse (`apis.crdcost`), with its message."""


def _from_crd(crd: dict[str, Any]) -> list[Resource]:
    refusals = crd_refusals(crd)
    if refusals:
        name = (crd.get("metadata") or {}).get("name", "")
        raise CrdRefusedError(
            f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: '
            + (aggregate(refusals) or "")
        )
    spec = crd["spec"]
    names = spec["names"]
    out = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        api_version = f"{spec['group']}/{version['name']}"
        model = KINDS.get((api_version, names["kind"]))
        if model is None:
            continue  # a CRD of a kind this project has no model for is not served
        out.append(
            Resource(
                model,
                spec["group"],
                version["name"],
                names["kind"],
                names["plural"],
                names.get("singular", names["kind"].lower()),
                spec.get("scope") == "Namespaced",
                tuple(names.get("shortNames") or ()),
                "status" in (version.get("subresources") or {}),
                (version.get("schema") or {}).get("openAPIV3Schema"),
                tuple(version.get("additionalPrinterColumns") or ()),
            )
        )
    return out


def load_resources(crd_dir: Path = CRD_DIR) -> list[Resource]:
    """The core resources plus those of every CRD file in `crd_dir`; CrdRefusedError for a
    CRD kube-apiserver refuses (metadata's schema beyond its type, a rule over its cost
    budget)."""
    resources = [_from_model(cls) for cls in CORE_KINDS]
    for path in sorted(crd_dir.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                resources.extend(_from_crd(doc))
    return resources


def api_resource_list(group_version: str, resources: list[Resource]) -> dict[str, Any]:
    """The APIResourceList of one group/version, with the subresources it serves."""
    entries = []
    for res in resources:
        entries.append(res.entry())
        if res.has_status:
            entries.append(
                {
                    "name": f"{res.plural}/status",
                    "singularName": "",
                    "namespaced": res.namespaced,
                    "kind": res.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if res.model is Pod:
            for sub, kind, group in (
                ("binding", "Binding", ""),
                ("eviction", "Eviction", "policy"),
            ):
                entries.append(
                    {
                        "name": f"pods/{sub}",
                        "singularName": "",
                        "namespaced": True,
                        "kind": kind,
                        "verbs": ["create"],
                        **({"group": group, "version": "v1"} if group else {}),
                    }
                )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }


def api_group_list(resources: list[Resource]) -> dict[str, Any]:
    """The APIGroupList of every named group (the core group is served under /api)."""
    versions: dict[str, list[str]] = {}
    for res in resources:
        if res.group and res.version not in versions.setdefault(res.group, []):
            versions[res.group].append(res.version)
    groups = []
    for group, served in versions.items():
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in served]
        groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
