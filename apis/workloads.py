"""Workload objects whose pods the pod scheduler places: apps/v1 Deployment, ReplicaSet and
StatefulSet, batch/v1 Job, core/v1 ReplicationController, and the PodTemplateSpec they share.

Only what placing their pods needs is typed (replica counts, selector, pod template); the other
fields of their specs are kept as they came (`UNTYPED_FIELDS`), so that a typo in a manifest is
still reported as an unknown field. Their status is written by controllers of the Kubernetes
version in use and is typed loosely (`ALL_FIELDS_KNOWN = False`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from apis.core import PodSpec
from apis.meta import (
    Int32,
    Int64,
    IntRange,
    KubeModel,
    KubeObject,
    LabelSelector,
    ObjectMeta,
    Time,
)

__all__ = [
    "WORKLOAD_MODELS",
    "Deployment",
    "DeploymentSpec",
    "Job",
    "JobSpec",
    "JobStatus",
    "PodTemplateSpec",
    "ReplicaSet",
    "ReplicaSetSpec",
    "ReplicaStatus",
    "ReplicationController",
    "ReplicationControllerSpec",
    "StatefulSet",
    "StatefulSetSpec",
]

# Counts the API server rejects when negative (apps and batch validation).
NonNegative32 = Annotated[int, IntRange(0, None)]


class PodTemplateSpec(KubeModel):
    """The pods a workload creates: their metadata (labels) and spec."""

    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None


class ReplicaStatus(KubeModel):
    """Status of a replicated workload (Deployment, ReplicaSet, StatefulSet), as its controller
    writes it; typed loosely because it changes with the Kubernetes version."""

    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    observed_generation: Int64 | None = None
    replicas: Int32 | None = None
    ready_replicas: Int32 | None = None
    available_replicas: Int32 | None = None
    updated_replicas: Int32 | None = None
    current_replicas: Int32 | None = None
    conditions: list[dict[str, Any]] | None = None


class DeploymentSpec(KubeModel):
    """Desired replicas of a pod template; `strategy` (rollouts) kept as it came."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"minReadySeconds", "revisionHistoryLimit", "paused", "progressDeadlineSeconds"}
    )

    replicas: NonNegative32 | None = None
    selector: LabelSelector
    template: PodTemplateSpec
    strategy: dict[str, Any] | None = None


class Deployment(KubeObject):
    """apps/v1 Deployment."""

    GROUP: ClassVar[str] = "apps"
    KIND: ClassVar[str] = "Deployment"
    PLURAL: ClassVar[str] = "deployments"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("deploy",)
    HAS_STATUS: ClassVar[bool] = True

    spec: DeploymentSpec
    status: ReplicaStatus | None = None


class ReplicaSetSpec(KubeModel):
    """Desired replicas of a pod template."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"minReadySeconds"})

    replicas: NonNegative32 | None = None
    selector: LabelSelector
    template: PodTemplateSpec


class ReplicaSet(KubeObject):
    """apps/v1 ReplicaSet."""

    GROUP: ClassVar[str] = "apps"
    KIND: ClassVar[str] = "ReplicaSet"
    PLURAL: ClassVar[str] = "replicasets"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("rs",)
    HAS_STATUS: ClassVar[bool] = True

    spec: ReplicaSetSpec
    status: ReplicaStatus | None = None


class StatefulSetSpec(KubeModel):
    """Ordered, named replicas of a pod template."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {
            *("volumeClaimTemplates", "updateStrategy", "revisionHistoryLimit"),
            *("minReadySeconds", "persistentVolumeClaimRetentionPolicy", "ordinals"),
        }
    )

    replicas: NonNegative32 | None = None
    selector: LabelSelector
    service_name: str | None = None
    template: PodTemplateSpec
    pod_management_policy: Literal["OrderedReady", "Parallel"] | None = None


class StatefulSet(KubeObject):
    """apps/v1 StatefulSet."""

    GROUP: ClassVar[str] = "apps"
    KIND: ClassVar[str] = "StatefulSet"
    PLURAL: ClassVar[str] = "statefulsets"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("sts",)
    HAS_STATUS: ClassVar[bool] = True

    spec: StatefulSetSpec
    status: ReplicaStatus | None = None


class JobSpec(KubeModel):
    """How many pods of a template run at once and to completion."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {
            *("activeDeadlineSeconds", "podFailurePolicy", "successPolicy"),
            *("backoffLimitPerIndex", "maxFailedIndexes", "manualSelector"),
            *("ttlSecondsAfterFinished", "completionMode", "suspend"),
            *("podReplacementPolicy", "managedBy"),
        }
    )

    parallelism: NonNegative32 | None = None
    completions: NonNegative32 | None = None
    backoff_limit: NonNegative32 | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec


class JobStatus(KubeModel):
    """Status of a Job, as the Job controller writes it (typed loosely)."""

    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    active: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    ready: Int32 | None = None
    start_time: Time | None = None
    completion_time: Time | None = None
    conditions: list[dict[str, Any]] | None = None


class Job(KubeObject):
    """batch/v1 Job."""

    GROUP: ClassVar[str] = "batch"
    KIND: ClassVar[str] = "Job"
    PLURAL: ClassVar[str] = "jobs"
    HAS_STATUS: ClassVar[bool] = True

    spec: JobSpec
    status: JobStatus | None = None


class ReplicationControllerSpec(KubeModel):
    """Desired replicas of a pod template; the selector is a plain label map (the API server
    defaults it to the template's labels)."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"minReadySeconds"})

    replicas: NonNegative32 | None = None
    selector: dict[str, str] | None = None
    template: PodTemplateSpec | None = None


class ReplicationController(KubeObject):
    """core/v1 ReplicationController (the ReplicaSet's predecessor)."""

    KIND: ClassVar[str] = "ReplicationController"
    PLURAL: ClassVar[str] = "replicationcontrollers"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("rc",)
    HAS_STATUS: ClassVar[bool] = True

    spec: ReplicationControllerSpec | None = None
    status: ReplicaStatus | None = None


WORKLOAD_MODELS: tuple[type[KubeObject], ...] = (
    *(Deployment, ReplicaSet, StatefulSet, Job, ReplicationController),
)
