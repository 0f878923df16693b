"""PodDisruptionBudgets in default preemption, as kube-scheduler v1.36 reads them: victims
split by budget (spent most important first, `disruptedPods` not counted twice, an empty
selector matching nothing), the violating ones reprieved first, and the node whose victims
violate the fewest budgets chosen before any other criterion (kube's default_preemption tests
as a guide)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apis.core import Pod
from apis.policy import PodDisruptionBudget
from placement.pods.framework.events import ObjectEvent
from placement.pods.framework.interface import Candidate, PodInfo
from placement.pods.preemption.disruption import Budget, split_by_budgets
from placement.pods.preemption.victims import pick_candidate
from tests.placement.pods.test_engine import T0, World, make_node, make_pod
from tests.placement.pods.test_preemption import deleted, running


def labelled(pod: Pod, **labels: str) -> Pod:
    wire = pod.to_wire()
    wire["metadata"]["labels"] = labels
    return Pod.model_validate(wire)


def budget(
    name: str,
    allowed: int,
    match: dict[str, str] | None,
    namespace: str = "default",
    disrupted: tuple[str, ...] = (),
) -> PodDisruptionBudget:
    spec: dict[str, Any] = {"minAvailable": 1}
    if match is not None:
        spec["selector"] = {"matchLabels": match}
    status: dict[str, Any] = {"disruptionsAllowed": allowed}
    if disrupted:
        status["disruptedPods"] = dict.fromkeys(disrupted, "2026-01-01T00:00:00Z")
    return PodDisruptionBudget.model_validate(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
            "status": status,
        }
    )


def info(name: str, namespace: str = "default", **labels: str) -> PodInfo:
    return PodInfo.of(labelled(make_pod(name, namespace=namespace), **labels))


def budgets(*objs: PodDisruptionBudget) -> list[Budget]:
    out = []
    for obj in objs:
        selector = obj.spec.selector if obj.spec else None
        if selector is not None and (selector.match_labels or selector.match_expressions):
            out.append(Budget(obj.namespace or "", selector, obj.disruptions_allowed, frozenset(
                (obj.status.disrupted_pods or {}) if obj.status else ()
            )))  # fmt: skip
    return out


def names(pods: list[PodInfo]) -> list[str]:
    return [p.pod.metadata.name or "" for p in pods]


def test_budgets_are_spent_by_the_most_important_pods_first() -> None:
    pods = [info("p1", app="web"), info("p2", app="web"), info("p3", app="web")]
    bad, good = split_by_budgets(pods, budgets(budget("web", 1, {"app": "web"})))
    assert (names(bad), names(good)) == (["p2", "p3"], ["p1"])


def test_disrupted_pods_other_namespaces_unlabelled_pods_and_empty_selectors_do_not_count() -> None:
    pods = [
        info("gone", app="web"),
        info("p1", app="web"),
        info("p2", namespace="other", app="web"),
        info("bare"),
        info("p3", app="db"),
    ]
    found = budgets(
        budget("web", 1, {"app": "web"}, disrupted=("gone",)),
        budget("all", 0, {}),  # an empty selector matches nothing in the scheduler
        budget("none", 0, None),
    )
    assert len(found) == 1
    bad, good = split_by_budgets(pods, found)
    assert (names(bad), names(good)) == ([], ["gone", "p1", "p2", "bare", "p3"])


def test_a_pod_matching_two_budgets_violates_when_either_runs_out() -> None:
    pods = [info("p1", app="web", tier="front"), info("p2", app="web", tier="front")]
    found = budgets(budget("app", 5, {"app": "web"}), budget("tier", 1, {"tier": "front"}))
    assert names(split_by_budgets(pods, found)[0]) == ["p2"]


def _candidate(node: str, violations: int, *priorities: int) -> Candidate:
    victims = tuple(
        PodInfo.of(make_pod(f"{node}-{i}", priority=p, node=node)) for i, p in enumerate(priorities)
    )
    return Candidate(node, 0, victims, violations)


def test_fewest_violations_wins_before_the_lowest_priority() -> None:
    picked = pick_candidate(
        [_candidate("a", 1, 1), _candidate("b", 0, 100, 100), _candidate("c", 2, 0)], T0
    )
    assert picked is not None and picked.node == "b"


def _world(*pods: Pod, objs: tuple[PodDisruptionBudget, ...] = (), nodes: int = 2) -> World:
    world = World.of()
    world.add_nodes(*(make_node(n, cpu=2) for n in "ab"[:nodes]))
    for obj in objs:
        world.engine.handle(ObjectEvent("Added", obj), world.now)
    world.add_pods(*pods)
    return world


def test_a_budget_keeps_a_victim_alive_when_another_node_works() -> None:
    pods = (
        labelled(running("web", "a", 2, priority=1), app="web"),
        running("batch", "b", 2, priority=5),
    )
    world = _world(*pods)
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    assert deleted(world.engine.schedule(T0)) == ["web"]  # the lowest priority, no budget

    world = _world(*pods, objs=(budget("web", 0, {"app": "web"}),))
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    assert deleted(world.engine.schedule(T0)) == ["batch"]


def test_violating_victims_are_reprieved_first() -> None:
    pods = (
        labelled(running("web-hi", "a", 1, priority=3), app="web"),
        running("other", "a", 1, priority=2),
        labelled(running("web-lo", "a", 1, priority=1), app="web"),
    )
    grown = make_node("a", cpu=3)
    for objs, victim in (((), "web-lo"), ((budget("web", 0, {"app": "web"}),), "other")):
        world = World.of()
        world.add_nodes(grown)
        for obj in objs:
            world.engine.handle(ObjectEvent("Added", obj), world.now)
        world.add_pods(*pods, make_pod("vip", cpu=1, priority=10))
        assert deleted(world.engine.schedule(T0)) == [victim]


def test_a_budget_is_violated_when_nothing_else_works() -> None:
    """kube's documentation (Pod Priority and Preemption): budgets are honoured on a best
    effort basis; when only victims a budget protects make room, they are preempted."""
    world = _world(
        labelled(running("web", "a", 2, priority=1), app="web"),
        objs=(budget("web", 0, {"app": "web"}),),
        nodes=1,
    )
    world.add_pods(make_pod("vip", cpu=2, priority=10))
    assert deleted(world.engine.schedule(T0)) == ["web"]


@settings(max_examples=40, deadline=None)
@given(
    layout=st.lists(
        st.tuples(st.integers(0, 3), st.integers(1, 5), st.booleans()), min_size=1, max_size=10
    ),
    allowed=st.integers(0, 2),
)
def test_no_budget_is_violated_when_a_non_violating_choice_exists(
    layout: list[tuple[int, int, bool]], allowed: int
) -> None:
    """Pods of 1 cpu on four nodes of 2 cpu, some protected by one budget; a preemptor of 2 cpu:
    if some node's lower-priority pods can all go without spending more than the budget allows,
    the chosen victims violate no budget."""
    nodes = [make_node(n, cpu=2) for n in "abcd"]
    pods, on = [], dict.fromkeys("abcd", 0)
    for i, (where, priority, protected) in enumerate(layout):
        node = "abcd"[where]
        if on[node] == 2:
            continue
        on[node] += 1
        pod = running(f"p{i}", node, 1, priority=priority, started=T0 - timedelta(seconds=i))
        pods.append(labelled(pod, app="web") if protected else pod)
    world = World.of()
    world.add_nodes(*nodes)
    world.engine.handle(ObjectEvent("Added", budget("web", allowed, {"app": "web"})), T0)
    world.add_pods(*pods, make_pod("vip", cpu=2, priority=10))
    gone = set(deleted(world.engine.schedule(T0)))
    guarded = {p.metadata.name or "" for p in pods if (p.metadata.labels or {}).get("app")}
    by_node: dict[str, list[Pod]] = {}
    for p in pods:
        by_node.setdefault(p.spec.node_name or "", []).append(p)
    # A node needs every pod gone (2 cpu of 2); it violates nothing when it has at most
    # `allowed` protected pods.
    clean = any(
        sum(1 for p in ps if p.metadata.name in guarded) <= allowed for ps in by_node.values()
    ) or any(n not in by_node for n in "abcd")
    if clean:
        assert len(gone & guarded) <= allowed, (gone, guarded)
