"""OCM cluster inventory: ManagedCluster (v1), ManagedClusterSet and its binding (v1beta2),
AddOnPlacementScore (v1alpha1)."""

from __future__ import annotations

import json
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from apis.meta import (
    QUALIFIED_NAME_PATTERN,
    Condition,
    IntRange,
    KubeModel,
    KubeObject,
    LabelSelector,
    Time,
    field_error,
)
from apis.names import NameRule, invalid_value
from apis.quantity import ResourceList

__all__ = [
    "CLUSTER_GROUP",
    "CLUSTER_SET_LABEL",
    "AddOnPlacementScore",
    "AddOnPlacementScoreItem",
    "AddOnPlacementScoreStatus",
    "ClusterClaim",
    "ManagedCluster",
    "ManagedClusterSet",
    "ManagedClusterSetBinding",
    "ManagedClusterSetBindingSpec",
    "ManagedClusterSetSelector",
    "ManagedClusterSetSpec",
    "ManagedClusterSpec",
    "ManagedClusterStatus",
    "SelectorType",
    "Taint",
    "TaintEffect",
]

CLUSTER_GROUP = "cluster.open-cluster-management.io"
CLUSTER_SET_LABEL = "cluster.open-cluster-management.io/clusterset"

TaintEffect = Literal["NoSelect", "PreferNoSelect", "NoSelectIfNew"]


class Taint(KubeModel):
    """A taint on a ManagedCluster; placements without a matching toleration avoid it."""

    key: Annotated[str, Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN)]
    value: Annotated[str, Field(max_length=1024)] | None = None
    effect: TaintEffect
    # Stamped by the hub when the taint is added; the start of every tolerationSeconds.
    time_added: Time | None = None


class ClusterClaim(KubeModel):
    """A name/value fact a managed cluster reports about itself."""

    name: str | None = None
    value: str | None = None


class ManagedClusterSpec(KubeModel):
    """What the hub admin declares about a registered cluster."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"managedClusterClientConfigs"})

    hub_accepts_client: bool | None = None
    lease_duration_seconds: Annotated[int, IntRange(0, None)] | None = None
    taints: list[Taint] | None = None


class ManagedClusterStatus(KubeModel):
    """What the cluster's agent reports: conditions, resources and claims."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"version", "managedNamespaces"})

    conditions: list[Condition] | None = None
    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    cluster_claims: list[ClusterClaim] | None = None


class ManagedCluster(KubeObject):
    """A Kubernetes cluster registered with the hub (cluster-scoped)."""

    GROUP: ClassVar[str] = CLUSTER_GROUP
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "ManagedCluster"
    PLURAL: ClassVar[str] = "managedclusters"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("mcl", "mcls")
    # OCM's webhook: the name is also the name of the cluster's namespace on the hub.
    NAME_RULE: ClassVar[NameRule | None] = "label"
    HAS_STATUS: ClassVar[bool] = True

    spec: ManagedClusterSpec = Field(default_factory=ManagedClusterSpec)
    status: ManagedClusterStatus | None = None


SelectorType = Literal["ExclusiveClusterSetLabel", "LabelSelector"]


class ManagedClusterSetSelector(KubeModel):
    """How a set finds its members: by the exclusive set label, or by a label selector."""

    selector_type: SelectorType = "ExclusiveClusterSetLabel"
    label_selector: LabelSelector | None = None


class ManagedClusterSetSpec(KubeModel):
    """The member selector of a ManagedClusterSet."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"managedNamespaces"})

    cluster_selector: ManagedClusterSetSelector = Field(default_factory=ManagedClusterSetSelector)


class ManagedClusterSet(KubeObject):
    """A named group of ManagedClusters (cluster-scoped)."""

    GROUP: ClassVar[str] = CLUSTER_GROUP
    VERSION: ClassVar[str] = "v1beta2"
    KIND: ClassVar[str] = "ManagedClusterSet"
    PLURAL: ClassVar[str] = "managedclustersets"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("mclset", "mclsets")
    HAS_STATUS: ClassVar[bool] = True

    spec: ManagedClusterSetSpec = Field(default_factory=ManagedClusterSetSpec)
    status: _ConditionsStatus | None = None


class _ConditionsStatus(KubeModel):
    """A status made only of conditions."""

    conditions: list[Condition] | None = None


class ManagedClusterSetBindingSpec(KubeModel):
    """The set this binding makes available to its namespace."""

    cluster_set: Annotated[str, Field(min_length=1)]


class ManagedClusterSetBinding(KubeObject):
    """Makes a ManagedClusterSet usable by the Placements of one namespace."""

    GROUP: ClassVar[str] = CLUSTER_GROUP
    VERSION: ClassVar[str] = "v1beta2"
    KIND: ClassVar[str] = "ManagedClusterSetBinding"
    PLURAL: ClassVar[str] = "managedclustersetbindings"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("mclsetbinding", "mclsetbindings")
    HAS_STATUS: ClassVar[bool] = True

    spec: ManagedClusterSetBindingSpec
    status: _ConditionsStatus | None = None

    @model_validator(mode="after")
    def _named_after_its_set(self) -> ManagedClusterSetBinding:
        # OCM's webhook rejects a binding named otherwise, on create and on update.
        name, cluster_set = self.metadata.name, self.spec.cluster_set
        if name and name != cluster_set:
            reason = (
                "The ManagedClusterSetBinding must have the same name as the target "
                f"ManagedClusterSet (spec.clusterSet {json.dumps(cluster_set)})"
            )
            raise field_error(self, [(("metadata", "name"), name, invalid_value(name, reason))])
        return self


class AddOnPlacementScoreItem(KubeModel):
    """One named score an add-on reports for its cluster."""

    name: str
    value: Annotated[int, IntRange(-100, 100)]


class AddOnPlacementScoreStatus(KubeModel):
    """The scores and how long they stay valid (unset: forever)."""

    conditions: list[Condition] | None = None
    scores: list[AddOnPlacementScoreItem] | None = None
    valid_until: Time | None = None


class AddOnPlacementScore(KubeObject):
    """Scores an add-on publishes in a cluster's namespace for the AddOn prioritizer."""

    GROUP: ClassVar[str] = CLUSTER_GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "AddOnPlacementScore"
    PLURAL: ClassVar[str] = "addonplacementscores"
    HAS_STATUS: ClassVar[bool] = True

    status: AddOnPlacementScoreStatus | None = None


ManagedClusterSet.model_rebuild()
ManagedClusterSetBinding.model_rebuild()
