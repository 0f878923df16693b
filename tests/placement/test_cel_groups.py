"""Selectors that read only label values and the name (`placement.cel.reads`) are evaluated
once per distinct set of the values they read (`placement._cel_groups`), and decide as the
interpreter does on each cluster's whole object: same verdict, same failing expression, same
error, on random fleets, in simulate's snapshot and in the controller's index."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.cluster import ManagedCluster
from placement._cel_groups import grouped_verdicts
from placement.cel import compile_selector
from placement.cel.reads import LabelReads, label_reads
from placement.index import FleetIndex, cluster_row
from placement.selectors import cel_mask
from placement.snapshot import FleetSnapshot, unstructured

FAST = settings(max_examples=100, deadline=None)
LABELS = "managedCluster.metadata.labels"


@pytest.mark.parametrize(
    ("expression", "reads"),
    [
        (f'{LABELS}["v"].startsWith("1")', LabelReads(frozenset({"v"}), False)),
        (f'semver({LABELS}.v).isGreaterThan(semver("1.2.3"))', LabelReads(frozenset({"v"}), False)),
        (f"has({LABELS}.x) && {LABELS}['a/b'] == 'y'", LabelReads(frozenset({"x", "a/b"}), False)),
        ('managedCluster.metadata.name.endsWith("-1")', LabelReads(frozenset(), True)),
        (f'{LABELS}[""] == managedCluster.metadata.name', LabelReads(frozenset({""}), True)),
        ("1 == 1", LabelReads(frozenset(), False)),
        (f'"env" in {LABELS}', LabelReads(frozenset({"env"}), False)),
        (f'(true && "env" in {LABELS}) == true', LabelReads(frozenset({"env"}), False)),
    ],
)
def test_label_reads_are_found(expression: str, reads: LabelReads) -> None:
    compile_selector([expression])
    assert label_reads((expression,)) == reads


@pytest.mark.parametrize(
    "expression",
    [
        f'{LABELS}.exists(k, k == "x")',  # the whole map: its order could matter
        f"{LABELS}.size() > 1",
        f'"x" + "y" in {LABELS}',  # a computed key
        f'"x" in {LABELS} + {{"y": "z"}}',  # the whole map
        f'true == "x" in {LABELS}',  # (true == "x") in ...
        f'{LABELS}.?x.orValue("") == ""',
        f"{LABELS}[{LABELS}.x] == 'y'",  # a computed key
        'managedCluster.metadata.?name.orValue("") == ""',
        'managedCluster.metadata.annotations["a"] == "b"',
        'managedCluster.status.clusterClaims.exists(c, c.name == "a")',
        'managedCluster.scores("s").size() > 0',
        "has(managedCluster.metadata)",
        '[{"metadata": {"name": "x"}}].exists(managedCluster, managedCluster.metadata.name == "x")',
        'managedCluster["metadata"]["name"] == "x"',
    ],
)
def test_anything_else_is_not_grouped(expression: str) -> None:
    assert label_reads((expression,)) is None
    assert label_reads((f'{LABELS}["a"] == "b"', expression)) is None


VALUES = st.sampled_from(["1.2.3", "1.10.0", "v1.2", "prod", "", "12"])
FLEET_LABELS = st.dictionaries(st.sampled_from(["v", "env", "a/b", "n"]), VALUES, max_size=3)
EXPRESSIONS = st.sampled_from(
    [
        f'{LABELS}["v"].startsWith("1")',
        f'semver({LABELS}.v).isGreaterThan(semver("1.2.3"))',
        f'semver({LABELS}["v"]).compareTo(semver("1.2.0")) >= 0',
        f"has({LABELS}.env)",
        f'{LABELS}["env"].matches("^p")',
        f'int({LABELS}["n"]) > 5',
        f'{LABELS}["a/b"] + {LABELS}["env"] == "prodprod"',
        'managedCluster.metadata.name.endsWith("1")',
        f'{LABELS}["env"] == "prod" || {LABELS}.v == "12"',
        f"size({LABELS}.n) == 2",
        f'"env" in {LABELS} || "a/b" in {LABELS}',
        f'!("v" in {LABELS}) ? {LABELS}.n == "12" : {LABELS}.v.startsWith("v")',
    ]
)


def fleet_clusters(labels: list[dict[str, str]]) -> list[ManagedCluster]:
    return [
        ManagedCluster.model_validate({"metadata": {"name": f"c{i}", "labels": given}})
        for i, given in enumerate(labels)
    ]


@FAST
@given(
    st.lists(FLEET_LABELS, min_size=1, max_size=10), st.lists(EXPRESSIONS, min_size=1, max_size=3)
)
def test_groups_decide_as_the_interpreter(labels: list[dict[str, str]], tests: list[str]) -> None:
    clusters = fleet_clusters(labels)
    selector = compile_selector(tests)
    reads = selector.label_reads
    assert reads is not None
    expected = [selector.evaluate(unstructured(c)) for c in clusters]
    index = FleetIndex()
    for c in clusters:
        index.upsert_cluster(cluster_row(c))
    for fleet in (FleetSnapshot.build(clusters), index.snapshot()):
        rows = np.array([fleet.index[c.name] for c in clusters], dtype=np.intp)
        failed, errors = grouped_verdicts(selector, reads, fleet, rows)
        got = [(None if f < 0 else int(f), errors.get(i)) for i, f in enumerate(failed.tolist())]
        assert got == [(v.failed, v.error) for v in expected]
        why: dict[int, str] = {}
        mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), why=why)
        assert [bool(mask[r]) for r in rows] == [v.matched for v in expected]
        for r, v in zip(rows.tolist(), expected, strict=True):
            if not v.matched:
                detail = f"failed: {v.error}" if v.error is not None else "is not true"
                assert why[r] == f"celExpressions[{v.failed}] {detail}"


def test_clusters_sharing_the_values_read_share_one_run() -> None:
    clusters = fleet_clusters(
        [{"v": "1.2.3", "zone": f"z{i}"} for i in range(6)] + [{"v": "2.0.0"}, {"zone": "z"}, {}]
    )
    fleet = FleetSnapshot.build(clusters)
    selector = compile_selector([f'semver({LABELS}.v).isGreaterThan(semver("1.5.0"))'])
    runs: list[int] = []
    timer = lambda: lambda: runs.append(1)  # noqa: E731 - counts interpreter runs
    mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), timer)
    # three sets of values read: v=1.2.3, v=2.0.0, no v (with other labels, without any)
    assert len(runs) == 4
    assert fleet.rows_to_names(np.flatnonzero(mask)) == ["c6"]
    why: dict[int, str] = {}
    cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), why=why)
    assert why[fleet.index["c7"]] == "celExpressions[0] failed: no such key: v"
    assert why[fleet.index["c8"]] == "celExpressions[0] failed: no such key: labels"
