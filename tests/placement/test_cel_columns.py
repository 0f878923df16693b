"""Selectors the snapshot's columns answer (`placement.cel.columns`,
`placement.cel.snapshot_columns`) decide as the interpreter does: which expressions are recognised,
and on random fleets and random expressions of every recognised shape (label, name and resource
tests under `&&`, `||`,
`!`) the same failing expression and the same error for every cluster, in simulate's snapshot
and in the controller's index, the clusters the columns cannot be sure of included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.cluster import ManagedCluster
from placement.cel import compile_selector
from placement.cel.columns import (
    Both,
    ColumnNode,
    Either,
    LabelTest,
    Not,
    QuantityTest,
    column_plan,
    label_tests,
)
from placement.cel.snapshot_columns import column_verdicts
from placement.index.fleet_index import FleetIndex, cluster_row
from placement.selectors import cel_mask
from placement.snapshot.fleet_snapshot import FleetSnapshot, unstructured

FAST = settings(max_examples=120, deadline=None)
ENV = LabelTest("env", "==", ("prod",))
CPU = "quantity(managedCluster.status.allocatable.cpu)"


@pytest.mark.parametrize(
    ("expression", "node"),
    [
        ('managedCluster.metadata.labels["env"] == "prod"', ENV),
        ("managedCluster.metadata.labels.env != 'prod'", LabelTest("env", "!=", ("prod",))),
        (
            'managedCluster.metadata.labels["a/b"] in ["x", "y",]',
            LabelTest("a/b", "in", ("x", "y")),
        ),
        ("managedCluster . metadata.labels['k'] in []", LabelTest("k", "in", ())),
        ('managedCluster.metadata.name == "c1"', LabelTest(None, "==", ("c1",))),
        ("managedCluster.metadata.name in ['c1', 'c2']", LabelTest(None, "in", ("c1", "c2"))),
        (
            'managedCluster.metadata.labels["env"] == "prod" || !(managedCluster.metadata.name'
            ' == "c1") && managedCluster.metadata.labels["env"] == "prod"',
            Either(ENV, Both(Not(LabelTest(None, "==", ("c1",))), ENV)),
        ),
        ('!!(managedCluster.metadata.labels["env"] == "prod")', Not(Not(ENV))),
        ('((managedCluster.metadata.labels["env"] == "prod"))', ENV),
        (
            CPU + '.isGreaterThan(quantity("1500m"))',
            QuantityTest("allocatable", "cpu", 1.5, frozenset({1}), ties=True),
        ),
        (
            'quantity(managedCluster.status.capacity["memory"]).isLessThan(quantity("1Ki"))',
            QuantityTest("capacity", "memory", 1024.0, frozenset({-1})),
        ),
        (
            CPU + '.compareTo(quantity("2")) >= 0',
            QuantityTest("allocatable", "cpu", 2.0, frozenset({0, 1}), ties=True),
        ),
        (
            CPU + '.compareTo(quantity("2")) != -1',
            QuantityTest("allocatable", "cpu", 2.0, frozenset({0, 1}), ties=True),
        ),
        (
            CPU + '.compareTo(quantity("2")) < 5',
            QuantityTest("allocatable", "cpu", 2.0, frozenset({-1, 0, 1}), ties=True),
        ),
    ],
)
def test_column_tests_are_recognised(expression: str, node: ColumnNode) -> None:
    compile_selector([expression])  # the interpreter accepts it too
    assert column_plan((expression,)) == (node,)


def test_label_tests_are_single_label_tests() -> None:
    assert label_tests(('managedCluster.metadata.labels["env"] == "prod"',)) == (ENV,)
    assert label_tests((CPU + '.isGreaterThan(quantity("1"))',)) is None


@pytest.mark.parametrize(
    "expression",
    [
        'managedCluster.metadata.labels["env"] == "prod" || true',
        'managedCluster.metadata.labels["env"] == 1',
        'managedCluster.metadata.labels["env"].startsWith("p")',
        'managedCluster.metadata.?labels["env"] == "prod"',
        'managedCluster.metadata.labels["env"] in ["a", 1]',
        'managedCluster.metadata.labels[k] == "prod"',
        '"prod" == managedCluster.metadata.labels["env"]',
        'managedCluster.metadata.labels["e\\u0041"] == "x"',
        'managedCluster.metadata.name.startsWith("c")',
        'managedCluster.metadata.name["x"] == "c"',
        # combinations: only of recognised tests, `!` only before parentheses, nothing after
        '!managedCluster.metadata.labels["env"] == "prod"',
        '(managedCluster.metadata.labels["env"] == "prod") == true',
        'managedCluster.metadata.labels["env"] == "prod" ? true : false',
        '(managedCluster.metadata.labels["env"] == "prod"',
        'managedCluster.metadata.labels["env"] == "prod" &&',
        'managedCluster.metadata.labels["env"] == "prod" & managedCluster.metadata.name == "a"',
        # resources: cpu and memory of allocatable or capacity, a literal quantity, an int
        'quantity(managedCluster.status.allocatable["nvidia.com/gpu"]).isGreaterThan(quantity("1"))',
        'quantity(managedCluster.status.version.cpu).isGreaterThan(quantity("1"))',
        CPU + '.isGreaterThan(quantity("not a quantity"))',
        CPU + '.isGreaterThan(quantity(managedCluster.metadata.labels["cpu"]))',
        CPU + '.compareTo(quantity("2")) >= 0u',
        CPU + '.compareTo(quantity("2")) >= 0.0',
        CPU + '.compareTo(quantity("2"))',
        CPU + ".isInteger()",
        'quantity("2").isLessThan(' + CPU + ")",
        CPU + '.add(quantity("1")).isGreaterThan(quantity("2"))',
    ],
)
def test_anything_else_is_left_to_the_interpreter(expression: str) -> None:
    assert column_plan((expression,)) is None
    assert column_plan(('managedCluster.metadata.labels["a"] == "b"', expression)) is None


# Random fleets: labels, and resources near the literals the expressions compare with (some
# too close for a float column to be sure, some missing, some not cpu or memory).
LABELS = st.dictionaries(st.sampled_from(["env", "x", "a/b"]), st.sampled_from(["prod", "", "y"]))
AMOUNTS = st.sampled_from(
    [
        "2.000000001",
        "1.999999999",
        "100000",
        "100000.000000001",
        "1500001n",
        "1501m",
        "1",
        "2",
        "1999m",
        "2001m",
        "2000000001n",
        "1999999999n",
        "1.5",
        "1Gi",
        "1073741823",
        "1073741825",
        "1G",
        2,
        1.5,
        "0",
        "100Ki",
        "1e3",
        "1Ei",
    ]
)
RESOURCES = st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), AMOUNTS)
LITERALS = st.sampled_from(
    ["2", "2000m", "1.5", "1Gi", "1G", "0", "100Ki", "1e3", "1e5", "1500001n", "1500m"]
)


def label_test(key: str | None, op: str, values: list[str]) -> str:
    subject = f"managedCluster.metadata.labels[{key!r}]" if key else "managedCluster.metadata.name"
    tail = repr(values[0]) if op != "in" else "[" + ", ".join(map(repr, values)) + "]"
    return f"{subject} {op} {tail}"


def quantity_test(field: str, resource: str, method: str, literal: str, tail: str) -> str:
    call = f'quantity(managedCluster.status.{field}.{resource}).{method}(quantity("{literal}"))'
    return call + (tail if method == "compareTo" else "")


ATOMS = st.one_of(
    st.builds(
        label_test,
        st.sampled_from(["env", "x", "a/b", None]),
        st.sampled_from(["==", "!=", "in"]),
        st.lists(st.sampled_from(["prod", "", "y", "c0", "c2"]), min_size=1, max_size=3),
    ),
    st.builds(
        quantity_test,
        st.sampled_from(["allocatable", "capacity"]),
        st.sampled_from(["cpu", "memory"]),
        st.sampled_from(["isGreaterThan", "isLessThan", "compareTo"]),
        LITERALS,
        st.sampled_from([" >= 0", " == 0", " < 0", " != 1", " > -1", " <= -1"]),
    ),
)
EXPRESSIONS = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"{a} && {b}", inner, inner),
        st.builds(lambda a, b: f"{a} || {b}", inner, inner),
        st.builds(lambda a: f"!({a})", inner),
        st.builds(lambda a: f"({a})", inner),
    ),
    max_leaves=5,
)


@st.composite
def fleets(draw: st.DrawFn) -> list[ManagedCluster]:
    out = []
    for i in range(draw(st.integers(1, 8))):
        status: dict[str, Any] = {}
        for field in ("allocatable", "capacity"):
            if draw(st.booleans()):
                status[field] = draw(RESOURCES)
        document = {"metadata": {"name": f"c{i}", "labels": draw(LABELS)}, "status": status}
        out.append(ManagedCluster.model_validate(document))
    return out


def snapshots(clusters: list[ManagedCluster]) -> list[FleetSnapshot]:
    index = FleetIndex()
    for c in clusters:
        index.upsert_cluster(cluster_row(c))
    return [FleetSnapshot.build(clusters), index.snapshot()]


@FAST
@given(fleets(), st.lists(EXPRESSIONS, min_size=1, max_size=3))
def test_columns_decide_as_the_interpreter(
    clusters: list[ManagedCluster], tests: list[str]
) -> None:
    selector = compile_selector(tests)
    plan = selector.column_plan
    assert plan is not None
    expected = [selector.evaluate(unstructured(c)) for c in clusters]
    for fleet in snapshots(clusters):
        rows = np.array([fleet.index[c.name] for c in clusters], dtype=np.intp)
        failed, errors, undecided = column_verdicts(plan, fleet, rows)
        for at, verdict in enumerate(expected):
            if not undecided[at]:  # what the columns decide is the interpreter's verdict
                f = int(failed[at])
                assert (None if f < 0 else f, errors.get(at)) == (verdict.failed, verdict.error)
        why: dict[int, str] = {}
        mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), why=why)
        assert [bool(mask[r]) for r in rows] == [v.matched for v in expected]
        for r, v in zip(rows.tolist(), expected, strict=True):
            if not v.matched:
                detail = f"failed: {v.error}" if v.error is not None else "is not true"
                assert why[r] == f"celExpressions[{v.failed}] {detail}"


def fleet_of(*documents: dict[str, Any]) -> FleetSnapshot:
    return FleetSnapshot.build([ManagedCluster.model_validate(d) for d in documents])


def cpu_cluster(name: str, cpu: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu}}}


def test_a_resource_too_close_to_the_literal_or_missing_is_left_to_the_interpreter() -> None:
    fleet = fleet_of(
        cpu_cluster("far", "3"),
        cpu_cluster("tie", "2"),
        cpu_cluster("near", "2000000001n"),
        {"metadata": {"name": "none"}},
        cpu_cluster("low", "1"),
    )
    (node,) = column_plan((CPU + '.isGreaterThan(quantity("2"))',)) or ()
    failed, errors, undecided = column_verdicts((node,), fleet, np.arange(fleet.size))
    by_name = dict(
        zip(fleet.names, zip(failed.tolist(), undecided.tolist(), strict=True), strict=True)
    )
    assert by_name == {
        "far": (-1, False),
        "low": (0, False),
        "near": (-1, True),
        "none": (-1, True),
        "tie": (0, False),  # equal to the literal: the float tells
    }
    assert errors == {}
    selector = compile_selector([CPU + '.isGreaterThan(quantity("2"))'])
    mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool))
    assert sorted(fleet.rows_to_names(np.flatnonzero(mask))) == ["far", "near"]


@pytest.mark.parametrize(
    ("literal", "resource", "ties"),
    [
        ("2", "cpu", True),
        ("1500m", "cpu", True),
        ("1e5", "cpu", True),
        ("100001", "cpu", False),  # past TIE_RANGE: floats too coarse to tell 1n apart
        ("1500001n", "cpu", False),  # not whole millicores: the row-made document rounds
        ("2", "memory", False),  # bytes: too large for floats to tell 1n apart
    ],
)
def test_ties_are_told_only_where_floats_can(literal: str, resource: str, ties: bool) -> None:
    expression = (
        f'quantity(managedCluster.status.allocatable.{resource}).isLessThan(quantity("{literal}"))'
    )
    plan = column_plan((expression,))
    assert plan is not None and isinstance(plan[0], QuantityTest)
    assert plan[0].ties is ties


def test_an_unknown_operand_is_decided_by_the_other_when_it_can() -> None:
    """`x && false` is false and `x || true` true whatever x: no interpreter for them; an
    error on the left is the error when the right is unknown (the interpreter decides)."""
    fleet = fleet_of({"metadata": {"name": "none", "labels": {"env": "prod"}}})
    rows = np.arange(1)
    gt = CPU + '.isGreaterThan(quantity("2"))'
    env = 'managedCluster.metadata.labels["env"] == "prod"'
    for expression, outcome in [
        (f"{gt} && !({env})", (0, False)),
        (f"!({env}) && {gt}", (0, False)),
        (f"{gt} || {env}", (-1, False)),
        (f"{gt} && {env}", (-1, True)),
        (f'managedCluster.metadata.labels["k"] == "v" || {gt}', (-1, True)),
    ]:
        plan = column_plan((expression,))
        assert plan is not None
        failed, _, undecided = column_verdicts(plan, fleet, rows)
        assert (int(failed[0]), bool(undecided[0])) == outcome, expression


def test_errors_of_both_operands_give_the_left_one() -> None:
    fleet = fleet_of({"metadata": {"name": "c", "labels": {"env": "prod"}}})
    for op in ("&&", "||"):
        labels = "managedCluster.metadata.labels"
        expression = f'{labels}["b"] == "1" {op} {labels}["a"] == "1"'
        plan = column_plan((expression,))
        assert plan is not None
        _, errors, _ = column_verdicts(plan, fleet, np.arange(1))
        assert errors == {0: "no such key: b"}
        assert compile_selector([expression]).evaluate(unstructured_of(fleet)).error == errors[0]


def unstructured_of(fleet: FleetSnapshot) -> Any:
    assert fleet.cel is not None
    return fleet.cel.document(fleet.names[0])[1]


def test_a_changed_cluster_alone_is_evaluated_again() -> None:
    """The results are cached by stamp: after one cluster changes, the next snapshot's first
    evaluation asks the interpreter about that cluster only."""
    # neither a column test nor grouped by label values: the interpreter on each cluster
    expression = 'managedCluster.metadata.?labels.?env.orValue("").startsWith("p")'
    clusters = [
        ManagedCluster.model_validate({"metadata": {"name": f"c{i}", "labels": {"env": "prod"}}})
        for i in range(5)
    ]
    index = FleetIndex()
    for c in clusters:
        index.upsert_cluster(cluster_row(c))
    selector = compile_selector([expression])
    seen: list[int] = []
    timer = lambda: lambda: seen.append(1)  # noqa: E731 - counts interpreter runs
    everyone = np.ones(5, dtype=bool)
    assert cel_mask(selector, index.snapshot(), everyone, timer).all()
    assert len(seen) == 5
    changed = clusters[2].model_copy(deep=True)
    changed.metadata.labels = {"env": "dev"}
    index.upsert_cluster(cluster_row(changed))
    mask = cel_mask(selector, index.snapshot(), everyone, timer)
    assert len(seen) == 6
    assert mask.tolist() == [True, True, False, True, True]
