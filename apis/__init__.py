"""Wire models of every object ocm-placement reads or writes (pydantic v2, camelCase on the wire,
unknown fields kept), with the validation of their CRD markers."""

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
from apis.meta import Condition, KubeModel, KubeObject, LabelSelector, ObjectMeta, OwnerReference
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
from apis.registry import CUSTOM_KINDS, KINDS, kind_for, parse_as, parse_object
from apis.scheduling import ElasticQuota, PodGroup

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
    "UnknownKindError",
    "kind_for",
    "parse_as",
    "parse_object",
]
