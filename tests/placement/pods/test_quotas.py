"""The ElasticQuota status rule: `used` over min ∪ max from bound, unfinished pods; one quota in
force per namespace, the others flagged; Σmin above the nodes' allocatable surfaced."""

from __future__ import annotations

from typing import Any

from apis.scheduling import ElasticQuota
from placement.pods.status.elasticquotas import (
    ACTIVE,
    MIN_WITHIN_CAPACITY,
    ElasticQuotaStatusRule,
    quantity_text,
    quota_used,
)
from placement.pods.status.rule import StatusOutcome
from tests.placement.pods.status_world import T0, ListWorld, node, pod, quota

RULE = ElasticQuotaStatusRule()


def compute(world: ListWorld, target: ElasticQuota) -> StatusOutcome:
    return RULE.compute(target, world, T0)


def condition(outcome: StatusOutcome, kind: str) -> tuple[str, str, str] | None:
    assert outcome.status is not None
    for c in outcome.status.get("conditions", []):
        if c["type"] == kind:
            return c["status"], c["reason"], c["message"]
    return None


def test_used_has_every_resource_of_min_and_max_counting_bound_unfinished_pods() -> None:
    q = quota("a", min={"cpu": "2"}, max={"cpu": "4", "nvidia.com/gpu": 2, "memory": "8Gi"})
    pods = [
        pod("bound", "a", node="n1", requests={"cpu": "500m", "nvidia.com/gpu": 1}),
        pod("running", "a", node="n1", phase="Running", requests={"cpu": "1", "memory": "1Gi"}),
        pod("pending", "a", requests={"cpu": "3"}),  # not bound: not counted
        pod("done", "a", node="n1", phase="Succeeded", requests={"cpu": "3"}),
        pod("failed", "a", node="n1", phase="Failed", requests={"cpu": "3"}),
        pod("no-requests", "a", node="n1"),
    ]
    assert quota_used(q, pods) == {"cpu": 1500, "nvidia.com/gpu": 1, "memory": 2**30}
    outcome = compute(ListWorld(pods=pods, groups=[q], nodes_=[node("n1", cpu=8)]), q)
    assert outcome.status is not None
    assert outcome.status["used"] == {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"}


def test_an_idle_quota_reports_zero_for_each_of_its_resources() -> None:
    q = quota("a", min={"cpu": "2"}, max={"memory": "1Gi"})
    outcome = compute(ListWorld(groups=[q], nodes_=[node("n1", cpu=8)]), q)
    assert outcome.status is not None
    assert outcome.status["used"] == {"cpu": "0", "memory": "0"}


def test_pods_of_other_namespaces_do_not_count() -> None:
    q = quota("a", max={"cpu": "4"})
    world = ListWorld(pods=[pod("x", "b", node="n1", requests={"cpu": "1"})], groups=[q])
    outcome = compute(world, q)
    assert outcome.status is not None
    assert outcome.status["used"] == {"cpu": "0"}


def test_a_second_quota_in_a_namespace_is_flagged_once_and_keeps_no_used() -> None:
    old, young = (
        quota("a", "first", max={"cpu": "4"}, age=10),
        quota("a", "second", max={"cpu": "2"}),
    )
    world = ListWorld(pods=[pod("p", "a", node="n1", requests={"cpu": "1"})], groups=[young, old])
    outcome = compute(world, young)
    assert outcome.status is not None
    assert "used" not in outcome.status
    status, reason, message = condition(outcome, ACTIVE) or ("", "", "")
    assert (status, reason) == ("False", "Duplicate")
    assert 'already has ElasticQuota "first" in force' in message
    assert [(e.type, e.reason) for e in outcome.events] == [("Warning", "DuplicateElasticQuota")]
    # Computed again from the status it wrote: no second event.
    again = quota("a", "second", max={"cpu": "2"}, status=dict(outcome.status))
    world.groups = [again, old]
    assert compute(world, again).events == ()
    # The one in force is active and counts the pod.
    active = compute(world, old)
    assert condition(active, ACTIVE) == ("True", "InForce", "this quota is in force")
    assert active.status is not None and active.status["used"] == {"cpu": "1"}


def test_min_above_the_nodes_allocatable_is_surfaced_on_every_quota_with_an_event() -> None:
    a = quota("a", min={"cpu": "6", "nvidia.com/gpu": 4})
    b = quota("b", min={"cpu": "6"})
    world = ListWorld(groups=[a, b], nodes_=[node("n1", cpu=8), node("n2", cpu="2")])
    for q in (a, b):
        outcome = compute(world, q)
        status, reason, message = condition(outcome, MIN_WITHIN_CAPACITY) or ("", "", "")
        assert (status, reason) == ("False", "MinAboveCapacity")
        assert "cpu: min 12 > allocatable 10" in message
        assert "nvidia.com/gpu: min 4 > allocatable 0" in message
        assert [e.reason for e in outcome.events] == ["MinAboveCapacity"]


def test_min_within_the_allocatable_fits_and_raises_no_event() -> None:
    a = quota("a", min={"cpu": "6"})
    world = ListWorld(groups=[a], nodes_=[node("n1", cpu=8)])
    outcome = compute(world, a)
    assert condition(outcome, MIN_WITHIN_CAPACITY) == (
        "True",
        "Fits",
        "the quotas' min fits in the nodes' allocatable",
    )
    assert outcome.events == ()


def test_the_transition_time_stays_while_the_condition_holds() -> None:
    a = quota("a", min={"cpu": "6"})
    world = ListWorld(groups=[a], nodes_=[node("n1", cpu=8)])
    first = compute(world, a)
    assert first.status is not None
    later = quota("a", min={"cpu": "6"}, status=dict(first.status))
    second = RULE.compute(
        later, ListWorld(groups=[later], nodes_=[node("n1", cpu=8)]), T0.replace(hour=13)
    )
    assert second.status == first.status


def test_a_pod_concerns_the_quotas_of_its_namespace() -> None:
    objects: dict[str, Any] = {"a/q": quota("a", "q"), "b/q": quota("b", "q")}
    assert list(RULE.affected(pod("p", "a"), objects)) == ["a/q"]


def test_quantities_read_as_kubernetes_prints_them() -> None:
    assert quantity_text("cpu", 1500) == "1500m"
    assert quantity_text("cpu", 2000) == "2"
    assert quantity_text("memory", 3 * 2**30) == "3Gi"
    assert quantity_text("memory", 512 * 2**20) == "512Mi"
    assert quantity_text("memory", 1000) == "1000"
    assert quantity_text("nvidia.com/gpu", 0) == "0"


def test_both_rules_are_status_rules() -> None:
    from placement.pods.status.podgroups import PodGroupStatusRule
    from placement.pods.status.rule import StatusRule

    rules: list[StatusRule] = [ElasticQuotaStatusRule(), PodGroupStatusRule()]
    assert [(r.kind, r.watches_nodes, r.couples_objects) for r in rules] == [
        ("ElasticQuota", True, True),
        ("PodGroup", False, False),
    ]
