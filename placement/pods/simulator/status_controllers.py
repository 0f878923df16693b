"""The status controllers `scheduler simulate` plays beside the scheduler: the PodGroup and
ElasticQuota status rules (`placement.pods.status.rules`) and kube's disruption controller
(`placement.pods.status.disruption`), run on the simulated world; each changed status goes
into the object (the engine sees it), with the rule's events."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Literal, Protocol

from apis.core import Node, Pod
from apis.meta import KubeObject
from placement.pods.framework.events import ClusterEvent, EmitEvent, ObjectEvent
from placement.pods.status.rule import StatusOutcome, StatusRule, same_status

__all__ = ["StatusView", "World", "apply_status_rules"]


class World(Protocol):
    """What the status controllers read and write of the simulated world
    (`placement.pods.simulator.world.World`)."""

    now: datetime
    objects: dict[tuple[str, str], KubeObject]
    noticed: set[tuple[str, str, str, str]]
    status_wake: datetime | None

    def pods_in(self, namespace: str) -> Iterable[Pod]: ...

    def objects_of(self, kind: str) -> Mapping[str, KubeObject]: ...

    def record(self, action: EmitEvent) -> None: ...

    def feed(self, event: ClusterEvent) -> None: ...


def apply_status_rules(world: World, rules: Sequence[StatusRule]) -> None:
    """What the status controllers would write now: each changed status goes into the object
    (the engine sees it), with the rule's events."""
    view = StatusView(world)
    for rule in rules:
        for key, obj in sorted(world.objects_of(rule.kind).items()):
            outcome = rule.compute(obj, view, world.now)
            _notice(world, rule.kind, key, obj, outcome)
            if outcome.status is None:
                continue
            wire = obj.to_wire()
            if same_status(wire.get("status"), outcome.status):
                continue
            updated = type(obj).model_validate({**wire, "status": dict(outcome.status)})
            world.objects[(rule.kind, key)] = updated
            uid = obj.metadata.uid or ""
            for event in outcome.events:
                severity: Literal["Normal", "Warning"] = (
                    "Warning" if event.type == "Warning" else "Normal"
                )
                regarding = (rule.kind, key, uid)
                world.record(EmitEvent(regarding, severity, event.reason, event.message))
            world.feed(ObjectEvent("Modified", updated))


def _notice(world: World, kind: str, key: str, obj: KubeObject, outcome: StatusOutcome) -> None:
    """Record the outcome's notices once per object and reason, as the controller emits them;
    note when the rule wants to look again."""
    uid = obj.metadata.uid or ""
    for notice in outcome.notices:
        if (kind, key, uid, notice.reason) not in world.noticed:
            world.noticed.add((kind, key, uid, notice.reason))
            severity: Literal["Normal", "Warning"] = (
                "Warning" if notice.type == "Warning" else "Normal"
            )
            world.record(EmitEvent((kind, key, uid), severity, notice.reason, notice.message))
    if outcome.requeue_at is not None and outcome.requeue_at > world.now:
        wake = world.status_wake
        world.status_wake = outcome.requeue_at if wake is None else min(wake, outcome.requeue_at)


class StatusView:
    """The simulated world as the status rules read it (`StatusWorld`)."""

    def __init__(self, world: World) -> None:
        self._world = world

    def pods_in(self, namespace: str) -> Iterable[Pod]:
        return self._world.pods_in(namespace)

    def objects(self, kind: str) -> Mapping[str, KubeObject]:
        return self._world.objects_of(kind)

    def nodes(self) -> Iterable[Node]:
        return [o for o in self._world.objects_of("Node").values() if isinstance(o, Node)]
