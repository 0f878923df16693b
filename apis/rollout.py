"""OCM's `RolloutStrategy` (`cluster.open-cluster-management.io/v1alpha1`): how an add-on
manager or a ManifestWorkReplicaSet rolls a change out to the clusters a Placement selects.
Embedded in ClusterManagementAddOn and ManifestWorkReplicaSet specs; what `placement.rollout`
computes with. Field rules as the CRD markers say."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from apis.meta import Int32, KubeModel
from apis.placements import IntOrString

__all__ = [
    "MAX_THRESHOLD_PATTERN",
    "PROGRESS_DEADLINE_PATTERN",
    "MandatoryDecisionGroup",
    "RolloutAll",
    "RolloutProgressive",
    "RolloutProgressivePerGroup",
    "RolloutStrategy",
    "RolloutType",
]

RolloutType = Literal["All", "Progressive", "ProgressivePerGroup"]
PROGRESS_DEADLINE_PATTERN = r"^(([0-9])+[h|m|s])|None$"
"""The CRD's pattern, verbatim (the alternation makes it a prefix match for durations)."""
MAX_THRESHOLD_PATTERN = r"^((100|[0-9]{1,2})%|[0-9]+)$"


class MandatoryDecisionGroup(KubeModel):
    """A decision group rolled out first, by name (preferred) or index."""

    group_name: str | None = None
    group_index: Int32 | None = None


class RolloutAll(KubeModel):
    """Every cluster at once."""

    min_success_time: str | None = None
    progress_deadline: Annotated[str, Field(pattern=PROGRESS_DEADLINE_PATTERN)] | None = None
    max_failures: Annotated[int | str, IntOrString(MAX_THRESHOLD_PATTERN)] | None = None


class RolloutProgressivePerGroup(RolloutAll):
    """Decision group after decision group, mandatory groups first."""

    mandatory_decision_groups: list[MandatoryDecisionGroup] | None = None


class RolloutProgressive(RolloutProgressivePerGroup):
    """`maxConcurrency` clusters at a time (a number or a percent), mandatory groups first."""

    max_concurrency: Annotated[int | str, IntOrString(MAX_THRESHOLD_PATTERN)] | None = None


class RolloutStrategy(KubeModel):
    """The strategy: `type` and the settings of that type."""

    type: RolloutType = "All"
    all: RolloutAll | None = None
    progressive: RolloutProgressive | None = None
    progressive_per_group: RolloutProgressivePerGroup | None = None
