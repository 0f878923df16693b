"""Preemption's hooks: which plugins restrict or extend it for a pod (`PreemptionHooks`), the
overridden methods among them, and the victims the `preemption_complete` hooks add to each
candidate (quota preemption: pods on other nodes that free quota headroom)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, cast

from placement.pods.framework.interface import (
    Candidate,
    PodCycle,
    PodInfo,
    PreemptionHooks,
    declares,
    overrides,
)
from placement.pods.preemption.victims import importance_key

__all__ = ["complete_candidates", "hook_plugins", "hooks_of"]


def hooks_of(plugins: Sequence[PreemptionHooks], method: str) -> list[Any]:
    """The bound `method` of every plugin that overrides it, in profile order."""
    return [getattr(p, method) for p in plugins if overrides(p, method)]


def hook_plugins(plugins: Iterable[object], cycle: PodCycle, pod: PodInfo) -> list[PreemptionHooks]:
    """The plugins declaring `PreemptionHooks` whose hooks apply to this pod."""
    found: list[PreemptionHooks] = []
    for plugin in plugins:
        if declares(plugin, PreemptionHooks):
            hooks = cast(PreemptionHooks, plugin)
            if hooks.preemption_applies(cycle, pod):
                found.append(hooks)
    return found


def complete_candidates(
    cycle: PodCycle,
    pod: PodInfo,
    candidates: Sequence[Candidate],
    plugins: Sequence[PreemptionHooks],
) -> list[Candidate]:
    """Each candidate with the victims the `preemption_complete` hooks add (most important
    first); the candidates a hook drops are left out."""
    hooks = hooks_of(plugins, "preemption_complete")
    if not hooks:
        return list(candidates)
    out: list[Candidate] = []
    key = importance_key(cycle.now)
    for candidate in candidates:
        current = candidate
        for hook in hooks:
            extra = hook(cycle, pod, current)
            if extra is None:
                break
            if extra:
                seen = {v.key for v in current.victims}
                victims = [*current.victims, *(v for v in extra if v.key not in seen)]
                victims.sort(key=key)
                current = dataclasses.replace(current, victims=tuple(victims))
        else:
            out.append(current)
    return out
