"""The gang manager on its own (no engine, no plugin): membership from events, quorum, Permit
verdicts, the reject threshold, the denied cache and releasing the members held at Permit."""

from __future__ import annotations

from datetime import timedelta

from apis.core import Pod
from placement.pods.framework.events import ObjectEvent, PodEvent
from placement.pods.framework.interface import PodInfo
from plugins.pods.coscheduling.gangs import POD_GROUP_LABEL, Manager
from plugins.pods.coscheduling.manager import PodGroupManager
from tests.placement.pods.test_engine import T0
from tests.placement.pods.test_gang import pod_group
from tests.plugins.pods.builders import node, snapshot


def member(name: str, group: str = "pg", **spec: object) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "labels": {POD_GROUP_LABEL: group}},
            "spec": {"containers": [{"name": "c"}], **spec},
        }
    )


def manager(backoff: int = 0, threshold: float = 0.1, minimum: int = 3) -> Manager:
    made = PodGroupManager(timedelta(seconds=30), timedelta(seconds=backoff), threshold)
    made.on_group(ObjectEvent("Added", pod_group("pg", minimum)))
    return made


def test_membership_counts_unfinished_pods_of_the_namespace() -> None:
    gangs = manager()
    for name in ("a", "b"):
        assert gangs.on_pod(PodEvent("Added", member(name)), None)  # a new member
    gangs.on_pod(PodEvent("Added", member("c", nodeName="n1")), None)
    done = Pod.model_validate(
        {**member("d").model_dump(by_alias=True), "status": {"phase": "Succeeded"}}
    )
    assert not gangs.on_pod(PodEvent("Added", done), None)  # finished: no member
    gang = gangs.gang("default/pg")
    assert gang is not None
    assert sorted(gang.members) == ["default/a", "default/b", "default/c"]
    assert gang.bound == {"default/c": "n1"} and gang.assigned() == 1
    gangs.on_pod(PodEvent("Deleted", member("b")), None)
    assert gang.pending() == ["default/a"]


def test_permit_waits_until_the_quorum_then_allows_the_waiting() -> None:
    gangs = manager()
    for name in ("a", "b", "c"):
        gangs.on_pod(PodEvent("Added", member(name)), None)
    infos = {n: PodInfo.of(member(n)) for n in ("a", "b", "c")}
    first = gangs.permit(infos["a"], "default/pg", "n1", T0)
    assert first.wait == timedelta(seconds=30)
    assert first.activate == ("default/b", "default/c")  # the first asks for its siblings
    second = gangs.permit(infos["b"], "default/pg", "n1", T0)
    assert second.wait is not None and second.activate == ()
    last = gangs.permit(infos["c"], "default/pg", "n2", T0)
    assert last.wait is None and last.allow == ("default/a", "default/b")


def test_the_reject_threshold_and_the_denied_cache() -> None:
    gangs = manager(backoff=5, threshold=0.5, minimum=4)
    for name in "abcd":
        gangs.on_pod(PodEvent("Added", member(name)), None)
    gang = gangs.ensure("default/pg")
    nodes = snapshot([node("n1")])
    gangs.permit(PodInfo.of(member("a")), "default/pg", "n1", T0)
    assert gangs.rejects_gang(gang)  # 3 of 4 missing: above 50 %
    gangs.permit(PodInfo.of(member("b")), "default/pg", "n1", T0)
    assert not gangs.rejects_gang(gang)  # 2 of 4: not above 50 %
    released = gangs.release(gang, T0, ["default/a", "default/zzz"])
    assert released == ["default/a"] and sorted(gang.permitted) == ["default/b"]
    assert gang.last_failure == T0
    gangs.deny(gang, T0)
    refusal = gangs.pre_filter(PodInfo.of(member("c")), "default/pg", T0, nodes)
    assert refusal is not None and refusal.message == "podGroup default/pg failed recently"
    assert not refusal.resources
    later = T0 + timedelta(seconds=5)
    assert gangs.pre_filter(PodInfo.of(member("c")), "default/pg", later, nodes) is None


def test_without_group_backoff_nothing_is_denied() -> None:
    gangs = manager(backoff=0)
    for name in "abc":
        gangs.on_pod(PodEvent("Added", member(name)), None)
    gang = gangs.ensure("default/pg")
    gangs.deny(gang, T0)
    assert (
        gangs.pre_filter(PodInfo.of(member("a")), "default/pg", T0, snapshot([node("n1")])) is None
    )


def test_a_missing_group_and_too_few_members_are_refused() -> None:
    gangs = manager()
    nodes = snapshot([node("n1")])
    missing = gangs.pre_filter(PodInfo.of(member("x", "other")), "default/other", T0, nodes)
    assert missing is not None and 'PodGroup "other" not found' in missing.message
    gangs.on_pod(PodEvent("Added", member("a")), None)
    few = gangs.pre_filter(PodInfo.of(member("a")), "default/pg", T0, nodes)
    assert few is not None and "cannot find enough sibling pods" in few.message
