"""Several profiles in one scheduler, as kube-scheduler runs them: `EngineSet` drives one `Engine`
per profile and looks like one engine to its shells (`controllers.addons.scheduler`,
`placement.pods.simulator.simulation`).

Every engine sees every event and schedules the pending pods whose `spec.schedulerName` is its
profile's; the pods the others bound count on their nodes as any assigned pod does. kube-
scheduler's profiles share one cache, so a pod one profile has placed but whose binding is not
confirmed yet already takes room for the others. `EngineSet` gives the same guarantee: the
moment an engine decides a binding, the others are told the pod is on that node (as an
assigned pod), and told it is gone again if that binding fails; the informer's own update,
when the binding lands, changes nothing for them.

Scheduling takes turns: each call of `schedule` starts with the next engine, so a busy profile
does not starve another. What each engine keeps apart from the others (unlike kube-
scheduler's shared ones): its scheduling queue, its nominations after a preemption, and its
plugins' state (each profile builds its own plugin objects).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from apis.core import Pod
from placement.pods.framework.events import (
    Action,
    BindPod,
    BindResult,
    ClusterEvent,
    PodEvent,
    WakeAt,
)
from placement.pods.framework.interface import Profile
from placement.pods.scheduler.engine import Engine

__all__ = ["EngineSet", "SummedStats", "engine_for"]


class _Engine(Protocol):
    """What `EngineSet` uses of `placement.pods.scheduler.engine.Engine`."""

    stats: Any
    cluster: Any

    def handle(self, event: ClusterEvent, now: datetime) -> list[Action]: ...

    def schedule(self, now: datetime, limit: int | None = None) -> list[Action]: ...

    def next_wake(self) -> datetime | None: ...

    def queue_sizes(self) -> dict[str, int]: ...


class SummedStats:
    """The engines' counters added up, read live (a caller may keep this object and compare
    `cycles` before and after a call)."""

    def __init__(self, engines: Sequence[_Engine]) -> None:
        self._engines = engines

    def _sum(self, name: str) -> int:
        return sum(int(getattr(e.stats, name)) for e in self._engines)

    def _merged(self, name: str) -> dict[str, int]:
        merged: dict[str, int] = {}
        for engine in self._engines:
            for key, value in getattr(engine.stats, name).items():
                merged[key] = merged.get(key, 0) + value
        return merged

    @property
    def attempts(self) -> dict[str, int]:
        return self._merged("attempts")

    @property
    def pod_attempts(self) -> dict[str, int]:
        return self._merged("pod_attempts")

    @property
    def preemption_attempts(self) -> int:
        return self._sum("preemption_attempts")

    @property
    def victims(self) -> int:
        return self._sum("victims")

    @property
    def handler_errors(self) -> int:
        return self._sum("handler_errors")

    @property
    def cycles(self) -> int:
        return self._sum("cycles")


class EngineSet:
    """One engine per profile behind one engine's interface (module docstring)."""

    def __init__(self, engines: Sequence[_Engine]) -> None:
        if not engines:
            raise ValueError("an EngineSet needs at least one engine")
        self.engines = tuple(engines)
        self.stats = SummedStats(self.engines)
        self._turn = 0
        self._lent: dict[str, tuple[int, Pod]] = {}
        """pod key -> (the engine that decided its binding, the bound pod the others saw)."""

    # --- one engine's interface ------------------------------------------------------------

    def handle(self, event: ClusterEvent, now: datetime) -> list[Action]:
        actions: list[Action] = []
        if isinstance(event, BindResult):
            actions.extend(self._settle(event, now))
        for index, engine in enumerate(self.engines):
            actions.extend(self._lending(index, engine.handle(event, now), now))
        if isinstance(event, PodEvent) and event.type == "Deleted":
            self._lent.pop(_key(event.pod), None)
        return _one_wake(actions)

    def handle_many(self, events: Iterable[ClusterEvent], now: datetime) -> list[Action]:
        actions: list[Action] = []
        for event in events:
            actions.extend(self.handle(event, now))
        return actions

    def schedule(self, now: datetime, limit: int | None = None) -> list[Action]:
        """Each engine in turn (starting with the next one each call) until `limit` pods were
        tried in all."""
        actions: list[Action] = []
        count = len(self.engines)
        start, self._turn = self._turn, (self._turn + 1) % count
        left = limit
        for step in range(count):
            index = (start + step) % count
            engine = self.engines[index]
            before = engine.stats.cycles
            actions.extend(self._lending(index, engine.schedule(now, limit=left), now))
            if left is not None:
                left -= engine.stats.cycles - before
                if left <= 0:
                    break
        return _one_wake(actions)

    def next_wake(self) -> datetime | None:
        times = [t for t in (e.next_wake() for e in self.engines) if t is not None]
        return min(times) if times else None

    def queue_sizes(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for engine in self.engines:
            for name, size in engine.queue_sizes().items():
                sizes[name] = sizes.get(name, 0) + size
        return sizes

    def next_report(self) -> datetime | None:
        """The first report of a pod held at PreEnqueue due in any engine."""
        found = [getattr(e, "next_report", None) for e in self.engines]
        times = [t for t in (f() for f in found if callable(f)) if t is not None]
        return min(times) if times else None

    def waiting(self) -> dict[str, str]:
        """Pods held at Permit by any engine: key -> node."""
        held: dict[str, str] = {}
        for engine in self.engines:
            found = getattr(engine, "waiting", None)
            if callable(found):
                held.update(found())
        return held

    def simulation_report(self) -> list[str]:
        """Every engine's report; a line an earlier engine gave already (the same gang or
        quota seen by two profiles' plugins) once."""
        lines: list[str] = []
        for engine in self.engines:
            report = getattr(engine, "simulation_report", None)
            if callable(report):
                seen = set(lines)
                lines.extend(line for line in report() if line not in seen)
        return lines

    # --- the shared view of decided bindings -----------------------------------------------

    def _lending(self, owner: int, actions: list[Action], now: datetime) -> list[Action]:
        """`actions` of engine `owner`, followed by what the others do when told of each
        binding it decided (the pod is on that node for them from now on)."""
        if len(self.engines) == 1:
            return actions
        told: list[Action] = []
        for action in actions:
            if not isinstance(action, BindPod) or action.key in self._lent:
                continue
            info = self.engines[owner].cluster.pod(action.key)
            if info is None:
                continue
            spec = info.pod.spec.model_copy(update={"node_name": action.node})
            bound = info.pod.model_copy(update={"spec": spec})
            self._lent[action.key] = (owner, bound)
            for index, engine in enumerate(self.engines):
                if index != owner:
                    told.extend(engine.handle(PodEvent("Modified", bound), now))
        return actions + told

    def _settle(self, result: BindResult, now: datetime) -> list[Action]:
        """A binding failed: the others forget the pod they were lent (it is pending again,
        and not theirs)."""
        lent = self._lent.pop(result.key, None)
        if lent is None or result.ok:
            return []
        owner, bound = lent
        actions: list[Action] = []
        for index, engine in enumerate(self.engines):
            if index != owner:
                actions.extend(engine.handle(PodEvent("Deleted", bound), now))
        return actions


def engine_for(profiles: Sequence[Profile], **options: Any) -> Engine | EngineSet:
    """The engine of these profiles: an `Engine` for one (nothing added on the hot path), an
    `EngineSet` of one `Engine` each for several. `options`: the Engine's (queue timings)."""
    engines = [Engine(profile, **options) for profile in profiles]
    return engines[0] if len(engines) == 1 else EngineSet(engines)


def _one_wake(actions: list[Action]) -> list[Action]:
    """The actions with one WakeAt, the earliest, where the engines asked for several."""
    wakes = [a for a in actions if isinstance(a, WakeAt)]
    if len(wakes) <= 1:
        return actions
    rest = [a for a in actions if not isinstance(a, WakeAt)]
    return [*rest, min(wakes, key=lambda w: w.at)]


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or ''}/{pod.metadata.name or ''}"
