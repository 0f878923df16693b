"""Default preemption on arrays (`placement.pods.preemption.victim_table`) against the per-pod
search it replaces (`find_candidates` + `pick_candidate`, still taken when a plugin hooks in): the
same victims, nominations and bindings on seeded random worlds.

A plugin that declares `PreemptionHooks` and overrides nothing changes no decision but sends
the preemptor down the per-pod path, so two engines, one with such a plugin, must act alike
step for step. The worlds mix priorities, start times (absent, past, ahead of the clock),
several resources, a small candidate limit (kube's sampling) and, in some, pods anti-affine to
their own kind (a filter that reads the removed pods: the batched passes are decided again row
by row)."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from apis.core import Pod
from placement.pods.framework.events import Action, BindPod, DeletePod, PatchPodStatus
from placement.pods.framework.interface import EventHandler, PreemptionHooks, Profile
from placement.pods.preemption import preemption, victim_table
from tests.placement.pods.test_engine import T0, World, default_profile, make_node, make_pod
from tests.placement.pods.test_preemption import running


@dataclass
class Inert(EventHandler, PreemptionHooks):
    """Declares the hooks, overrides none: the per-pod path, the same decisions."""

    name: str = "Inert"

    def on_event(self, event: Any, cluster: Any) -> bool:
        return False


def profile(limit: int | None, inert: bool) -> Profile:
    args: dict[str, Any] = {}
    if limit is not None:
        args = {
            "pluginArgs": {
                "DefaultPreemption": {
                    "minCandidateNodesPercentage": 1,
                    "minCandidateNodesAbsolute": limit,
                }
            }
        }
    base = default_profile(**args)
    if not inert:
        return base
    # The same profile but for the inert hooks plugin: only the preemption path differs.
    return dataclasses.replace(base, handlers=(*base.handlers, Inert()))


def anti_affine(pod: Pod) -> Pod:
    wire = pod.model_dump(by_alias=True, exclude_none=True)
    wire["metadata"]["labels"] = {"app": "web"}
    wire["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    return Pod.model_validate(wire)


def world_parts(seed: int) -> tuple[list[Any], list[Pod], list[Pod], int | None]:
    rng = random.Random(seed)
    cpus = [rng.choice([2, 3, 4, 8]) for _ in range(rng.randint(2, 24))]
    nodes = [
        make_node(
            f"n{i:02d}",
            cpu=cpu,
            memory=rng.choice(["4Gi", "8Gi"]),
            labels={"kubernetes.io/hostname": f"n{i:02d}"},
        )
        for i, cpu in enumerate(cpus)
    ]
    anti = seed % 4 == 0
    before: list[Pod] = []
    for node, cpu in zip(nodes, cpus, strict=True):
        name = str(node.metadata.name)
        used = 0
        for j in range(rng.randint(1, 8)):
            want = rng.choice([1, 1, 2])
            if used + want > cpu:
                continue
            used += want
            shift = rng.choice([None, -3600, -60, -60, 0, 120])
            pod = running(f"{name}-p{j}", name, want, priority=rng.choice([0, 0, 1, 5, 7, 20]))
            if shift is None:
                wire = pod.model_dump(by_alias=True, exclude_none=True)
                wire["status"].pop("startTime", None)
                pod = Pod.model_validate(wire)
            else:
                started = (T0 + timedelta(seconds=shift)).isoformat()
                wire = pod.model_dump(by_alias=True, exclude_none=True)
                wire["status"]["startTime"] = started
                if rng.random() < 0.3:
                    wire["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1Gi"
                pod = Pod.model_validate(wire)
            if anti and rng.random() < 0.4:
                pod = anti_affine(pod)
            before.append(pod)
    pending: list[Pod] = []
    for k in range(rng.randint(2, 10)):
        pod = make_pod(
            f"vip-{k}",
            cpu=rng.choice([1, 2, 3]),
            priority=rng.choice([1, 6, 10, 10, 30]),
            created=T0 + timedelta(seconds=k),
        )
        if anti and rng.random() < 0.5:
            pod = anti_affine(pod)
        pending.append(pod)
    limit = rng.choice([None, 1, 2, 3])
    return nodes, before, pending, limit


def trace(actions: list[Action]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for a in actions:
        if isinstance(a, BindPod):
            out.append(("bind", a.key, a.node))
        elif isinstance(a, DeletePod):
            out.append(("delete", a.key, a.reason))
        elif isinstance(a, PatchPodStatus):
            if a.nominated_node is not None:
                out.append(("nominate", a.key, a.nominated_node))
            if a.condition is not None:  # the preemption's failures are in the message
                out.append(("status", a.key, str(a.condition.get("message"))))
    return out


def play(seed: int, inert: bool) -> tuple[list[tuple[str, ...]], int]:
    nodes, before, pending, limit = world_parts(seed)
    world = World.of(profile(limit, inert))
    world.add_nodes(*nodes)
    world.add_pods(*before)
    world.add_pods(*pending)
    actions = world.run(until=T0 + timedelta(minutes=10), steps=60)
    return trace(actions), world.engine.stats.preemption_attempts


@pytest.mark.parametrize("seed", range(60))
def test_arrays_decide_as_the_per_pod_search(seed: int) -> None:
    fast, attempts = play(seed, inert=False)
    slow, slow_attempts = play(seed, inert=True)
    assert fast == slow
    assert attempts == slow_attempts


def test_the_random_worlds_do_preempt_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above is about preemptions: most worlds have some, decided on arrays
    without the inert plugin (and, where a filter reads the removed pods, handed over)."""
    calls = {"arrays": 0, "handed": 0}

    def counted(name: str, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(
        preemption, "best_candidate", counted("arrays", victim_table.best_candidate)
    )
    monkeypatch.setattr(victim_table, "_listed", counted("handed", victim_table._listed))
    preempting = sum(1 for seed in range(60) if any(t[0] == "delete" for t in play(seed, False)[0]))
    assert preempting >= 30
    assert calls["arrays"] >= preempting and calls["handed"] > 0


@pytest.mark.parametrize("inert", [False, True])
def test_a_victims_new_start_time_is_seen_by_the_next_preemption(inert: bool) -> None:
    """Nodes' ranked pods are kept between preemptions: a running pod whose status changes
    (here its start time) is ranked again."""
    world = World.of(profile(None, inert))
    world.add_nodes(*(make_node(n, cpu=1) for n in "abc"))
    world.add_pods(
        running("a-p", "a", 1, priority=1, started=T0 - timedelta(seconds=300)),
        running("b-p", "b", 1, priority=1, started=T0 - timedelta(seconds=200)),
        running("c-p", "c", 1, priority=1, started=T0 - timedelta(seconds=100)),
        make_pod("vip-1", cpu=1, priority=10),
    )
    first = trace(world.run(until=T0 + timedelta(minutes=1)))
    assert ("delete", "default/c-p") in [t[:2] for t in first]  # the latest start goes
    assert world.node_of("default/vip-1") == "c"
    older = running("b-p", "b", 1, priority=1, started=T0 - timedelta(seconds=400))
    world.add_pods(older)  # Modified: b-p started earlier than a-p after all
    world.add_pods(make_pod("vip-2", cpu=1, priority=10, created=T0 + timedelta(seconds=1)))
    second = trace(world.run(until=T0 + timedelta(minutes=2)))
    assert [t[1] for t in second if t[0] == "delete"] == ["default/a-p"]
