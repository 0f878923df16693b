"""Pod-level scheduling objects (`scheduling.x-k8s.io/v1alpha1`): PodGroup and ElasticQuota."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from apis.meta import Condition, Int32, IntRange, KubeModel, KubeObject, Time
from apis.quantity import BoundedResourceList, ResourceList

__all__ = [
    "MAX_QUOTA_RESOURCES",
    "MIN_ABOVE_MAX_RULE",
    "POD_GROUP_LABEL",
    "SCHEDULING_GROUP",
    "ElasticQuota",
    "ElasticQuotaSpec",
    "ElasticQuotaStatus",
    "PodGroup",
    "PodGroupPhase",
    "PodGroupSpec",
    "PodGroupStatus",
    "PriorityClass",
]

SCHEDULING_GROUP = "scheduling.x-k8s.io"
# A pod joins a gang by carrying this label with the PodGroup's name (same namespace).
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

PodGroupPhase = Literal["Pending", "Scheduling", "Running", "Unknown", "Finished", "Failed"]


class PodGroupSpec(KubeModel):
    """The quorum of a gang and how long its members may wait for each other."""

    min_member: Annotated[int, IntRange(1, None)] | None = None
    min_resources: ResourceList | None = None
    schedule_timeout_seconds: Int32 | None = None


class PodGroupStatus(KubeModel):
    """What the PodGroup controller reports about the gang's members."""

    phase: PodGroupPhase | None = None
    occupied_by: str | None = None
    scheduled: Int32 | None = None
    running: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    schedule_start_time: Time | None = None


class PodGroup(KubeObject):
    """A gang of pods that is scheduled all together or not at all."""

    GROUP: ClassVar[str] = SCHEDULING_GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "PodGroup"
    PLURAL: ClassVar[str] = "podgroups"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("pg", "pgs")
    HAS_STATUS: ClassVar[bool] = True

    spec: PodGroupSpec | None = None
    status: PodGroupStatus | None = None


MIN_ABOVE_MAX_RULE = (
    "!has(self.min) || !has(self.max) || self.max.all(k, !(k in self.min) || "
    "quantity(string(self.min[k])).compareTo(quantity(string(self.max[k]))) <= 0)"
)
"""The CRD's rule for `min <= max` (Kubernetes 1.29+ has the CEL quantity library)."""
MAX_QUOTA_RESOURCES = 64
"""At most this many resource names in `min` or `max`; with each quantity at most
`MAX_QUANTITY_LENGTH` characters, this keeps the rule within kube-apiserver's cost budget."""


class ElasticQuotaSpec(KubeModel):
    """Guaranteed (`min`) and ceiling (`max`) resources of a namespace."""

    # A resource missing from `max` is unbounded, missing from `min` is 0
    # (docs/gangs-and-quotas.md); `min` above `max` is refused here, by the CRD's rule and so
    # by the embedded server.

    model_config = ConfigDict(
        **KubeModel.model_config,
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": MIN_ABOVE_MAX_RULE, "message": "min must not be above max"}
            ]
        },
    )

    min: Annotated[BoundedResourceList, Field(max_length=MAX_QUOTA_RESOURCES)] | None = None
    max: Annotated[BoundedResourceList, Field(max_length=MAX_QUOTA_RESOURCES)] | None = None

    @model_validator(mode="after")
    def _min_not_above_max(self) -> ElasticQuotaSpec:
        both = set(self.min or {}) & set(self.max or {})
        for name in sorted(both):
            low, high = (self.min or {})[name], (self.max or {})[name]
            if low.value > high.value:
                raise ValueError(
                    f"min[{name}] {low} is above max[{name}] {high}: min must not be above max"
                )
        return self


class ElasticQuotaStatus(KubeModel):
    """Resources used by the bound, unfinished pods of the namespace, and conditions."""

    # Conditions (placement.pods.status.elasticquotas): `Active` (the quota in force, or an ignored
    # duplicate) and `MinWithinCapacity` (whether the quotas' min adds up within the nodes'
    # allocatable).

    used: ResourceList | None = None
    conditions: list[Condition] | None = None


class ElasticQuota(KubeObject):
    """A namespace's elastic share of the cluster: may borrow above min, never above max."""

    GROUP: ClassVar[str] = SCHEDULING_GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "ElasticQuota"
    PLURAL: ClassVar[str] = "elasticquotas"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("eq", "eqs")
    HAS_STATUS: ClassVar[bool] = True

    spec: ElasticQuotaSpec | None = None
    status: ElasticQuotaStatus | None = None


class PriorityClass(KubeObject):
    """`scheduling.k8s.io/v1` PriorityClass: the priority a pod gets from its
    `priorityClassName` (cluster-scoped; `value` at most one billion for user classes)."""

    GROUP: ClassVar[str] = "scheduling.k8s.io"
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "PriorityClass"
    PLURAL: ClassVar[str] = "priorityclasses"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("pc",)

    value: Annotated[int, IntRange(-(2**31), 2**31 - 1)]
    global_default: bool | None = None
    preemption_policy: Literal["Never", "PreemptLowerPriority"] | None = None
    description: str | None = None
