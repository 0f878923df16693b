"""Wire models of every object ocm-placement reads or writes (pydantic v2, camelCase on the wire,
unknown fields kept), with the validation of their CRD markers.

The names below are imported from their module on first use: `import apis.names` (or any one
module) does not import every kind, so a command pays only for the models it reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apis.lazy import lazy_exports

if TYPE_CHECKING:
    from apis.cluster import (
        CLUSTER_SET_LABEL,
        AddOnPlacementScore,
        ClusterClaim,
        ManagedCluster,
        ManagedClusterSet,
        ManagedClusterSetBinding,
        Taint,
    )
    from apis.errors import FieldProblem, ModelError, ObjectValidationError, UnknownKindError
    from apis.meta import (
        Condition,
        KubeModel,
        KubeObject,
        LabelSelector,
        ObjectMeta,
        OwnerReference,
    )
    from apis.placements import (
        DECISION_GROUP_INDEX_LABEL,
        DECISION_GROUP_NAME_LABEL,
        DISABLE_ANNOTATION,
        PLACEMENT_LABEL,
        ClusterDecision,
        Placement,
        PlacementDecision,
        PlacementSpec,
        PlacementStatus,
        SpreadConstraintsTerm,
        Toleration,
    )
    from apis.quantity import Quantity, QuantityError
    from apis.registry import (
        CUSTOM_KINDS,
        KINDS,
        UnknownField,
        kind_for,
        parse_as,
        parse_object,
        unknown_fields,
    )
    from apis.scheduling import ElasticQuota, PodGroup

# Each exported name and its module in this package.
_SOURCES = {
    "AddOnPlacementScore": "cluster",
    "CLUSTER_SET_LABEL": "cluster",
    "CUSTOM_KINDS": "registry",
    "ClusterClaim": "cluster",
    "ClusterDecision": "placements",
    "Condition": "meta",
    "DECISION_GROUP_INDEX_LABEL": "placements",
    "DECISION_GROUP_NAME_LABEL": "placements",
    "DISABLE_ANNOTATION": "placements",
    "ElasticQuota": "scheduling",
    "FieldProblem": "errors",
    "KINDS": "registry",
    "KubeModel": "meta",
    "KubeObject": "meta",
    "LabelSelector": "meta",
    "ManagedCluster": "cluster",
    "ManagedClusterSet": "cluster",
    "ManagedClusterSetBinding": "cluster",
    "ModelError": "errors",
    "ObjectMeta": "meta",
    "ObjectValidationError": "errors",
    "OwnerReference": "meta",
    "PLACEMENT_LABEL": "placements",
    "Placement": "placements",
    "PlacementDecision": "placements",
    "PlacementSpec": "placements",
    "PlacementStatus": "placements",
    "PodGroup": "scheduling",
    "Quantity": "quantity",
    "QuantityError": "quantity",
    "SpreadConstraintsTerm": "placements",
    "Taint": "cluster",
    "Toleration": "placements",
    "UnknownField": "registry",
    "UnknownKindError": "errors",
    "kind_for": "registry",
    "parse_as": "registry",
    "parse_object": "registry",
    "unknown_fields": "registry",
}

__all__ = [
    "CLUSTER_SET_LABEL",
    "CUSTOM_KINDS",
    "DECISION_GROUP_INDEX_LABEL",
    "DECISION_GROUP_NAME_LABEL",
    "DISABLE_ANNOTATION",
    "KINDS",
    "PLACEMENT_LABEL",
    "AddOnPlacementScore",
    "ClusterClaim",
    "ClusterDecision",
    "Condition",
    "ElasticQuota",
    "FieldProblem",
    "KubeModel",
    "KubeObject",
    "LabelSelector",
    "ManagedCluster",
    "ManagedClusterSet",
    "ManagedClusterSetBinding",
    "ModelError",
    "ObjectMeta",
    "ObjectValidationError",
    "OwnerReference",
    "Placement",
    "PlacementDecision",
    "PlacementSpec",
    "PlacementStatus",
    "PodGroup",
    "Quantity",
    "QuantityError",
    "SpreadConstraintsTerm",
    "Taint",
    "Toleration",
    "UnknownField",
    "UnknownKindError",
    "kind_for",
    "parse_as",
    "parse_object",
    "unknown_fields",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _SOURCES)
