"""Label-test selectors answered from the label columns decide as the interpreter does: which
expressions are recognised, and on random fleets the same failing expression and the same
error for every cluster, in simulate's snapshot and in the controller's index."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.cluster import ManagedCluster
from placement._cel_columns import column_verdicts
from placement.cel import compile_selector
from placement.cel.columns import LabelTest, label_tests
from placement.index import FleetIndex, cluster_row
from placement.selectors import cel_mask
from placement.snapshot import FleetSnapshot, unstructured

FAST = settings(max_examples=80, deadline=None)


@pytest.mark.parametrize(
    ("expression", "test"),
    [
        ('managedCluster.metadata.labels["env"] == "prod"', LabelTest("env", "==", ("prod",))),
        ("managedCluster.metadata.labels.env != 'prod'", LabelTest("env", "!=", ("prod",))),
        (
            'managedCluster.metadata.labels["a/b"] in ["x", "y",]',
            LabelTest("a/b", "in", ("x", "y")),
        ),
        ("managedCluster . metadata.labels['k'] in []", LabelTest("k", "in", ())),
        ('managedCluster.metadata.name == "c1"', LabelTest(None, "==", ("c1",))),
        ("managedCluster.metadata.name in ['c1', 'c2']", LabelTest(None, "in", ("c1", "c2"))),
    ],
)
def test_label_tests_are_recognised(expression: str, test: LabelTest) -> None:
    assert label_tests((expression,)) == (test,)


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
    ],
)
def test_anything_else_is_left_to_the_interpreter(expression: str) -> None:
    assert label_tests((expression,)) is None
    assert label_tests(('managedCluster.metadata.labels["a"] == "b"', expression)) is None


LABELS = st.dictionaries(st.sampled_from(["env", "x", "a/b"]), st.sampled_from(["prod", "", "y"]))
TESTS = st.builds(
    lambda key, op, values: (
        (f"managedCluster.metadata.labels[{key!r}] " if key else "managedCluster.metadata.name ")
        + op
        + " "
        + (repr(values[0]) if op != "in" else "[" + ", ".join(map(repr, values)) + "]")
    ),
    st.sampled_from(["env", "x", "a/b", None]),
    st.sampled_from(["==", "!=", "in"]),
    st.lists(st.sampled_from(["prod", "", "y", "c0", "c2"]), min_size=1, max_size=3),
)


@FAST
@given(st.lists(LABELS, min_size=1, max_size=8), st.lists(TESTS, min_size=1, max_size=3))
def test_columns_decide_as_the_interpreter(labels: list[dict[str, str]], tests: list[str]) -> None:
    clusters = [
        ManagedCluster.model_validate({"metadata": {"name": f"c{i}", "labels": given}})
        for i, given in enumerate(labels)
    ]
    selector = compile_selector(tests)
    assert selector.label_tests is not None
    expected = [selector.evaluate(unstructured(c)) for c in clusters]
    index = FleetIndex()
    for c in clusters:
        index.upsert_cluster(cluster_row(c))
    for fleet in (FleetSnapshot.build(clusters), index.snapshot()):
        rows = np.array([fleet.index[c.name] for c in clusters], dtype=np.intp)
        failed, errors = column_verdicts(selector.label_tests, fleet, rows)
        got = [(None if f < 0 else int(f), errors.get(i)) for i, f in enumerate(failed.tolist())]
        assert got == [(v.failed, v.error) for v in expected]
        why: dict[int, str] = {}
        mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), why=why)
        assert [bool(mask[r]) for r in rows] == [v.matched for v in expected]
