"""policy/v1 PodDisruptionBudget: how many pods of a set may be disrupted at once.

The pod scheduler reads budgets in preemption (kube-scheduler prefers victims whose eviction
violates none); `status.disruptionsAllowed` is what kube's disruption controller computed
(`scheduler simulate` computes it itself, `placement.pods.preemption.disruption`). The spec is typed
whole; the status as the disruption controller writes it."""

from __future__ import annotations

from typing import Any, ClassVar

from apis.meta import Int32, Int64, KubeModel, KubeObject, LabelSelector

__all__ = [
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "scaled_value",
]

IntOrString = Int32 | str


class PodDisruptionBudgetSpec(KubeModel):
    """`minAvailable` or `maxUnavailable` (a count or a percentage of the expected pods) of the
    pods `selector` matches in the budget's namespace."""

    min_available: IntOrString | None = None
    selector: LabelSelector | None = None
    max_unavailable: IntOrString | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(KubeModel):
    """What the disruption controller writes."""

    observed_generation: Int64 | None = None
    disrupted_pods: dict[str, str] | None = None
    disruptions_allowed: Int32 = 0
    current_healthy: Int32 = 0
    desired_healthy: Int32 = 0
    expected_pods: Int32 = 0
    conditions: list[dict[str, Any]] | None = None


class PodDisruptionBudget(KubeObject):
    """policy/v1 PodDisruptionBudget."""

    GROUP: ClassVar[str] = "policy"
    KIND: ClassVar[str] = "PodDisruptionBudget"
    PLURAL: ClassVar[str] = "poddisruptionbudgets"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("pdb",)
    HAS_STATUS: ClassVar[bool] = True

    spec: PodDisruptionBudgetSpec | None = None
    status: PodDisruptionBudgetStatus | None = None

    @property
    def disruptions_allowed(self) -> int:
        return self.status.disruptions_allowed if self.status is not None else 0


def scaled_value(value: int | str, total: int, round_up: bool) -> int:
    """apimachinery's GetScaledValueFromIntOrPercent: an integer as is, `N%` of `total` rounded
    up or down; raises ValueError for a string that is no percentage."""
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        percent = int(value[:-1])
    except ValueError:
        raise ValueError(f'invalid value "{value}": {value[:-1]} is not an integer') from None
    product = percent * total
    return -(-product // 100) if round_up else product // 100
