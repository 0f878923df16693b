"""One object's labels against a selector (`labels_match`, `set_contains`) agree with the
fleet-wide masks the scheduler uses, on random labels and selectors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.cluster import ManagedCluster
from apis.meta import LabelSelector
from placement.clustersets import set_contains, set_members
from placement.selectors import SelectorError, labels_match, selector_mask
from placement.testing import cluster, cluster_set, snapshot

KEYS = ("env", "zone", "tier")
VALUES = ("a", "b", "c")

labelsets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
requirements = st.builds(
    lambda key, operator, values: {
        "key": key,
        "operator": operator,
        **({"values": values} if operator in ("In", "NotIn") else {}),
    },
    st.sampled_from(KEYS),
    st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
    st.lists(st.sampled_from(VALUES), min_size=1, max_size=2),
)
selectors = st.builds(
    lambda match, expressions: {"matchLabels": match, "matchExpressions": expressions},
    labelsets,
    st.lists(requirements, max_size=3),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(labelsets, min_size=1, max_size=6), selectors)
def test_labels_match_agrees_with_the_fleet_mask(
    labels: list[dict[str, str]], selector: dict[str, Any]
) -> None:
    clusters: list[ManagedCluster] = [cluster(f"c{i}", labels=x) for i, x in enumerate(labels)]
    fleet = snapshot(clusters)
    parsed = LabelSelector.model_validate(selector)
    mask = selector_mask(parsed, fleet.label, fleet.size)
    for c in clusters:
        assert labels_match(parsed, c.metadata.labels or {}) == bool(mask[fleet.index[c.name]])


@settings(max_examples=100, deadline=None)
@given(st.lists(labelsets, min_size=1, max_size=6), selectors, st.booleans())
def test_set_contains_agrees_with_set_members(
    labels: list[dict[str, str]], selector: dict[str, Any], exclusive: bool
) -> None:
    clusters = [
        cluster(f"c{i}", labels=x, cluster_set="s" if i % 2 else None) for i, x in enumerate(labels)
    ]
    fleet = snapshot(clusters)
    chosen = cluster_set("s") if exclusive else cluster_set("s", selector)
    members = set_members(fleet, chosen)
    for c in clusters:
        assert set_contains(chosen, c.metadata.labels or {}) == bool(members[fleet.index[c.name]])


def test_labels_match_refuses_in_without_values_like_the_mask() -> None:
    bad = LabelSelector.model_validate(
        {"matchExpressions": [{"key": "env", "operator": "In", "values": []}]}
    )
    with pytest.raises(SelectorError, match="values set can't be empty"):
        labels_match(bad, {"env": "a"})


def test_an_empty_selector_matches_any_labels() -> None:
    assert labels_match(LabelSelector(), {})
    assert set_contains(cluster_set("everything", {}), {"env": "a"})
    assert np.all(set_members(snapshot([cluster("x")]), cluster_set("everything", {})))
