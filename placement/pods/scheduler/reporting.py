"""What the engine tells the world about a pod: conditions, events, and its counters.

Shared by the scheduling cycle and the binding cycle: `Reporter` collects the actions of one
engine call (drained by the engine), writes kube-scheduler's `PodScheduled=False` condition and
`FailedScheduling` event, and sends a pod that could not be placed back to the queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from placement.pods.backend.queue import SchedulingQueue
from placement.pods.framework.events import Action, EmitEvent, PatchPodStatus
from placement.pods.framework.interface import PodCycle, PodInfo, PodStatus
from placement.pods.framework.pod_reports import event_message, has_condition, scheduled_condition

__all__ = ["EngineStats", "Reporter"]


@dataclass
class EngineStats:
    """Counters for metrics (kube-scheduler's names in the controller)."""

    attempts: dict[str, int] = field(
        default_factory=lambda: {"scheduled": 0, "unschedulable": 0, "error": 0}
    )
    """Scheduling attempts by result (`scheduler_schedule_attempts_total{result}`):
    "scheduled" counts confirmed bindings, "error" plugin errors and failed bindings."""
    preemption_attempts: int = 0
    victims: int = 0
    pod_attempts: dict[str, int] = field(default_factory=dict)
    """Attempts per pod key, while the engine knows the pod."""
    handler_errors: int = 0
    cycles: int = 0


class Reporter:
    """The actions of the current engine call, and the outcomes every part reports alike."""

    def __init__(self, queue: SchedulingQueue, stats: EngineStats) -> None:
        self.queue = queue
        self.stats = stats
        self.out: list[Action] = []

    def drain(self) -> list[Action]:
        out, self.out = self.out, []
        return out

    def report(
        self, info: PodInfo, reason: str, message: str, nominated: str | None = None
    ) -> None:
        """PodScheduled=False (skipped when the pod already says so) and FailedScheduling;
        the event's message is cut as kube-scheduler cuts it (`event_message`), the
        condition's is whole."""
        condition = scheduled_condition(reason, message)
        if nominated is not None or not has_condition(info.pod, condition):
            self.out.append(PatchPodStatus(info.key, info.uid, condition, nominated))
        self.out.append(
            EmitEvent(
                regarding=("Pod", info.key, info.uid),
                type="Warning",
                reason="FailedScheduling",
                message=event_message(message),
            )
        )

    def unschedulable(
        self,
        cycle: PodCycle,
        info: PodInfo,
        message: str,
        plugins: Iterable[str],
        attempts: int,
        nominated: str | None = None,
    ) -> None:
        """No node now: report it and park the pod until an event names a plugin that
        rejected it (or the unschedulable flush)."""
        self.stats.attempts["unschedulable"] += 1
        self.report(info, "Unschedulable", message, nominated)
        self.queue.requeue(
            info, cycle.now, unschedulable=True, rejected_by=plugins, attempts=attempts
        )

    def rejected_after_permit(
        self, cycle: PodCycle, info: PodInfo, message: str, attempts: int
    ) -> None:
        """A PreBind or Bind plugin rejected the pod (Unschedulable, its message as it is):
        no plugin is recorded as its rejector, so kube-scheduler's queue sends it to backoff
        rather than parking it until an event."""
        self.stats.attempts["unschedulable"] += 1
        self.report(info, "Unschedulable", message)
        self.queue.requeue(info, cycle.now, unschedulable=False, attempts=attempts)

    def error(self, cycle: PodCycle, info: PodInfo, status: PodStatus, attempts: int) -> None:
        """A plugin failed: report it and retry the pod after its backoff."""
        self.stats.attempts["error"] += 1
        self.report(info, "SchedulerError", status.message or f"plugin {status.plugin} failed")
        self.queue.requeue(info, cycle.now, unschedulable=False, attempts=attempts)
