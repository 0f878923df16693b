"""resourceVersions compared: newer ones are news, integers are ordered, opaque ones differ.
(`Latest` itself is exercised through the hub's `DecisionView`, in
`tests/controllers/hub/test_decision_view.py`.)"""

from __future__ import annotations

from controllers.runtime.views import newer


def test_integer_versions_are_compared_and_opaque_ones_differ() -> None:
    assert newer("12", "9")
    assert not newer("9", "12")
    assert not newer("12", "12")
    assert newer("b", "a")
    assert newer("1", None)
