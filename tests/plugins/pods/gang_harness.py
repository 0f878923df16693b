"""A watcher around the pod engine for gang tests driven by `scheduler simulate`'s world: it
counts scheduling attempts per pod and per instant, and checks after every call that no
PodGroup is ever partly bound.

The engine is called with a bounded `limit` per `schedule` call and the attempts at one instant
are capped, so an engine that spins (issue 27: a gang whose members activate and reject each
other at one instant) fails the test with a count instead of hanging it."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Any

from apis.core import Pod
from placement.pods.backend.queue import backoff_duration
from placement.pods.framework.events import (
    Action,
    BindPod,
    ClusterEvent,
    DeletePod,
    ObjectEvent,
    PodEvent,
)
from placement.pods.framework.interface import pod_key
from placement.pods.scheduler.engine import Engine
from plugins.pods.coscheduling.coscheduling import group_of

PER_CALL = 200
"""Pods tried per `schedule` call (the simulation calls again while the world moves)."""
SPIN = 1_000
"""Attempts at one instant beyond which the engine is taken to spin."""


class SpinningError(AssertionError):
    """The engine kept trying pods at one instant."""


def attempts_within(window: timedelta, initial: timedelta, maximum: timedelta) -> int:
    """The most attempts one pod can make in `window` when each failure backs it off by kube's
    backoff (`initial` doubled per attempt up to `maximum`): the first at once, each next one
    a backoff later."""
    count, elapsed = 1, timedelta(0)
    while True:
        elapsed += backoff_duration(count, initial, maximum)
        if elapsed > window:
            return count
        count += 1


class Watched:
    """An `EngineLike` over an `Engine` (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.attempts: Counter[str] = Counter()  # pod key -> attempts seen
        self.per_instant: Counter[datetime] = Counter()
        self.min_member: dict[str, int] = {}  # group key -> minMember
        self.group_of: dict[str, str] = {}  # pod key -> group key
        self.bound: set[str] = set()  # pods with a binding sent (and not deleted since)
        self.partly_bound: list[str] = []

    # --- EngineLike ----------------------------------------------------------------------------

    def handle(self, event: ClusterEvent, now: datetime) -> list[Action]:
        if isinstance(event, PodEvent):
            self._on_pod(event)
        elif isinstance(event, ObjectEvent) and event.obj.KIND == "PodGroup":
            meta = event.obj.metadata
            spec: Any = getattr(event.obj, "spec", None)
            self.min_member[pod_key(meta.namespace, meta.name)] = spec.min_member or 0
        actions = self.engine.handle(event, now)
        self._follow(actions)
        return actions

    def schedule(self, now: datetime, limit: int | None = None) -> list[Action]:
        before = dict(self.engine.stats.pod_attempts)
        actions = self.engine.schedule(now, PER_CALL if limit is None else min(limit, PER_CALL))
        for key, count in self.engine.stats.pod_attempts.items():
            tried = count - before.get(key, 0)
            if tried > 0:
                self.attempts[key] += tried
                self.per_instant[now] += tried
        self._follow(actions)
        if self.per_instant[now] > SPIN:
            raise SpinningError(f"{self.per_instant[now]} attempts at {now.isoformat()}")
        return actions

    def next_wake(self) -> datetime | None:
        return self.engine.next_wake()

    def queue_sizes(self) -> dict[str, int]:
        return self.engine.queue_sizes()

    def simulation_report(self) -> list[str]:
        return self.engine.simulation_report()

    # --- what the watcher checks ---------------------------------------------------------------

    def gang_attempts(self, group: str) -> int:
        return sum(n for key, n in self.attempts.items() if self.group_of.get(key) == group)

    def _on_pod(self, event: PodEvent) -> None:
        pod: Pod = event.pod
        key = pod_key(pod.metadata.namespace, pod.metadata.name)
        group = group_of(pod)
        if group is not None:
            self.group_of[key] = group
        if event.type == "Deleted":
            self.bound.discard(key)
        elif pod.spec.node_name:
            self.bound.add(key)

    def _follow(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, BindPod):
                self.bound.add(action.key)
            elif isinstance(action, DeletePod):
                self.bound.discard(action.key)  # a victim: going, no longer counted
        per_group: dict[str, int] = defaultdict(int)
        for key in self.bound:
            group = self.group_of.get(key)
            if group is not None:
                per_group[group] += 1
        for group, count in sorted(per_group.items()):
            minimum = self.min_member.get(group)
            if minimum is not None and 0 < count < minimum:
                self.partly_bound.append(f"{group}: {count} of minMember {minimum} bound")
