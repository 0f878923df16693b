"""Placement and PlacementDecision (`cluster.open-cluster-management.io/v1beta1`).

Validation mirrors OCM's CRD markers, plus one addition: `numberOfClusters` must not be negative
(OCM's CRD has no minimum and its controller would panic slicing with a negative count).
Fields that OCM validates in the controller rather than in the CRD (prioritizer mode, builtIn
names, toleration operators) stay free strings here, so that the scheduler can report them as
`PlacementMisconfigured` with OCM's messages.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from apis.cluster import CLUSTER_GROUP, TaintEffect
from apis.meta import (
    QUALIFIED_NAME_PATTERN,
    Condition,
    Int32,
    Int64,
    IntRange,
    KubeModel,
    KubeObject,
    LabelSelector,
    LabelSelectorRequirement,
    Time,
)

__all__ = [
    "CLUSTERS_PER_GROUP_PATTERN",
    "DECISION_GROUP_INDEX_LABEL",
    "DECISION_GROUP_NAME_LABEL",
    "DISABLE_ANNOTATION",
    "GROUP_NAME_PATTERN",
    "MAX_SPREAD_CONSTRAINTS",
    "PLACEMENT_LABEL",
    "PLACEMENT_MISCONFIGURED",
    "PLACEMENT_SATISFIED",
    "TOPOLOGY_KEY_PATTERN",
    "AddOnScoreCoordinate",
    "CelSelector",
    "ClaimSelector",
    "ClusterDecision",
    "ClusterPredicate",
    "ClusterSelector",
    "DecisionGroup",
    "DecisionGroupStatus",
    "DecisionStrategy",
    "GroupClusterSelector",
    "GroupStrategy",
    "IntOrString",
    "Placement",
    "PlacementDecision",
    "PlacementDecisionStatus",
    "PlacementSpec",
    "PlacementStatus",
    "PrioritizerConfig",
    "PrioritizerPolicy",
    "ScoreCoordinate",
    "SpreadConstraintsTerm",
    "SpreadPolicy",
    "Toleration",
    "TopologyKeyType",
    "WhenUnsatisfiable",
    "is_disabled",
]

PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
DECISION_GROUP_NAME_LABEL = "cluster.open-cluster-management.io/decision-group-name"
DECISION_GROUP_INDEX_LABEL = "cluster.open-cluster-management.io/decision-group-index"
DISABLE_ANNOTATION = "cluster.open-cluster-management.io/experimental-scheduling-disable"
"""Set to "true" on a Placement, it turns scheduling of that placement off (see `is_disabled`)."""
MAX_SPREAD_CONSTRAINTS = 8
# The condition types of a Placement's status, as OCM names them.
PLACEMENT_SATISFIED = "PlacementSatisfied"
PLACEMENT_MISCONFIGURED = "PlacementMisconfigured"

CLUSTERS_PER_GROUP_PATTERN = r"^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$"
GROUP_NAME_PATTERN = r"^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$"
TOPOLOGY_KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)


class IntOrString:
    """Annotated metadata for Kubernetes IntOrString fields: an int, or a string matching
    `pattern`. One clear error instead of pydantic's one-per-union-member."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._regex = re.compile(pattern)

    def _check(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise PydanticCustomError(
                "int_or_string", "must be an integer or a string (got {got})", {"got": repr(value)}
            )
        if isinstance(value, int) and not -(2**31) <= value < 2**31:
            # intstr.IntOrString keeps an int32: Go would refuse to decode a larger one.
            raise PydanticCustomError(
                "int_range",
                "must be between {lo} and {hi}, within the int32 range (got {got})",
                {"lo": -(2**31), "hi": 2**31 - 1, "got": repr(value)},
            )
        if isinstance(value, str) and not self._regex.match(value):
            raise PydanticCustomError(
                "string_pattern_mismatch",
                "must match the pattern {pattern} (got {got})",
                {"pattern": self.pattern, "got": repr(value)},
            )
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(self._check)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": self.pattern,
            "x-kubernetes-int-or-string": True,
        }


# --- spec --------------------------------------------------------------------------------------


class ClaimSelector(KubeModel):
    """Selects clusters by `status.clusterClaims`, with label-selector semantics."""

    match_expressions: list[LabelSelectorRequirement] | None = None


class CelSelector(KubeModel):
    """CEL expressions over the variable `managedCluster`; all must hold."""

    cel_expressions: list[str] | None = None


class ClusterSelector(KubeModel):
    """Label, claim and CEL selectors of one predicate, ANDed."""

    label_selector: LabelSelector | None = None
    claim_selector: ClaimSelector | None = None
    cel_selector: CelSelector | None = None


class ClusterPredicate(KubeModel):
    """One predicate; a cluster passes the placement's predicates if it matches any of them."""

    required_cluster_selector: ClusterSelector | None = None


class AddOnScoreCoordinate(KubeModel):
    """Names an AddOnPlacementScore (in each cluster's namespace) and a score inside it."""

    resource_name: str
    score_name: str


class ScoreCoordinate(KubeModel):
    """Where a prioritizer's scores come from: a built-in prioritizer or an add-on score."""

    type: Literal["BuiltIn", "AddOn"] = "BuiltIn"
    built_in: str | None = None
    add_on: AddOnScoreCoordinate | None = None


class PrioritizerConfig(KubeModel):
    """One prioritizer and its weight; weight 0 disables it, negative reverses it."""

    score_coordinate: ScoreCoordinate
    weight: Annotated[int, IntRange(-10, 10)] = 1


class PrioritizerPolicy(KubeModel):
    """Additive: defaults plus the configured prioritizers. Exact: only the configured ones."""

    mode: str = "Additive"
    configurations: list[PrioritizerConfig] | None = None


class Toleration(KubeModel):
    """Lets a placement select clusters carrying a matching taint."""

    key: Annotated[str, Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN)] | None = None
    operator: str = "Equal"
    value: Annotated[str, Field(max_length=1024)] | None = None
    effect: TaintEffect | None = None
    toleration_seconds: Int64 | None = None


class GroupClusterSelector(KubeModel):
    """Label and claim selectors choosing the members of a named decision group."""

    label_selector: LabelSelector | None = None
    claim_selector: ClaimSelector | None = None


class DecisionGroup(KubeModel):
    """A named decision group and the selected clusters that go into it."""

    group_name: Annotated[str, Field(pattern=GROUP_NAME_PATTERN)]
    group_cluster_selector: GroupClusterSelector


class GroupStrategy(KubeModel):
    """How selected clusters are divided into decision groups."""

    decision_groups: list[DecisionGroup] | None = None
    clusters_per_decision_group: Annotated[int | str, IntOrString(CLUSTERS_PER_GROUP_PATTERN)] = (
        "100%"
    )


class DecisionStrategy(KubeModel):
    """Divides the placement's decisions into groups (for progressive rollouts)."""

    group_strategy: GroupStrategy | None = None


TopologyKeyType = Literal["Label", "Claim"]
WhenUnsatisfiable = Literal["DoNotSchedule", "ScheduleAnyway"]


class SpreadConstraintsTerm(KubeModel):
    """One topology level of the spread policy; earlier terms are the outer levels."""

    topology_key: Annotated[str, Field(max_length=316, pattern=TOPOLOGY_KEY_PATTERN)]
    topology_key_type: TopologyKeyType
    max_skew: Annotated[int, IntRange(1, None)] = 1
    when_unsatisfiable: WhenUnsatisfiable = "ScheduleAnyway"


class SpreadPolicy(KubeModel):
    """How decisions are spread over topology domains."""

    spread_constraints: (
        Annotated[list[SpreadConstraintsTerm], Field(max_length=MAX_SPREAD_CONSTRAINTS)] | None
    ) = None


class PlacementSpec(KubeModel):
    """Which cluster sets to draw from, which clusters qualify, how to rank and group them."""

    cluster_sets: list[str] | None = None
    number_of_clusters: Annotated[int, IntRange(0, None)] | None = None
    predicates: list[ClusterPredicate] | None = None
    prioritizer_policy: PrioritizerPolicy | None = None
    tolerations: list[Toleration] | None = None
    decision_strategy: DecisionStrategy | None = None
    spread_policy: SpreadPolicy | None = None
    sort_by: Literal["ClusterName", "Score"] | None = None
    score_rate_limit: Annotated[str, Field(pattern=r"^[0-9]+[hms]$")] | None = None


class DecisionGroupStatus(KubeModel):
    """One decision group as written: its index, name, PlacementDecision names and size."""

    decision_group_index: Int32 | None = None
    decision_group_name: str | None = None
    decisions: list[str] | None = None
    cluster_count: Int32 | None = None


class PlacementStatus(KubeModel):
    """The outcome the controller reports on a Placement."""

    number_of_selected_clusters: Int32 | None = None
    decision_groups: list[DecisionGroupStatus] | None = None
    conditions: list[Condition] | None = None
    last_score_update_time: Time | None = None


class Placement(KubeObject):
    """A rule selecting ManagedClusters from the sets bound to the placement's namespace."""

    GROUP: ClassVar[str] = CLUSTER_GROUP
    VERSION: ClassVar[str] = "v1beta1"
    KIND: ClassVar[str] = "Placement"
    PLURAL: ClassVar[str] = "placements"
    HAS_STATUS: ClassVar[bool] = True

    spec: PlacementSpec
    status: PlacementStatus | None = None


def is_disabled(placement: Placement) -> bool:
    """Placements the controller leaves alone: annotated off, or being deleted."""
    annotations = placement.metadata.annotations or {}
    return (
        annotations.get(DISABLE_ANNOTATION) == "true"
        or placement.metadata.deletion_timestamp is not None
    )


# --- decisions ---------------------------------------------------------------------------------


class ClusterDecision(KubeModel):
    """One selected cluster."""

    cluster_name: str
    reason: str
    score: Int32 | None = None


class PlacementDecisionStatus(KubeModel):
    """The clusters of one page of a placement's decisions (at most 100)."""

    decisions: list[ClusterDecision] = Field(default_factory=list)


class PlacementDecision(KubeObject):
    """A page of a Placement's selected clusters, labelled with the placement and its group."""

    GROUP: ClassVar[str] = CLUSTER_GROUP
    VERSION: ClassVar[str] = "v1beta1"
    KIND: ClassVar[str] = "PlacementDecision"
    PLURAL: ClassVar[str] = "placementdecisions"
    HAS_STATUS: ClassVar[bool] = True

    status: PlacementDecisionStatus | None = None

    @property
    def placement_name(self) -> str | None:
        """The placement this decision belongs to, by its label (None when unlabelled)."""
        return (self.metadata.labels or {}).get(PLACEMENT_LABEL)
