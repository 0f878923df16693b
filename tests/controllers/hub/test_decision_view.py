"""The controller's view of PlacementDecisions: newest version wins, our own writes count at
once, echoes are no news, a deletion of ours hides only the stale events that predate it, and
the decisions are found by the placement of their label."""

from __future__ import annotations

from apis.placements import PlacementDecision
from controllers.hub.decision_view import DecisionView
from placement.testing import decision


def versioned(name: str, version: str, clusters: list[str] | None = None) -> PlacementDecision:
    pd = decision("apps", "web", clusters or ["c1"], 1)
    return pd.model_copy(
        update={
            "metadata": pd.metadata.model_copy(update={"name": name, "resource_version": version})
        }
    )


def test_an_older_event_is_ignored_and_the_echo_of_our_write_is_no_news() -> None:
    view = DecisionView()
    assert view.observe(versioned("web-decision-1", "5"), ours=True)
    assert not view.observe(versioned("web-decision-1", "5"))  # the echo
    assert not view.observe(versioned("web-decision-1", "4"))  # older
    assert view.observe(versioned("web-decision-1", "6"))
    assert [row.resource_version for row in view.of("apps", "web")] == ["6"]


def test_events_between_our_delete_and_its_deleted_event_cannot_bring_it_back() -> None:
    view = DecisionView()
    view.observe(versioned("web-decision-1", "5"))
    assert view.observe_deleted("apps/web-decision-1", ours=True) is not None
    assert not view.observe(versioned("web-decision-1", "5"))  # stale, predates the delete
    assert view.of("apps", "web") == []
    assert view.observe_deleted("apps/web-decision-1") is None  # the DELETED event
    assert view.observe(versioned("web-decision-1", "9"))  # a new object of that name


def test_a_deleted_event_before_our_delete_answers_leaves_no_mark_behind() -> None:
    view = DecisionView()
    view.observe(versioned("web-decision-1", "5"))
    assert view.observe_deleted("apps/web-decision-1") is not None  # the event came first
    assert view.observe_deleted("apps/web-decision-1", ours=True) is None  # then the answer
    assert view.observe(versioned("web-decision-1", "9"))  # someone creates it again: news
    assert [pd.name for pd in view.of("apps", "web")] == ["web-decision-1"]
