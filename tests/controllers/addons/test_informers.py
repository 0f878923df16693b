"""PodFeed: the pending and assigned pod informers merged into one story per pod for the engine,
whatever order the two watches deliver a binding in."""

from __future__ import annotations

from typing import Any

from apis.core import Pod
from apis.registry import parse_as
from controllers.addons.informers import ASSIGNED_SELECTOR, PodFeed, pending_selector
from placement.pods.framework.events import BindResult, ClusterEvent, PodEvent


def pod(name: str = "web", uid: str = "u1", node: str | None = None) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "main"}], "schedulerName": "s"}
    if node:
        spec["nodeName"] = node
    return parse_as(
        Pod,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": spec,
        },
    )


def story(events: list[ClusterEvent]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for event in events:
        if isinstance(event, PodEvent):
            out.append((event.type, event.pod.metadata.uid or "", event.pod.spec.node_name or ""))
        elif isinstance(event, BindResult):
            out.append(("BindResult", event.uid, "ok" if event.ok else "failed"))
    return out


def feed() -> tuple[PodFeed, list[ClusterEvent]]:
    events: list[ClusterEvent] = []
    return PodFeed(events.append), events


def test_selectors_are_kube_schedulers() -> None:
    assert pending_selector("ocm-pod-scheduler") == (
        "spec.schedulerName=ocm-pod-scheduler,spec.nodeName="
    )
    assert ASSIGNED_SELECTOR == "spec.nodeName!="


def test_binding_seen_assigned_first_never_reads_as_a_deletion() -> None:
    f, events = feed()
    f.pending_added(pod())
    f.assigned_added(pod(node="n1"))
    f.pending_deleted(pod())
    assert story(events) == [("Added", "u1", ""), ("Modified", "u1", "n1")]


def test_binding_seen_pending_first_after_our_bind_succeeded_is_not_a_deletion() -> None:
    f, events = feed()
    f.pending_added(pod())
    f.bind_started("default/web", "u1")
    f.bind_finished(BindResult("default/web", "u1", "n1", ok=True))
    f.pending_deleted(pod())
    f.assigned_added(pod(node="n1"))
    assert story(events) == [
        ("Added", "u1", ""),
        ("BindResult", "u1", "ok"),
        ("Modified", "u1", "n1"),
    ]


def test_pod_leaving_during_our_bind_is_judged_by_the_bind_result() -> None:
    f, events = feed()
    f.pending_added(pod())
    f.bind_started("default/web", "u1")
    f.pending_deleted(pod())  # deleted by someone while the bind was in flight
    assert story(events) == [("Added", "u1", "")]
    f.bind_finished(BindResult("default/web", "u1", "n1", ok=False, conflict=True))
    assert story(events)[-2:] == [("BindResult", "u1", "failed"), ("Deleted", "u1", "")]
    assert "default/web" not in f.told


def test_pod_leaving_during_a_bind_that_succeeded_stays_assumed() -> None:
    f, events = feed()
    f.pending_added(pod())
    f.bind_started("default/web", "u1")
    f.pending_deleted(pod())
    f.bind_finished(BindResult("default/web", "u1", "n1", ok=True))
    assert story(events) == [("Added", "u1", ""), ("BindResult", "u1", "ok")]


def test_stale_pending_update_of_an_assumed_pod_is_not_passed_on() -> None:
    f, events = feed()
    f.pending_added(pod())
    f.bind_started("default/web", "u1")
    f.pending_updated(pod(), pod())  # the echo of a status patch, decided before the bind
    assert story(events) == [("Added", "u1", "")]


def test_a_real_deletion_of_a_pending_pod_is_passed_on() -> None:
    f, events = feed()
    f.pending_added(pod())
    f.pending_deleted(pod())
    assert story(events) == [("Added", "u1", ""), ("Deleted", "u1", "")]


def test_a_pod_recreated_under_the_same_name_is_a_delete_then_an_add() -> None:
    f, events = feed()
    f.assigned_added(pod(node="n1"))
    f.pending_added(pod(uid="u2"))  # the old one's DELETED not seen yet
    f.assigned_deleted(pod(node="n1"))  # arrives late: already told
    assert story(events) == [("Added", "u1", "n1"), ("Deleted", "u1", "n1"), ("Added", "u2", "")]
    assert f.lookup("default/web") is not None
    assert f.lookup("default/web").metadata.uid == "u2"  # type: ignore[union-attr]


def test_assigned_deletion_is_passed_on() -> None:
    f, events = feed()
    f.assigned_added(pod(node="n1"))
    f.assigned_deleted(pod(node="n1"))
    assert story(events) == [("Added", "u1", "n1"), ("Deleted", "u1", "n1")]
    assert f.lookup("default/web") is None
