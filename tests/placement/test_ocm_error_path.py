"""OCM fidelity on the misconfiguration path (issue 21): selectors are built as apimachinery
builds them (`metav1.LabelSelectorAsSelector` -> `labels.NewRequirement`, v0.36, the version OCM
builds with), so the Misconfigured message is OCM's, word for word.

The expected strings are data, composed from apimachinery's own texts (`field.Invalid`'s value
rendering, `content.IsLabelKey` / `IsLabelValue`, `RegexError`'s "(e.g. 'a',  or 'b', ..."
with its double space) and OCM's `<plugin>:<message>` condition format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from apis.fielderrors import aggregate, go_quote, go_value, label_key_problems
from apis.meta import KubeObject, LabelSelectorRequirement
from apis.placements import PLACEMENT_MISCONFIGURED as MISCONFIGURED
from apis.placements import PLACEMENT_SATISFIED as SATISFIED
from apis.placements import Placement, PlacementStatus
from placement.outcome import Outcome, outcome
from placement.selectors import requirement_error, selector_problems
from placement.testing import (
    NOW,
    binding,
    cluster,
    cluster_set,
    global_set,
    placement,
    predicate,
    snapshot,
)
from plugins import default_scheduler

VALUE_REGEX = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
NAME_REGEX = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
BAD_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{VALUE_REGEX}')"
)
BAD_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    f"for validation is '{NAME_REGEX}')"
)
EMPTY_IN = "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"

FLEET: list[KubeObject] = [
    cluster("a", labels={"env": "prod"}, claims={"version": "v1.28.3"}),
    cluster("b", labels={"env": "dev"}, claims={"version": "v1.29.0"}),
    *global_set("apps"),
]


def run(
    p: Placement, objects: Sequence[KubeObject] = FLEET, previous: PlacementStatus | None = None
) -> Outcome:
    fleet = snapshot(objects)
    return outcome(default_scheduler().schedule(p, fleet, NOW), fleet, previous, NOW)


def condition(done: Outcome, kind: str) -> tuple[str, str, str]:
    for c in done.placement_status.conditions or []:
        if c.type == kind:
            return c.status, c.reason, c.message
    raise AssertionError(f"no {kind} condition")


def selected(done: Outcome) -> list[str]:
    assert done.paged is not None
    return [
        d.cluster_name
        for pd in done.paged.decisions
        if pd.status
        for d in pd.status.decisions or []
    ]


def req(key: str, operator: str, values: list[str] | None = None) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator=operator, values=values)


# --- Go's rendering of values ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        ([], "[]"),
        (["a"], '["a"]'),
        (["a", "b c"], '["a","b c"]'),
        (["<&>"], '["\\u003c\\u0026\\u003e"]'),
        ("v1.28.3+k3s", '"v1.28.3+k3s"'),
        ('say "hi"\n', '"say \\"hi\\"\\n"'),
        ("é", '"é"'),
        (3, "3"),
        (True, "true"),
        ({"k": ["v"]}, '{"k":["v"]}'),
    ],
)
def test_values_render_as_go_field_errors_render_them(value: Any, expected: str) -> None:
    assert go_value(value) == expected


def test_go_quote_escapes_control_characters_as_strconv_quote() -> None:
    assert go_quote("a\x00b\x7f") == '"a\\x00b\\x7f"'


def test_aggregate_drops_duplicates_and_brackets_several() -> None:
    assert aggregate([]) is None
    assert aggregate(["x"]) == "x"
    assert aggregate(["x", "y", "x"]) == "[x, y]"


def test_label_key_rules_match_is_label_key() -> None:
    assert label_key_problems("example.com/name") == []
    assert label_key_problems("/name") == ["prefix part must be non-empty"]
    assert label_key_problems("a/b/c")[0].startswith("a valid label key must consist of")
    assert label_key_problems("x" * 64) == ["name part must be no more than 63 bytes"]
    assert label_key_problems("Bad_Prefix/name")[0].startswith(
        "prefix part a lowercase RFC 1123 subdomain must consist of"
    )
    # Go's `$` does not match before a trailing newline; neither must ours.
    assert label_key_problems("name\n") == [BAD_NAME]


# --- one requirement, as labels.NewRequirement reports it ---------------------------------------


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (req("env", "In", []), EMPTY_IN),
        (req("env", "NotIn"), EMPTY_IN),
        (
            req("env", "Exists", ["a"]),
            'values: Invalid value: ["a"]: values set must be empty for exists and does not exist',
        ),
        (req("env", "in", ["prod"]), '"in" is not a valid label selector operator'),
        (req("env", "exists"), '"exists" is not a valid label selector operator'),
        (
            req("version", "In", ["v1.28.3+k3s"]),
            f'values[0][version]: Invalid value: "v1.28.3+k3s": {BAD_VALUE}',
        ),
        (req("bad key!", "Exists"), f'key: Invalid value: "bad key!": {BAD_NAME}'),
        (
            req("bad key!", "In", []),
            f'[key: Invalid value: "bad key!": {BAD_NAME}, {EMPTY_IN}]',
        ),
        (
            req("v", "In", ["ok", "no+", "x" * 64]),
            f'[values[1][v]: Invalid value: "no+": {BAD_VALUE}, values[2][v]: Invalid value: '
            f'"{"x" * 64}": must be no more than 63 bytes]',
        ),
        (req("env", "In", ["prod", ""]), None),  # the empty string is a valid value
    ],
)
def test_requirement_errors_are_apimachinery_words(
    requirement: LabelSelectorRequirement, expected: str | None
) -> None:
    assert requirement_error(requirement) == expected


# --- through the scheduler: the Misconfigured condition ----------------------------------------


@pytest.mark.parametrize(
    ("predicates", "message"),
    [
        pytest.param(
            [predicate(expressions=[{"key": "env", "operator": "In", "values": []}])],
            f"Predicate:{EMPTY_IN}",
            id="in-without-values",
        ),
        pytest.param(
            [predicate(claims=[{"key": "version", "operator": "In", "values": ["v1.28.3+k3s"]}])],
            f'Predicate:values[0][version]: Invalid value: "v1.28.3+k3s": {BAD_VALUE}',
            id="claim-value-is-no-label-value",
        ),
        pytest.param(
            [predicate(claims=[{"key": "bad key!", "operator": "Exists"}])],
            f'Predicate:key: Invalid value: "bad key!": {BAD_NAME}',
            id="claim-key-is-no-label-key",
        ),
        pytest.param(
            [predicate(expressions=[{"key": "env", "operator": "in", "values": ["prod"]}])],
            'Predicate:"in" is not a valid label selector operator',
            id="operator-in-lower-case",
        ),
        pytest.param(
            [
                predicate(labels={"env": "prod"}),
                predicate(expressions=[{"key": "env", "operator": "exists"}]),
            ],
            'Predicate:"exists" is not a valid label selector operator',
            id="second-predicate-bad",
        ),
    ],
)
def test_bad_selector_makes_the_placement_misconfigured_with_ocm_message(
    predicates: list[Any], message: str
) -> None:
    done = run(
        placement("apps", "web", predicates=[p.model_dump(by_alias=True) for p in predicates])
    )
    assert condition(done, MISCONFIGURED) == ("True", "Misconfigured", message)
    assert done.paged is None


def test_a_bad_predicate_after_an_empty_one_is_still_reported() -> None:
    # OCM builds every predicate's selector before matching: an empty first predicate (which
    # matches every cluster) does not hide a broken second one.
    bad = {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "In"}]}}
    done = run(placement("apps", "web", predicates=[{}, {"requiredClusterSelector": bad}]))
    assert condition(done, MISCONFIGURED) == ("True", "Misconfigured", f"Predicate:{EMPTY_IN}")


def test_lower_case_operator_is_admitted_by_the_model_as_by_ocm_crd() -> None:
    # OCM's CRD has no enum on operator: the object is stored; only scheduling reports it.
    p = placement(
        "apps",
        "web",
        predicates=[
            {
                "requiredClusterSelector": {
                    "labelSelector": {
                        "matchExpressions": [{"key": "env", "operator": "in", "values": ["prod"]}]
                    }
                }
            }
        ],
    )
    assert p.spec.predicates is not None


def test_validate_names_every_bad_requirement_with_its_field() -> None:
    p = predicate(
        labels={"ok": "fine", "bad": "no+"},
        expressions=[{"key": "env", "operator": "in", "values": ["prod"]}],
    ).required_cluster_selector
    assert p is not None
    assert selector_problems(p.label_selector, "spec.labelSelector") == [
        f'spec.labelSelector.matchLabels[bad]: values[0][bad]: Invalid value: "no+": {BAD_VALUE}',
        'spec.labelSelector.matchExpressions[0]: "in" is not a valid label selector operator',
    ]


# --- a cluster set whose selector cannot be built ----------------------------------------------


BAD_SET: list[KubeObject] = [
    cluster("a", labels={"env": "prod"}),
    cluster("b", labels={"env": "dev"}),
    cluster_set("good", {"matchLabels": {"env": "prod"}}),
    cluster_set("bad", {"matchExpressions": [{"key": "env", "operator": "In", "values": []}]}),
    binding("apps", "good"),
    binding("apps", "bad"),
]


def test_cluster_set_with_bad_selector_is_reported_with_ocm_sync_error_and_decisions_kept() -> None:
    # OCM's sync fails with this error before writing anything and retries. We report it as a
    # misconfiguration (condition; decisions kept, as for every misconfiguration here).
    only_good = [o for o in BAD_SET if o.name != "bad"]
    before = run(placement("apps", "web"), only_good)
    assert selected(before) == ["a"]
    done = run(placement("apps", "web"), BAD_SET, before.placement_status)
    expected = f':failed to get clusters from ClusterSet "bad": {EMPTY_IN}'
    assert condition(done, MISCONFIGURED) == ("True", "Misconfigured", expected)
    assert done.paged is None  # nothing to write: the decisions stay
    assert done.placement_status.number_of_selected_clusters == 1
    assert condition(done, SATISFIED)[1] == "NoManagedClusterMatched"  # as any misconfiguration


def test_bad_set_not_chosen_by_the_placement_does_not_matter() -> None:
    done = run(placement("apps", "web", clusterSets=["good"]), BAD_SET)
    assert condition(done, MISCONFIGURED)[0] == "False"
    assert selected(done) == ["a"]


# --- a decision group that cannot be built (scheduling_controller.go syncPlacement) -----------

BAD_GROUP = {
    "groupStrategy": {
        "decisionGroups": [
            {
                "groupName": "canary",
                "groupClusterSelector": {
                    "labelSelector": {"matchExpressions": [{"key": "env", "operator": "In"}]}
                },
            }
        ]
    }
}


def test_a_broken_group_selector_keeps_the_scheduler_count_and_satisfied_condition() -> None:
    done = run(placement("apps", "web", decisionStrategy=BAD_GROUP))
    assert condition(done, MISCONFIGURED) == ("True", "Misconfigured", f":{EMPTY_IN}")
    assert condition(done, SATISFIED) == (
        "True",
        "AllDecisionsScheduled",
        "All cluster decisions scheduled",
    )
    assert done.placement_status.number_of_selected_clusters == 2
    assert done.paged is None  # misconfigured: the previous decisions stay (deliberate)


def test_a_broken_group_selector_with_decisions_before_updates_only_count_and_conditions() -> None:
    before = run(placement("apps", "web", numberOfClusters=1))
    assert selected(before) == ["a"]
    done = run(
        placement("apps", "web", decisionStrategy=BAD_GROUP), previous=before.placement_status
    )
    assert done.placement_status.number_of_selected_clusters == 2
    assert done.placement_status.decision_groups == before.placement_status.decision_groups


def test_broken_predicate_and_group_selector_name_the_group_selector_as_ocm() -> None:
    bad = {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "exists"}]}}
    done = run(
        placement(
            "apps",
            "web",
            predicates=[{"requiredClusterSelector": bad}],
            decisionStrategy=BAD_GROUP,
        )
    )
    assert condition(done, MISCONFIGURED) == ("True", "Misconfigured", f":{EMPTY_IN}")
    assert condition(done, SATISFIED)[1] == "NoManagedClusterMatched"  # the scheduler chose none
    assert done.placement_status.number_of_selected_clusters == 0
