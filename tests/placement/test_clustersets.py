"""Cluster sets and bindings: which clusters a placement may choose from (OCM's rules:
docs/hub-admins.md, 'Cluster sets')."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from apis.meta import KubeObject
from placement.clustersets import Availability, availability
from placement.testing import binding, cluster, cluster_set, placement, snapshot

CLUSTERS: list[KubeObject] = [
    cluster("p1", labels={"provider": "aws"}, cluster_set="prod"),
    cluster("p2", labels={"provider": "gcp"}, cluster_set="prod"),
    cluster("d1", labels={"provider": "aws"}, cluster_set="dev"),
    cluster("loose", labels={"provider": "azure"}),
    cluster("leaving", cluster_set="prod", deleting=True),
]


def available(
    objects: Sequence[KubeObject], sets: Sequence[str] = ()
) -> tuple[Availability, list[str]]:
    fleet = snapshot([*CLUSTERS, *objects])
    result = availability(placement("apps", "p", clusterSets=list(sets)), fleet)
    return result, fleet.rows_to_names(np.flatnonzero(result.available))


def test_exclusive_label_set_has_the_labelled_clusters_not_being_deleted() -> None:
    result, names = available([cluster_set("prod"), binding("apps", "prod")])
    assert names == ["p1", "p2"]
    assert result.eligible_sets == ("prod",)


def test_label_selector_set_selects_by_labels() -> None:
    _, names = available(
        [cluster_set("aws", {"matchLabels": {"provider": "aws"}}), binding("apps", "aws")]
    )
    assert names == ["d1", "p1"]


def test_empty_label_selector_selects_every_cluster() -> None:
    _, names = available([cluster_set("global", {}), binding("apps", "global")])
    assert names == ["d1", "loose", "p1", "p2"]


def test_sets_are_unioned() -> None:
    _, names = available(
        [cluster_set("prod"), cluster_set("dev"), binding("apps", "prod"), binding("apps", "dev")]
    )
    assert names == ["d1", "p1", "p2"]


def test_binding_must_name_an_existing_set() -> None:
    result, names = available([cluster_set("prod"), binding("apps", "staging")])
    assert not result.has_bindings
    assert names == []


def test_binding_in_another_namespace_does_not_count() -> None:
    result, _ = available([cluster_set("prod"), binding("other", "prod")])
    assert not result.has_bindings


@pytest.mark.parametrize(
    ("wanted", "eligible", "names"),
    [
        pytest.param([], ("dev", "prod"), ["d1", "p1", "p2"], id="empty-means-all-bound"),
        pytest.param(["dev"], ("dev",), ["d1"], id="intersection"),
        pytest.param(["dev", "unbound"], ("dev",), ["d1"], id="unbound-names-ignored"),
        pytest.param(["unbound"], (), [], id="no-intersection"),
    ],
)
def test_spec_cluster_sets_intersect_the_bound_sets(
    wanted: list[str], eligible: tuple[str, ...], names: list[str]
) -> None:
    objects = [
        cluster_set("prod"),
        cluster_set("dev"),
        binding("apps", "prod"),
        binding("apps", "dev"),
    ]
    result, got = available(objects, wanted)
    assert result.eligible_sets == eligible
    assert got == names


def test_label_selector_set_without_selector_selects_nothing() -> None:
    empty = cluster_set("odd", {})
    empty.spec.cluster_selector.label_selector = None
    _, names = available([empty, binding("apps", "odd")])
    assert names == []
