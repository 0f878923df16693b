"""Which model reads which document: the kinds of this project by apiVersion and kind,
`parse_object`, which turns one decoded document into a typed object or a clear error, and
`unknown_fields`, the strict check of a document's field names (kept apart from parsing, so that
objects read from a server keep the fields of a newer API)."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import ValidationError

from apis.addons import AddOnTemplate, ClusterManagementAddOn
from apis.admission import AdmissionReview
from apis.admissionregistration import MutatingWebhookConfiguration
from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.core import (
    Binding,
    ConfigMap,
    CoreEvent,
    Event,
    Eviction,
    Lease,
    Namespace,
    Node,
    Pod,
)
from apis.csinode import CSINode
from apis.errors import FieldProblem, ObjectValidationError, UnknownKindError, problems_from
from apis.fields import UnknownField, unknown_fields_of
from apis.meta import KubeObject
from apis.placements import Placement, PlacementDecision
from apis.policy import PodDisruptionBudget
from apis.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from apis.scheduling import ElasticQuota, PodGroup, PriorityClass
from apis.services import Service
from apis.storage import (
    CSIDriver,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from apis.volumeattachment import VolumeAttachment
from apis.workloads import Deployment, Job, ReplicaSet, ReplicationController, StatefulSet

__all__ = [
    "CUSTOM_KINDS",
    "KINDS",
    "UnknownField",
    "describe",
    "kind_for",
    "parse_as",
    "parse_object",
    "unknown_fields",
]

ObjT = TypeVar("ObjT", bound=KubeObject)

# The kinds served by our CRDs (config/crds), in a stable order.
CUSTOM_KINDS: tuple[type[KubeObject], ...] = (
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
    AddOnPlacementScore,
    PodGroup,
    ElasticQuota,
)
_BUILTIN_KINDS: tuple[type[KubeObject], ...] = (
    Namespace,
    ConfigMap,
    Pod,
    Node,
    Binding,
    Eviction,
    CoreEvent,
    Event,
    Lease,
    AdmissionReview,
    MutatingWebhookConfiguration,
    PriorityClass,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    CSIDriver,
    CSIStorageCapacity,
    CSINode,
    VolumeAttachment,
    Deployment,
    ReplicaSet,
    StatefulSet,
    Job,
    Service,
    ReplicationController,
    PodDisruptionBudget,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
# OCM's add-on objects: read and checked (`placement validate`), served by neither server.
_ADDON_KINDS: tuple[type[KubeObject], ...] = (AddOnTemplate, ClusterManagementAddOn)
KINDS: dict[tuple[str, str], type[KubeObject]] = {
    (cls.api_version_string(), cls.KIND): cls
    for cls in (*CUSTOM_KINDS, *_BUILTIN_KINDS, *_ADDON_KINDS)
}


def kind_for(api_version: str, kind: str) -> type[KubeObject]:
    """The model of `apiVersion`/`kind`; raises UnknownKindError."""
    try:
        return KINDS[(api_version, kind)]
    except KeyError:
        raise UnknownKindError(api_version, kind) from None


def describe(doc: Any, kind: str | None = None, namespaced: bool | None = None) -> str:
    """`Kind ns/name` (or `Kind name` for cluster-scoped kinds) for error messages."""
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name")
    name = name if isinstance(name, str) and name else "<unnamed>"
    namespace = meta.get("namespace")
    if kind is None:
        raw_kind = doc.get("kind") if isinstance(doc, dict) else None
        kind = raw_kind if isinstance(raw_kind, str) else "object"
    if namespaced is False or (namespaced is None and not namespace):
        return f"{kind} {name}"
    return f"{kind} {namespace if isinstance(namespace, str) and namespace else ''}/{name}"


def parse_as(cls: type[ObjT], doc: Any) -> ObjT:
    """Validate `doc` as `cls`; raises ObjectValidationError naming object, field and rule."""
    object_id = describe(doc, cls.KIND, cls.NAMESPACED)
    if not isinstance(doc, dict):
        raise ObjectValidationError(object_id, [FieldProblem("", "must be an object")])
    try:
        return cls.model_validate(doc)
    except ValidationError as exc:
        raise ObjectValidationError(object_id, problems_from(exc)) from None


def parse_object(doc: Any) -> KubeObject:
    """Validate one decoded document as the model its apiVersion and kind name."""
    if not isinstance(doc, dict):
        kind = type(doc).__name__
        raise ObjectValidationError("", [FieldProblem("", f"must be an object (got a {kind})")])
    missing = [
        FieldProblem(field, "is required")
        for field in ("apiVersion", "kind")
        if not isinstance(doc.get(field), str) or not doc.get(field)
    ]
    if missing:
        raise ObjectValidationError(describe(doc), missing)
    return parse_as(kind_for(doc["apiVersion"], doc["kind"]), doc)


def unknown_fields(doc: Any, cls: type[KubeObject] | None = None) -> list[UnknownField]:
    """The fields of `doc` that its kind does not know (`spec.numberOfCluster`), in document
    order, each with a suggestion when a known name is close. `cls` defaults to the model that
    the document's apiVersion and kind name; a document of no known kind, or no mapping, has
    none (parse_object reports those)."""
    if cls is None:
        cls = _kind_of(doc)
        if cls is None:
            return []
    return unknown_fields_of(cls, doc)


def _kind_of(doc: Any) -> type[KubeObject] | None:
    if not isinstance(doc, dict):
        return None
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    return KINDS.get((api_version, kind))
