"""`Predicate`: label, claim and CEL selectors, ORed across predicates, ANDed inside."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from apis.placements import ClusterPredicate
from placement.framework import Code, Cycle, FilterResult
from placement.testing import NOW, cluster, placement, predicate, snapshot
from plugins.predicate import Predicate, cel_score_names

FLEET = snapshot(
    [
        cluster("a", labels={"env": "prod", "region": "eu"}, claims={"rack": "r1"}),
        cluster("b", labels={"env": "prod", "region": "us"}, claims={"rack": "r2"}),
        cluster("c", labels={"env": "dev"}),
        cluster("d"),
    ]
)


def run(
    predicates: Sequence[ClusterPredicate], candidates: list[bool] | None = None
) -> FilterResult:
    mask = np.ones(FLEET.size, bool) if candidates is None else np.array(candidates)
    web = placement("apps", "web", predicates=list(predicates))
    return Predicate().filter(Cycle(NOW), web, FLEET, mask)


def selected(predicates: Sequence[ClusterPredicate]) -> list[str]:
    result = run(predicates)
    assert result.status.code == Code.SUCCESS, result.status
    return FLEET.rows_to_names(np.flatnonzero(result.mask))


@pytest.mark.parametrize(
    ("predicates", "expected"),
    [
        pytest.param([], ["a", "b", "c", "d"], id="no-predicates"),
        pytest.param([predicate()], ["a", "b", "c", "d"], id="empty-selector"),
        pytest.param([predicate({"env": "prod"})], ["a", "b"], id="matchLabels"),
        pytest.param(
            [predicate(expressions=[{"key": "env", "operator": "In", "values": ["dev", "x"]}])],
            ["c"],
            id="In",
        ),
        pytest.param(
            [predicate(expressions=[{"key": "env", "operator": "NotIn", "values": ["prod"]}])],
            ["c", "d"],
            id="NotIn-matches-missing-key",
        ),
        pytest.param(
            [predicate(expressions=[{"key": "region", "operator": "Exists"}])],
            ["a", "b"],
            id="Exists",
        ),
        pytest.param(
            [predicate(expressions=[{"key": "region", "operator": "DoesNotExist"}])],
            ["c", "d"],
            id="DoesNotExist",
        ),
        pytest.param(
            [
                predicate(
                    {"env": "prod"},
                    expressions=[{"key": "region", "operator": "In", "values": ["us"]}],
                )
            ],
            ["b"],
            id="matchLabels-and-expressions",
        ),
        pytest.param(
            [predicate(claims=[{"key": "rack", "operator": "In", "values": ["r1"]}])],
            ["a"],
            id="claim-In",
        ),
        pytest.param(
            [
                predicate(
                    {"env": "prod"}, claims=[{"key": "rack", "operator": "NotIn", "values": ["r1"]}]
                )
            ],
            ["b"],
            id="labels-and-claims-ANDed",
        ),
        pytest.param(
            [predicate({"env": "dev"}), predicate({"region": "eu"})],
            ["a", "c"],
            id="predicates-ORed",
        ),
        pytest.param([predicate({"env": "staging"})], [], id="nothing-matches"),
    ],
)
def test_predicate_selection(predicates: list[ClusterPredicate], expected: list[str]) -> None:
    assert selected(predicates) == expected


def test_predicate_never_adds_clusters_outside_the_candidates() -> None:
    result = run([predicate({"env": "prod"})], [False, True, True, True])
    assert result.mask.tolist() == [False, True, False, False]


def test_claims_take_the_last_duplicate() -> None:
    fleet = snapshot([cluster("a", claims=[("rack", "r1"), ("rack", "r2")])])
    web = placement(
        "apps",
        "web",
        predicates=[predicate(claims=[{"key": "rack", "operator": "In", "values": ["r2"]}])],
    )
    result = Predicate().filter(Cycle(NOW), web, fleet, np.ones(1, bool))
    assert result.mask.tolist() == [True]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"key": "env", "operator": "In", "values": []}, id="In-without-values"),
        pytest.param(
            {"key": "env", "operator": "Exists", "values": ["x"]}, id="Exists-with-values"
        ),
    ],
)
def test_invalid_selector_is_misconfigured(bad: dict[str, object]) -> None:
    result = run([predicate(expressions=[bad])])
    assert result.status.code == Code.MISCONFIGURED
    assert result.status.plugin == "Predicate"
    assert "values" in result.status.message


def test_cel_is_ored_with_other_predicates() -> None:
    found = selected(
        [predicate({"env": "dev"}), predicate(cel=["managedCluster.metadata.name == 'a'"])]
    )
    assert found == ["a", "c"]


def test_cel_is_anded_with_labels_claims_and_other_expressions() -> None:
    claims = [{"key": "rack", "operator": "Exists"}]
    cel = ['managedCluster.metadata.labels["region"] != "us"', "true"]
    assert selected([predicate({"env": "prod"}, cel=cel)]) == ["a"]
    assert selected([predicate(claims=claims, cel=["managedCluster.metadata.name != 'a'"])]) == [
        "b"
    ]


def test_cel_compile_error_is_misconfigured_with_ocms_message() -> None:
    result = run([predicate({"env": "prod"}), predicate(cel=["true", "invalid.expression"])])
    assert result.status.code == Code.MISCONFIGURED
    assert result.status.plugin == "Predicate"
    assert result.status.message.startswith("compilation failed: ERROR: <input>:1:")
    assert "undeclared reference to 'invalid" in result.status.message


def test_cel_runtime_error_rejects_only_that_cluster_and_explain_says_why() -> None:
    # Only a and b have a region label: c and d fail with "no such key".
    expression = 'managedCluster.metadata.labels["region"] == "eu"'
    mask = np.ones(FLEET.size, bool)
    web = placement("apps", "web", predicates=[predicate(cel=[expression])])
    result = Predicate().filter(Cycle(NOW, {"explain": True}), web, FLEET, mask)
    assert result.status.code == Code.SUCCESS
    assert FLEET.rows_to_names(np.flatnonzero(result.mask)) == ["a"]
    reasons = result.reasons or {}
    assert reasons[FLEET.index["b"]] == "predicate 0: celExpressions[0] is not true"
    assert reasons[FLEET.index["c"]].startswith("predicate 0: celExpressions[0] failed: ")
    assert reasons[FLEET.index["c"]].endswith("failed: no such key: region")  # cel-go's words


def test_cel_timer_hook_is_called_once_per_evaluated_cluster_and_not_when_cached() -> None:
    calls: list[str] = []

    def timer() -> Callable[[], None]:
        calls.append("start")
        return lambda: calls.append("stop")

    web = placement(
        "apps", "web", predicates=[predicate(cel=["managedCluster.metadata.name > 'b'"])]
    )
    fleet = snapshot([cluster(n) for n in "abc"])
    for _ in range(2):
        result = Predicate().filter(Cycle(NOW, {"cel_timer": timer}), web, fleet, np.ones(3, bool))
        assert fleet.rows_to_names(np.flatnonzero(result.mask)) == ["c"]
    assert calls == ["start", "stop"] * 3  # the second cycle reads the cache


def test_predicates_are_not_checked_without_candidates() -> None:
    result = run([predicate(cel=["invalid.expression"])], [False] * 4)
    assert result.status.code == Code.SUCCESS
    assert not result.mask.any()


def test_cel_score_names_tell_the_fan_out_which_score_objects_matter() -> None:
    def names(*cel: list[str]) -> frozenset[str] | None:
        web = placement("apps", "web", predicates=[predicate(cel=c) for c in cel])
        return cel_score_names(web)

    assert names(
        ['managedCluster.scores("a").size() > 0'], ['managedCluster.scores("b") == []']
    ) == frozenset({"a", "b"})
    assert names(["managedCluster.metadata.name == 'x'"]) == frozenset()
    assert names(["managedCluster.scores(managedCluster.metadata.name).size() > 0"]) is None
    assert names(['managedCluster.scores("a").size() > 0', "invalid.expression"]) == frozenset()
    assert cel_score_names(placement("apps", "web")) == frozenset()


def test_a_timer_given_to_the_plugin_observes_each_evaluation() -> None:
    seen: list[int] = []
    plugin = Predicate(cel_timer=lambda: lambda: seen.append(1))
    # (a shape the interpreter runs: `name != 'b'` is decided on columns, with no evaluation)
    web = placement(
        "apps", "web", predicates=[predicate(cel=["!managedCluster.metadata.name.startsWith('b')"])]
    )
    fleet = snapshot([cluster(n) for n in "abcd"])
    result = plugin.filter(Cycle(NOW), web, fleet, np.ones(4, bool))
    assert fleet.rows_to_names(np.flatnonzero(result.mask)) == ["a", "c", "d"]
    assert len(seen) == 4
    columns = placement(
        "apps", "web", predicates=[predicate(cel=["managedCluster.metadata.name != 'b'"])]
    )
    seen.clear()
    result = plugin.filter(Cycle(NOW), columns, fleet, np.ones(4, bool))
    assert fleet.rows_to_names(np.flatnonzero(result.mask)) == ["a", "c", "d"]
    assert seen == []
