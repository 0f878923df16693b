"""`TaintToleration`: OCM's taint filter (NoSelect, NoSelectIfNew, tolerationSeconds, requeue,
validation) and the PreferNoSelect penalty, a deliberate difference (docs/replacing-ocm.md,
'Differences from OCM')."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np
import pytest

from apis.cluster import Taint
from apis.meta import KubeObject
from apis.placements import Toleration
from placement.framework import Code, Cycle, FilterResult
from placement.testing import NOW, cluster, decision, placement, snapshot, taint, toleration
from plugins.tainttoleration import (
    PREFER_NO_SELECT_PENALTY,
    TaintToleration,
    TaintTolerationPrioritizer,
)

HOUR_AGO = NOW - timedelta(hours=1)


def run_filter(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration] = (),
    extra: Sequence[KubeObject] = (),
    now: datetime = NOW,
) -> FilterResult:
    fleet = snapshot([cluster("a", taints=taints), cluster("clean"), *extra])
    web = placement("apps", "web", tolerations=list(tolerations))
    return TaintToleration().filter(Cycle(now), web, fleet, np.ones(fleet.size, bool))


def keeps_tainted(result: FilterResult) -> bool:
    assert result.status.code == Code.SUCCESS, result.status
    assert bool(result.mask[1]), "an untainted cluster always passes"
    return bool(result.mask[0])


@pytest.mark.parametrize(
    ("effect", "kept"),
    [
        pytest.param("NoSelect", False, id="NoSelect-filters"),
        pytest.param("NoSelectIfNew", False, id="NoSelectIfNew-filters-new-clusters"),
        pytest.param("PreferNoSelect", True, id="PreferNoSelect-never-filters"),
    ],
)
def test_untolerated_taint_effects(effect: str, kept: bool) -> None:
    assert keeps_tainted(run_filter([taint("k", effect, "v")])) is kept


def test_no_select_if_new_is_tolerated_for_clusters_already_decided() -> None:
    result = run_filter([taint("k", "NoSelectIfNew", "v")], extra=[decision("apps", "web", ["a"])])
    assert keeps_tainted(result)


def test_no_select_if_new_is_not_tolerated_for_another_placements_decision() -> None:
    result = run_filter(
        [taint("k", "NoSelectIfNew", "v")], extra=[decision("apps", "other", ["a"])]
    )
    assert not keeps_tainted(result)


def test_no_select_removes_an_already_decided_cluster() -> None:
    result = run_filter([taint("k", "NoSelect", "v")], extra=[decision("apps", "web", ["a"])])
    assert not keeps_tainted(result)


@pytest.mark.parametrize(
    ("tol", "kept"),
    [
        pytest.param(toleration("k", "Equal", "v"), True, id="Equal-same-value"),
        pytest.param(toleration("k", "Equal", "w"), False, id="Equal-other-value"),
        pytest.param(toleration("k", "", "v"), True, id="empty-operator-is-Equal"),
        pytest.param(toleration("k", "", "w"), False, id="empty-operator-other-value"),
        pytest.param(toleration("k", "Exists"), True, id="Exists-any-value"),
        pytest.param(toleration(None, "Exists"), True, id="empty-key-Exists-matches-all"),
        pytest.param(toleration("other", "Exists"), False, id="other-key"),
        pytest.param(toleration("k", "Exists", effect="NoSelect"), True, id="same-effect"),
        pytest.param(toleration("k", "Exists", effect="NoSelectIfNew"), False, id="other-effect"),
        pytest.param(toleration("k", "Gt", "v"), False, id="unknown-operator-never-matches"),
    ],
)
def test_toleration_matching(tol: Toleration, kept: bool) -> None:
    assert keeps_tainted(run_filter([taint("k", "NoSelect", "v")], [tol])) is kept


def test_every_taint_must_be_tolerated() -> None:
    taints = [taint("k", "NoSelect", "v"), taint("j", "NoSelect")]
    assert not keeps_tainted(run_filter(taints, [toleration("k", "Exists")]))
    assert keeps_tainted(run_filter(taints, [toleration("k", "Exists"), toleration("j", "")]))


def test_taint_without_value_matches_equal_toleration_without_value() -> None:
    assert keeps_tainted(run_filter([taint("k", "NoSelect")], [toleration("k")]))


@pytest.mark.parametrize(
    ("seconds", "kept"),
    [
        pytest.param(3601, True, id="expires-after-now"),
        pytest.param(3600, False, id="expires-exactly-now"),
        pytest.param(3599, False, id="expired"),
    ],
)
def test_toleration_seconds_tolerate_strictly_before_expiry(seconds: int, kept: bool) -> None:
    result = run_filter(
        [taint("k", "NoSelect", added=HOUR_AGO)], [toleration("k", "Exists", seconds=seconds)]
    )
    assert keeps_tainted(result) is kept


def test_taint_without_time_added_has_expired_every_toleration_seconds() -> None:
    result = run_filter([taint("k", "NoSelect")], [toleration("k", "Exists", seconds=10**9)])
    assert not keeps_tainted(result)


def test_an_expired_match_lets_a_later_toleration_apply() -> None:
    tolerations = [toleration("k", "Exists", seconds=1), toleration(None, "Exists")]
    assert keeps_tainted(run_filter([taint("k", "NoSelect", added=HOUR_AGO)], tolerations))


def test_requeue_at_earliest_expiry_of_decided_clusters() -> None:
    fleet = snapshot(
        [
            cluster("a", taints=[taint("k", "NoSelect", added=HOUR_AGO)]),
            cluster("b", taints=[taint("j", "NoSelect", added=HOUR_AGO)]),
            cluster("c", taints=[taint("k", "NoSelect", added=NOW - timedelta(minutes=59))]),
            decision("apps", "web", ["a", "b", "c"]),
        ]
    )
    web = placement(
        "apps",
        "web",
        tolerations=[
            toleration("k", "Exists", seconds=7200),
            toleration("j", "Exists", seconds=5400),
        ],
    )
    result = TaintToleration().filter(Cycle(NOW), web, fleet, np.ones(fleet.size, bool))
    assert result.mask.tolist() == [True, True, True]
    assert result.requeue_at == HOUR_AGO + timedelta(seconds=5400)  # b: 1h ago + 90 min


def test_requeue_counts_candidates_not_yet_decided() -> None:
    # Issue 20: a cluster this cycle newly selects must be dropped when its toleration
    # expires, although it was not in the decisions the cycle started from.
    fleet = snapshot(
        [
            cluster("old", taints=[taint("k", "NoSelect", added=HOUR_AGO)]),
            cluster("new", taints=[taint("k", "NoSelect", added=NOW - timedelta(minutes=100))]),
            cluster("gone", taints=[taint("k", "NoSelect", added=NOW - timedelta(minutes=110))]),
            decision("apps", "web", ["old"]),
        ]
    )
    web = placement("apps", "web", tolerations=[toleration("k", "Exists", seconds=7200)])
    candidates = np.array([name != "gone" for name in fleet.names])  # filtered out before
    result = TaintToleration().filter(Cycle(NOW), web, fleet, candidates)
    assert result.mask.tolist() == candidates.tolist()
    assert result.requeue_at == NOW + timedelta(minutes=20)  # new, not old (60) nor gone (10)


def test_no_requeue_when_tolerations_are_permanent() -> None:
    result = run_filter(
        [taint("k", "NoSelect")], [toleration("k", "Exists")], [decision("apps", "web", ["a"])]
    )
    assert result.requeue_at is None


@pytest.mark.parametrize(
    ("tol", "message"),
    [
        pytest.param(
            toleration(None, "Equal"),
            "If the key is empty, operator must be Exists.",
            id="empty-key-needs-Exists",
        ),
        pytest.param(
            toleration("k", "Exists", "v"),
            "If the operator is Exists, the value should be empty.",
            id="Exists-needs-empty-value",
        ),
    ],
)
def test_invalid_tolerations_are_misconfigured_with_ocms_message(
    tol: Toleration, message: str
) -> None:
    result = run_filter([], [tol])
    assert result.status.code == Code.MISCONFIGURED
    assert result.status.message == message
    assert result.status.plugin == "TaintToleration"


def test_tolerations_are_not_validated_without_candidates() -> None:
    fleet = snapshot([cluster("a")])
    web = placement("apps", "web", tolerations=[toleration(None, "Equal")])
    result = TaintToleration().filter(Cycle(NOW), web, fleet, np.zeros(1, bool))
    assert result.status.code == Code.SUCCESS


@pytest.mark.parametrize(
    ("tolerations", "penalized"),
    [
        pytest.param([], True, id="untolerated"),
        pytest.param([toleration("spot", "Exists")], False, id="tolerated-any-effect"),
        pytest.param(
            [toleration("spot", "Exists", effect="PreferNoSelect")], False, id="tolerated-effect"
        ),
        pytest.param([toleration("spot", "Exists", effect="NoSelect")], True, id="other-effect"),
        pytest.param([toleration("spot", "Equal", "high")], True, id="other-value"),
    ],
)
def test_prefer_no_select_is_a_score_penalty_not_a_filter(
    tolerations: list[Toleration], penalized: bool
) -> None:
    fleet = snapshot([cluster("a", taints=[taint("spot", "PreferNoSelect", "low")]), cluster("b")])
    web = placement("apps", "web", tolerations=tolerations)
    result = TaintTolerationPrioritizer().score(Cycle(NOW), web, fleet, np.arange(2))
    assert result.scores.tolist() == [PREFER_NO_SELECT_PENALTY if penalized else 0, 0]


def test_prefer_no_select_penalty_ignores_hard_taints() -> None:
    fleet = snapshot([cluster("a", taints=[taint("k", "NoSelect")])])
    web = placement("apps", "web")
    result = TaintTolerationPrioritizer().score(Cycle(NOW), web, fleet, np.arange(1))
    assert result.scores.tolist() == [0]


def test_requeue_skips_decided_clusters_that_are_no_longer_tolerated() -> None:
    fleet = snapshot(
        [
            cluster("a", taints=[taint("k", added=HOUR_AGO), taint("hard")]),
            cluster("b", taints=[taint("k", added=NOW - timedelta(minutes=30))]),
            decision("apps", "web", ["a", "b"]),
        ]
    )
    web = placement("apps", "web", tolerations=[toleration("k", "Exists", seconds=7200)])
    result = TaintToleration().filter(Cycle(NOW), web, fleet, np.ones(fleet.size, bool))
    assert result.mask.tolist() == [False, True]
    assert result.requeue_at == NOW + timedelta(minutes=90)


def test_same_taint_with_different_time_added_expires_per_cluster() -> None:
    fleet = snapshot(
        [
            cluster("old", taints=[taint("k", added=NOW - timedelta(hours=3))]),
            cluster("new", taints=[taint("k", added=NOW - timedelta(minutes=5))]),
            cluster("unstamped", taints=[taint("k")]),
        ]
    )
    web = placement("apps", "web", tolerations=[toleration("k", "Exists", seconds=3600)])
    result = TaintToleration().filter(Cycle(NOW), web, fleet, np.ones(fleet.size, bool))
    assert dict(zip(fleet.names, result.mask.tolist(), strict=True)) == {
        "new": True,
        "old": False,
        "unstamped": False,
    }
