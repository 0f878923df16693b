"""The write-through view of any kind: resourceVersions compared (integers ordered, opaque ones
differ), newest version wins, our own writes count at once, echoes are no news, and a deletion
of ours hides only the stale events that predate it. The hub's `DecisionView` adds its index on
top (`tests/controllers/hub/test_decision_view.py`)."""

from __future__ import annotations

from apis.core import Lease
from apis.meta import ObjectMeta
from controllers.runtime.views import Latest, newer


def lease(name: str, version: str) -> Lease:
    return Lease(metadata=ObjectMeta(name=name, namespace="ops", resource_version=version))


def test_integer_versions_are_compared_and_opaque_ones_differ() -> None:
    assert newer("12", "9")
    assert not newer("9", "12")
    assert not newer("12", "12")
    assert newer("b", "a")
    assert newer("1", None)


def test_the_newest_version_of_any_kind_wins_and_the_echo_of_our_write_is_no_news() -> None:
    view: Latest[Lease] = Latest()
    assert view.observe(lease("a", "5"), ours=True)
    assert not view.observe(lease("a", "5"))  # the echo of our write
    assert not view.observe(lease("a", "4"))  # older
    assert view.observe(lease("a", "7"))
    assert view.observe(lease("b", "6"))
    current = view.get("ops/a")
    assert current is not None
    assert current.metadata.resource_version == "7"
    assert sorted(obj.name for obj in view) == ["a", "b"]
    assert len(view) == 2


def test_after_our_delete_only_its_deleted_event_clears_the_way_for_the_name() -> None:
    view: Latest[Lease] = Latest()
    view.observe(lease("a", "5"))
    assert view.observe_deleted("ops/a", ours=True) is not None
    assert not view.observe(lease("a", "5"))  # stale: it predates our delete
    assert view.get("ops/a") is None
    assert view.observe_deleted("ops/a") is None  # the DELETED event: nothing left to forget
    assert view.observe(lease("a", "9"))  # a new object of that name is news
