"""PreEnqueue: the new pending pods a plugin keeps out of the scheduling queue, and how their
owner learns why (kube-scheduler's PreEnqueue point, reported with the delay kube's KEP-5501
describes).

* A new pending pod runs the profile's PreEnqueue plugins in order (`admit`). The first message
  holds it here, gated: no attempt, no event, no status write. When every plugin lets it pass it
  enters the queue.
* A held pod is checked again when its pod object changes (`admit` once more), and when the
  handler of the plugin holding it says an event may help (`release`: the keys its `on_event`
  named, or all it holds when it said True). Passing, it enters the queue with the time it was
  first seen, so its place in the queue order is kept.
* A pod held `REPORT_DELAY` (5 s) with the same message gets `PodScheduled=False` with reason
  `NotReadyForScheduling` and that message, and a Normal `NotReadyForScheduling` Event (`due`).
  A new message starts the delay again; nothing is written when the pod already carries that
  condition (after a restart of the scheduler). A hold shorter than the delay writes nothing:
  the members of a gang created together are never reported. Nothing is written when a held
  pod passes either: its first attempt replaces the condition (Unschedulable), or its binding
  does (`PodScheduled=True`).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence, Set
from dataclasses import dataclass
from datetime import datetime, timedelta

from placement.pods.framework.events import Action, EmitEvent, PatchPodStatus
from placement.pods.framework.interface import ClusterView, PodInfo, PreEnqueue
from placement.pods.framework.pod_reports import has_condition, scheduled_condition

__all__ = ["NOT_READY_FOR_SCHEDULING", "REPORT_DELAY", "Gatekeeper", "Hold"]

NOT_READY_FOR_SCHEDULING = "NotReadyForScheduling"
"""The reason of the condition and Event of a pod held at PreEnqueue (kube's, KEP-5501)."""
REPORT_DELAY = timedelta(seconds=5)
"""How long a pod is held with one message before it is reported (kube's value)."""


@dataclass
class Hold:
    """A pod held out of the queue: by which plugin, why, and since when."""

    info: PodInfo
    plugin: str
    message: str
    entered: datetime
    """When it was first seen (its queue time when it passes)."""
    version: int = 0
    reported: str = ""
    """The message last written on the pod ("" none)."""


class Gatekeeper:
    """The held pods of one profile; see the module docstring."""

    def __init__(
        self,
        plugins: Sequence[PreEnqueue],
        cluster: ClusterView,
        delay: timedelta = REPORT_DELAY,
    ) -> None:
        self._plugins = tuple(plugins)
        self._cluster = cluster
        self.delay = delay
        self._held: dict[str, Hold] = {}
        self._by_plugin: dict[str, set[str]] = {}
        self._due: list[tuple[datetime, int, str, int]] = []  # (report at, seq, key, version)
        self._seq = 0
        self.errors = 0
        """PreEnqueue calls that raised."""

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, key: str) -> bool:
        return key in self._held

    def held(self) -> list[Hold]:
        """The held pods, by key."""
        return [self._held[key] for key in sorted(self._held)]

    def admit(self, info: PodInfo, now: datetime, queued_at: datetime | None) -> datetime | None:
        """A pending pod the queue does not have (new, or held and updated): None when a
        plugin holds it, else the time it entered the queue (`queued_at` or `now`, or when it
        was first held)."""
        arrived = now if queued_at is None else min(queued_at, now)
        if not self._plugins:
            return arrived
        hold = self._held.get(info.key)
        verdict = self._check(info)
        if verdict is None:
            if hold is None:
                return arrived
            self.drop(info.key)
            return hold.entered
        if hold is None:
            hold = Hold(info, "", "", arrived)
            self._held[info.key] = hold
        hold.info = info
        self._hold(hold, *verdict, now)
        return None

    def release(
        self, plugin: str, only: Set[str] | None, now: datetime
    ) -> list[tuple[PodInfo, datetime]]:
        """An event `plugin`'s handler says may help the pods it holds (`only` those): each is
        checked again; those that pass leave, returned with their queue time, by key."""
        keys = self._by_plugin.get(plugin)
        if not keys:
            return []
        released: list[tuple[PodInfo, datetime]] = []
        for key in sorted(keys if only is None else keys & only):
            hold = self._held[key]
            verdict = self._check(hold.info)
            if verdict is None:
                self.drop(key)
                released.append((hold.info, hold.entered))
            else:
                self._hold(hold, *verdict, now)
        return released

    def drop(self, key: str) -> None:
        """Forget a held pod (it passed, was deleted, bound elsewhere, or is no longer ours)."""
        hold = self._held.pop(key, None)
        if hold is not None:
            self._unindex(hold)

    def due(self, now: datetime) -> list[Action]:
        """The condition and Event of each pod held with one message for the delay."""
        actions: list[Action] = []
        while self._due and self._due[0][0] <= now:
            _, _, key, version = heapq.heappop(self._due)
            hold = self._held.get(key)
            if hold is None or hold.version != version or hold.reported == hold.message:
                continue
            hold.reported = hold.message
            info = hold.info
            condition = scheduled_condition(NOT_READY_FOR_SCHEDULING, hold.message)
            if has_condition(info.pod, condition):
                continue
            actions.append(PatchPodStatus(info.key, info.uid, condition))
            actions.append(
                EmitEvent(
                    regarding=("Pod", info.key, info.uid),
                    type="Normal",
                    reason=NOT_READY_FOR_SCHEDULING,
                    message=hold.message,
                )
            )
        return actions

    def next_report(self) -> datetime | None:
        """When `due` has something to write."""
        while self._due:
            _, _, key, version = self._due[0]
            hold = self._held.get(key)
            if hold is not None and hold.version == version and hold.reported != hold.message:
                return self._due[0][0]
            heapq.heappop(self._due)
        return None

    def _check(self, info: PodInfo) -> tuple[str, str] | None:
        """The first plugin that holds the pod and why; a plugin that raises lets it pass (a
        bug there must not keep pods out of the queue for good)."""
        for plugin in self._plugins:
            try:
                message = plugin.pre_enqueue(info, self._cluster)
            except Exception:
                self.errors += 1
                continue
            if message:
                return plugin.name, message
        return None

    def _unindex(self, hold: Hold) -> None:
        keys = self._by_plugin.get(hold.plugin)
        if keys is not None:
            keys.discard(hold.info.key)
            if not keys:
                del self._by_plugin[hold.plugin]

    def _hold(self, hold: Hold, plugin: str, message: str, now: datetime) -> None:
        if plugin != hold.plugin:
            self._unindex(hold)
            hold.plugin = plugin
            self._by_plugin.setdefault(plugin, set()).add(hold.info.key)
        if message == hold.message:
            return
        hold.message = message
        hold.version += 1
        self._seq += 1
        heapq.heappush(self._due, (now + self.delay, self._seq, hold.info.key, hold.version))
