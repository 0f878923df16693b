"""Selectors that read only label values, the name and the claims list (`placement.cel.reads`)
are evaluated once per distinct set of the values they read (`placement.cel.groups`), and
decide as the interpreter does on each cluster's whole object: same verdict, same failing
expression, same error, on random fleets, in simulate's snapshot and in the controller's index
(claims lists with duplicate names, empty names or values, empty or absent lists included)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.cluster import AddOnPlacementScore, ManagedCluster
from placement.cel import CelSelector, compile_selector
from placement.cel.claim_reads import ClaimNames
from placement.cel.document import ANNOTATION_LIMIT, claim_projector, claims_text
from placement.cel.groups import _groups, groupable, grouped_rows, grouped_verdicts
from placement.cel.reads import LabelReads, label_reads
from placement.index.fleet_index import FleetIndex, cluster_row
from placement.selectors import cel_mask
from placement.snapshot.fleet_snapshot import FleetSnapshot, unstructured

FAST = settings(max_examples=100, deadline=None)
LABELS = "managedCluster.metadata.labels"
CLAIMS = "managedCluster.status.clusterClaims"
NOTES = "managedCluster.metadata.annotations"


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
        (
            f'{CLAIMS}.exists(c, c.name == "a")',
            LabelReads(frozenset(), False, True, ClaimNames(frozenset({"a"}), 6)),
        ),
        (
            f'{CLAIMS}.filter(c, c.name == "a")[0].value == {LABELS}.v',
            LabelReads(frozenset({"v"}), False, True, ClaimNames(frozenset({"a"}), 6)),
        ),
        (f"size({CLAIMS}) > 0 && has({CLAIMS})", LabelReads(frozenset(), False, True)),
        (
            f'{NOTES}["a"] == "b" && has({NOTES}.c) && "x" in {LABELS}',
            LabelReads(frozenset({"x"}), False, annotations=frozenset({"a", "c"})),
        ),
        (
            'managedCluster.scores("gpu").exists(s, s.value > 3) || {LABELS}.a == "b"'.replace(
                "{LABELS}", LABELS
            ),
            LabelReads(frozenset({"a"}), False, scores=frozenset({"gpu"})),
        ),
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
        "managedCluster.metadata.annotations.size() > 0",  # the whole map
        '"a" in managedCluster.metadata.annotations',
        "managedCluster.metadata.?annotations.orValue({}) == {}",
        'managedCluster.metadata.annotations.exists(k, k == "a")',
        "managedCluster.metadata.annotations.a()",
        f'{NOTES}[?"a"].hasValue()',  # optional forms: the interpreter's
        'managedCluster.metadata.?annotations["a"] == "b"',
        f'{NOTES}.?a.orValue("") == "b"',
        "managedCluster.status.?clusterClaims.orValue([]) == []",
        f"{CLAIMS}[?0].hasValue()",
        "managedCluster.status.conditions == null",
        "managedCluster.status.size() > 0",
        f"{CLAIMS}.exists(c, c.name == managedCluster.metadata.annotations.exists(k, true))",
        "managedCluster.scores(managedCluster.metadata.name).size() > 0",
        'managedCluster.scores("s" + "t").size() > 0',
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


# A claim as on the wire: name and value each "", absent, or one of a few (so that lists repeat
# a name, carry a claim without a name or a value, and clusters share lists).
CLAIM = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["platform", "region", "", "id.k8s.io", ",x", 'a"b']),
        "value": st.sampled_from(["AWS", "GCP", "", '["platform",', "x\\y", "]", "a["]),
    },
)
FLEET_CLAIMS = st.one_of(st.none(), st.lists(CLAIM, max_size=4))  # None: no status at all
CLAIM_TESTS = [
    f'{CLAIMS}.exists(c, c.name == "platform" && c.value == "AWS")',
    f'{CLAIMS}.filter(c, c.name == "platform")[0].value == "AWS"',
    f'{CLAIMS}.filter(c, c.name == "region").size() > 0',
    f'{CLAIMS}.all(c, c.value != "GCP")',
    f'{CLAIMS}.exists_one(c, c.name == "platform")',
    f'{CLAIMS}.map(c, c.name).exists(n, n.startsWith("p"))',
    f"size({CLAIMS}) == 2",
    f"has(managedCluster.status.clusterClaims) && {CLAIMS}[0].name != {LABELS}.env",
    # projected: only the claims of the names tested (and those without a name) matter
    f'{CLAIMS}.exists(c, c.name == "platform" && c.value.startsWith("A"))',
    f'{CLAIMS}.all(c, c.name != "region" || c.value.endsWith("S"))',
    f'{CLAIMS}.exists_one(c, c.name in ["platform", "region"] && c.value != "GCP")',
    f'{CLAIMS}.filter(c, c.name == "region" && has(c.value)).size() == 1',
    f'{CLAIMS}.filter(c, c.name == "platform")[1].value == "GCP"',
    f'has({CLAIMS}) && {CLAIMS}.exists(c, c.name == "a\\"b")',
    f'{CLAIMS}.exists(c, c.name == "" && true)',
    f'{CLAIMS}.exists(c, c.value == "AWS" && c.name == "platform")',  # not projected
    f'{CLAIMS}.exists(c, c.name == ",x")',  # not projected (a name starting with ",")
]
CLAIM_EXPRESSIONS = st.one_of(
    st.sampled_from(CLAIM_TESTS),
    st.builds(
        lambda claim, label, op: f"{claim} {op} {label}",
        st.sampled_from(CLAIM_TESTS),
        EXPRESSIONS,
        st.sampled_from(["&&", "||"]),
    ),
)


def claim_clusters(
    labels: list[dict[str, str]], claims: list[list[dict[str, str]] | None]
) -> list[ManagedCluster]:
    clusters = []
    for i, (own, listed) in enumerate(zip(labels, claims, strict=True)):
        document: dict[str, object] = {"metadata": {"name": f"c{i}", "labels": own}}
        if listed is not None:
            document["status"] = {"clusterClaims": listed}
        clusters.append(ManagedCluster.model_validate(document))
    return clusters


def assert_decides_as_the_interpreter(
    selector: CelSelector, clusters: list[ManagedCluster], fleet: FleetSnapshot
) -> None:
    expected = [selector.evaluate(unstructured(c)) for c in clusters]
    reads = selector.label_reads
    assert reads is not None and reads.claims
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


def with_unique_ids(
    lists: list[list[dict[str, str]] | None], unique: bool
) -> list[list[dict[str, str]] | None]:
    """The lists, each given an `id.k8s.io` claim of its own (at a place that varies) when
    `unique`, as the registration agent reports on a real hub."""
    if not unique:
        return lists
    out: list[list[dict[str, str]] | None] = []
    for i, listed in enumerate(lists):
        claims = list(listed or [])
        claims.insert(i % (len(claims) + 1), {"name": "id.k8s.io", "value": f"uid-{i}"})
        out.append(claims)
    return out


@FAST
@given(
    st.lists(st.tuples(FLEET_LABELS, FLEET_CLAIMS), min_size=1, max_size=10),
    st.lists(CLAIM_EXPRESSIONS, min_size=1, max_size=3),
    st.booleans(),
)
def test_claims_groups_decide_as_the_interpreter(
    fleet_rows: list[tuple[dict[str, str], list[dict[str, str]] | None]],
    tests: list[str],
    unique: bool,
) -> None:
    labels = [given for given, _ in fleet_rows]
    lists = with_unique_ids([listed for _, listed in fleet_rows], unique)
    fleet_rows = list(zip(labels, lists, strict=True))
    clusters = claim_clusters(labels, lists)
    selector = compile_selector(tests)
    assert_decides_as_the_interpreter(selector, clusters, FleetSnapshot.build(clusters))
    # The index: rows added with the lists reversed, then updated in place to the lists as
    # given (a reordered list is a change of the row), and added as given at once.
    reversed_first = claim_clusters(
        labels, [None if listed is None else listed[::-1] for _, listed in fleet_rows]
    )
    updated, added = FleetIndex(), FleetIndex()
    for c in reversed_first:
        updated.upsert_cluster(cluster_row(c))
    updated.snapshot()
    for c in clusters:
        updated.upsert_cluster(cluster_row(c))
        added.upsert_cluster(cluster_row(c))
    for index in (updated, added):
        assert_decides_as_the_interpreter(selector, clusters, index.snapshot())


def test_clusters_sharing_a_claims_list_share_one_run() -> None:
    aws = [{"name": "platform", "value": "AWS"}]
    lists = [aws] * 5 + [aws + aws, [{"name": "x", "value": "y"}, *aws], [], None]
    clusters = claim_clusters([{"zone": f"z{i}"} for i in range(len(lists))], lists)
    fleet = FleetSnapshot.build(clusters)
    selector = compile_selector([f'{CLAIMS}.exists_one(c, c.value == "AWS")'])
    runs: list[int] = []
    timer = lambda: lambda: runs.append(1)  # noqa: E731 - counts interpreter runs
    mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), timer)
    # four lists: [aws], [aws, aws], [x, aws], none (empty and absent alike)
    assert len(runs) == 4
    assert fleet.rows_to_names(np.flatnonzero(mask)) == ["c0", "c1", "c2", "c3", "c4", "c6"]
    why: dict[int, str] = {}
    cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), why=why)
    assert why[fleet.index["c5"]] == "celExpressions[0] is not true"
    for empty in ("c7", "c8"):
        assert why[fleet.index[empty]] == "celExpressions[0] failed: no such key: clusterClaims"


@FAST
@given(st.lists(st.tuples(st.integers(-1, 3), st.integers(-1, 2)), min_size=1, max_size=20))
def test_codes_group_alike_mixed_into_one_key_or_not(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs], dtype=np.int32)
    b = np.array([p[1] for p in pairs], dtype=np.int32)
    for bounds in ((4, 3), (1 << 40, 1 << 30)):  # the second overflows one int64 key
        first, inverse, count = _groups([(a, bounds[0]), (b, bounds[1])])
        assert count == len(set(pairs)) == first.size
        assert all(pairs.index(pairs[i]) == i for i in first.tolist())  # first occurrences
        for at, group in enumerate(inverse.tolist()):
            assert pairs[int(first[group])] == pairs[at]
        assert len(set(inverse.tolist())) == count


def test_index_claims_lists_follow_added_and_deleted_rows() -> None:
    aws, gcp = {"name": "platform", "value": "AWS"}, {"name": "platform", "value": "GCP"}
    first = claim_clusters([{}, {}, {}], [[aws], [gcp, aws], None])  # c0, c1, c2
    index = FleetIndex()
    for c in first:
        index.upsert_cluster(cluster_row(c))
    selector = compile_selector([f'{CLAIMS}.filter(c, c.name == "platform")[0].value == "AWS"'])
    assert_decides_as_the_interpreter(selector, first, index.snapshot())
    # c0 deleted and "d" added (c1 and c2 move up a row), c2 given claims in place
    index.delete_cluster("c0")
    added = ManagedCluster.model_validate(
        {"metadata": {"name": "d"}, "status": {"clusterClaims": [gcp]}}
    )
    index.upsert_cluster(cluster_row(added))
    now = [first[1], *claim_clusters([{}, {}, {}], [None, None, [aws, gcp]])[2:], added]
    index.upsert_cluster(cluster_row(now[1]))
    fleet = index.snapshot()
    assert fleet.names == ("c1", "c2", "d")
    assert_decides_as_the_interpreter(selector, now, fleet)
    assert fleet.rows_to_names(np.flatnonzero(cel_mask(selector, fleet, fleet.deleting == 0))) == [
        "c2"
    ]


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        (f'{CLAIMS}.exists(c, c.name == "p" && c.value == "AWS")', {"p"}),
        (f'{CLAIMS}.exists_one(x, x.name in ["p", \'q\'] && x.value != "")', {"p", "q"}),
        (f'{CLAIMS}.filter(c, c.name == "p")[0].value == "AWS"', {"p"}),
        (f'{CLAIMS}.filter(c, c.name == "p" && c.value > "a").size() > 0', {"p"}),
        (f'{CLAIMS}.all(c, c.name != "p" || c.value == "x" && true)', {"p"}),
        (f'has({CLAIMS}) && {CLAIMS}.exists(c, c.name == "p" && (c.value == "a" || true))', {"p"}),
        (f'{CLAIMS}.exists(c, c.name == "p") || {CLAIMS}.exists(c, c.name == "q")', {"p", "q"}),
    ],
)
def test_claims_projected_on_the_names_tested(expression: str, names: set[str]) -> None:
    compile_selector([expression])
    reads = label_reads((expression,))
    assert reads is not None and reads.claim_names is not None
    assert reads.claim_names.names == names


@pytest.mark.parametrize(
    "expression",
    [
        f'{CLAIMS}.exists(c, c.value == "AWS" && c.name == "p")',  # the name test not first
        f'{CLAIMS}.exists(c, c.name == "p" && c.value == "a" || c.value == "b")',  # || looser
        f'{CLAIMS}.exists(c, c.name == "p" ? true : false)',
        f'{CLAIMS}.all(c, c.name == "p" || c.value == "a")',  # true for other names? no
        f'{CLAIMS}.exists(c, c.name != "p" && c.value == "a")',
        f'{CLAIMS}.all(c, c.name != "p" && c.value == "a")',
        f'{CLAIMS}.map(c, c.value).exists(v, v == "a")',
        f'{CLAIMS}.map(c, c.name == "p", c.value).size() > 0',
        f'size({CLAIMS}) > 1 && {CLAIMS}.exists(c, c.name == "p")',
        f'{CLAIMS}[0].name == "p"',
        f"{CLAIMS}.exists(c, c.name == {LABELS}.p)",
        f'{CLAIMS}.exists(c, c.name in ["p", {LABELS}.q])',
        f'{CLAIMS}.exists(c, c.name == b"p")',
        f'{CLAIMS}.exists(c, c.name == "]p")',
        f'[1, 2].exists(x, {CLAIMS}.exists(c, c.name == "p"))',  # would run twice
        f'{CLAIMS}.exists(c, c.name == "p" && {CLAIMS}.exists(d, d.name == "q"))',
        f'{CLAIMS}.exists(c, d.name == "p")',
    ],
)
def test_other_claims_uses_read_the_whole_list(expression: str) -> None:
    reads = label_reads((expression,))
    assert reads is not None and reads.claims and reads.claim_names is None


def test_unique_id_claims_share_runs_when_projected() -> None:
    aws, gcp = {"name": "platform", "value": "AWS"}, {"name": "platform", "value": "GCP"}
    given: list[list[dict[str, str]] | None] = [[aws], [aws], [aws], [aws], [gcp], [gcp], [gcp]]
    given += [[], None]
    lists = with_unique_ids(given, True)
    clusters = claim_clusters([{} for _ in lists], lists)
    fleet = FleetSnapshot.build(clusters)
    runs: list[int] = []
    timer = lambda: lambda: runs.append(1)  # noqa: E731 - counts interpreter runs
    projected = compile_selector([f'{CLAIMS}.exists(c, c.name == "platform" && c.value == "AWS")'])
    mask = cel_mask(projected, fleet, np.ones(fleet.size, dtype=bool), timer)
    assert len(runs) == 3  # [aws], [gcp], [] (the id claims left out)
    assert fleet.rows_to_names(np.flatnonzero(mask)) == ["c0", "c1", "c2", "c3"]
    runs.clear()
    whole = compile_selector([f'{CLAIMS}.exists(c, c.value == "AWS" && c.name == "platform")'])
    cel_mask(whole, fleet, np.ones(fleet.size, dtype=bool), timer)
    assert len(runs) == len(lists)  # every list distinct


def test_claims_left_out_that_would_spend_the_budget_are_run_whole() -> None:
    # Each claim named otherwise costs the body's charge in the whole list: 1,000 of them
    # with a body of about 1,000 nodes spend the per-expression budget, which the projected
    # list (one claim) does not.
    ballast = ", ".join("0" for _ in range(1_000))
    expression = f'{CLAIMS}.exists(c, c.name == "platform" && [{ballast}].size() > 0)'
    selector = compile_selector([expression])
    assert selector.label_reads is not None and selector.label_reads.claim_names is not None
    others = [{"name": f"n{i}", "value": "v"} for i in range(1_000)]
    aws = {"name": "platform", "value": "AWS"}
    lists: list[list[dict[str, str]] | None] = [[*others, aws], [aws], [*others[:10], aws]]
    clusters = claim_clusters([{}, {}, {}], lists)
    expected = [selector.evaluate(unstructured(c)) for c in clusters]
    assert expected[0].error == "operation cancelled: actual cost limit exceeded"
    assert expected[1].matched and expected[2].matched
    assert_decides_as_the_interpreter(selector, clusters, FleetSnapshot.build(clusters))


# Annotations as on the wire: a few keys and values, one too long for a row to keep.
LONG = "x" * (ANNOTATION_LIMIT + 1)
FLEET_NOTES = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["a", "b", "k/x"]), st.sampled_from(["on", "", "1"]), max_size=2
    ),
)
NOTE_TESTS = st.sampled_from(
    [
        f'{NOTES}["a"] == "on"',
        f"has({NOTES}.b) && {NOTES}.b.startsWith('1')",
        f'has({NOTES}.a) ? {NOTES}["k/x"] != "" : true',
        f'{NOTES}["a"] == "" || {LABELS}.env == "prod"',
        f'{NOTES}.b == "on" && {CLAIMS}.exists(c, c.name == "platform")',
        f'int({NOTES}["b"]) > 0',
    ]
)


@FAST
@given(
    st.lists(st.tuples(FLEET_LABELS, FLEET_NOTES, FLEET_CLAIMS), min_size=1, max_size=8),
    st.lists(NOTE_TESTS, min_size=1, max_size=2),
    st.booleans(),
)
def test_annotation_groups_decide_as_the_interpreter(
    fleet_rows: list[tuple[dict[str, str], dict[str, str] | None, list[dict[str, str]] | None]],
    tests: list[str],
    one_long: bool,
) -> None:
    clusters = []
    for i, (labels, notes, claims) in enumerate(fleet_rows):
        metadata: dict[str, object] = {"name": f"c{i}", "labels": labels}
        if one_long and i == len(fleet_rows) - 1:
            notes = {**(notes or {}), "big": LONG}  # that cluster then runs on its object
        if notes is not None:
            metadata["annotations"] = notes
        document: dict[str, object] = {"metadata": metadata}
        if claims is not None:
            document["status"] = {"clusterClaims": claims}
        clusters.append(ManagedCluster.model_validate(document))
    selector = compile_selector(tests)
    reads = selector.label_reads
    assert reads is not None and reads.annotations
    expected = [selector.evaluate(unstructured(c)) for c in clusters]
    before, index = FleetIndex(), FleetIndex()
    for c in clusters:
        index.upsert_cluster(cluster_row(c))
        before.upsert_cluster(
            cluster_row(
                c.model_copy(
                    update={"metadata": c.metadata.model_copy(update={"annotations": None})}
                )
            )
        )
    stale = before.snapshot()
    cel_mask(selector, stale, np.ones(stale.size, dtype=bool))  # verdicts cached, then stale
    for c in clusters:  # annotations given in place
        before.upsert_cluster(cluster_row(c))
    for fleet in (FleetSnapshot.build(clusters), index.snapshot(), before.snapshot()):
        assert groupable(reads, fleet)
        long_rows = grouped_rows(reads, fleet, np.arange(fleet.size))
        assert [not bool(long_rows[fleet.index[c.name]]) for c in clusters] == [
            one_long and i == len(clusters) - 1 for i in range(len(clusters))
        ]
        why: dict[int, str] = {}
        mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), why=why)
        rows = [fleet.index[c.name] for c in clusters]
        assert [bool(mask[r]) for r in rows] == [v.matched for v in expected]
        for r, v in zip(rows, expected, strict=True):
            if not v.matched:
                detail = f"failed: {v.error}" if v.error is not None else "is not true"
                assert why[r] == f"celExpressions[{v.failed}] {detail}"


def test_clusters_sharing_the_annotations_read_share_one_run() -> None:
    notes = [{"a": "on", "id": f"u{i}"} for i in range(5)] + [{"a": "off"}, {"z": "1"}, {}]
    clusters = [
        ManagedCluster.model_validate({"metadata": {"name": f"c{i}", "annotations": given}})
        for i, given in enumerate(notes)
    ]
    index = FleetIndex()
    for c in clusters:
        index.upsert_cluster(cluster_row(c))
    fleet = index.snapshot()
    selector = compile_selector([f'{NOTES}["a"] == "on"'])
    runs: list[int] = []
    timer = lambda: lambda: runs.append(1)  # noqa: E731 - counts interpreter runs
    mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), timer)
    assert len(runs) == 4  # a=on, a=off, annotations without a, no annotations
    assert fleet.rows_to_names(np.flatnonzero(mask)) == ["c0", "c1", "c2", "c3", "c4"]
    why: dict[int, str] = {}
    cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), why=why)
    assert why[fleet.index["c6"]] == "celExpressions[0] failed: no such key: a"
    assert why[fleet.index["c7"]] == "celExpressions[0] failed: no such key: annotations"


def test_annotations_changed_in_place_reach_the_groups() -> None:
    def annotated(notes: dict[str, str] | None) -> ManagedCluster:
        return ManagedCluster.model_validate({"metadata": {"name": "c0", "annotations": notes}})

    index = FleetIndex()
    selector = compile_selector([f'{NOTES}["a"] == "on"'])
    reads = selector.label_reads
    assert reads is not None
    for notes, kept, matched in [
        ({"a": "on"}, True, True),
        ({"a": "on"}, True, True),  # the same values again: nothing to make anew
        ({"a": "on", "big": LONG}, False, True),  # too long to keep: on its object
        (None, True, False),
        ({"big": LONG}, False, False),
        ({"a": "on"}, True, True),
    ]:
        index.upsert_cluster(cluster_row(annotated(notes)))
        fleet = index.snapshot()
        assert bool(grouped_rows(reads, fleet, np.arange(1))[0]) is kept
        mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool))
        assert bool(mask[0]) is matched


TRICKY = st.text(alphabet='ab[],"\\ ', max_size=5)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(TRICKY, TRICKY), max_size=5),
    st.sets(TRICKY.filter(lambda n: n[:1] not in (",", "]")), max_size=3),
)
def test_projection_keeps_the_claims_of_the_names_in_order(
    pairs: list[tuple[str, str]], names: set[str]
) -> None:
    wanted = [[n, v] for n, v in pairs if n in names or not n]
    text = claims_text(pairs)
    projected = claim_projector(names)(text)
    if not pairs:
        assert projected == ""
    else:  # with a backslash the list is parsed and written again: the same JSON either way
        assert projected == ("[]" if not wanted else claims_text((n, v) for n, v in wanted))


def test_a_cluster_with_a_long_annotation_alone_runs_on_its_object() -> None:
    notes = [{"a": "on"}] * 5 + [{"a": "on", "big": LONG}, {"a": "off", "big": LONG}]
    clusters = [
        ManagedCluster.model_validate({"metadata": {"name": f"c{i}", "annotations": given}})
        for i, given in enumerate(notes)
    ]
    fleet = FleetSnapshot.build(clusters)
    selector = compile_selector([f'{NOTES}["a"] == "on"'])
    runs: list[int] = []
    timer = lambda: lambda: runs.append(1)  # noqa: E731 - counts interpreter runs
    mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), timer)
    assert len(runs) == 3  # one group of five, two clusters on their objects
    assert fleet.rows_to_names(np.flatnonzero(mask)) == ["c0", "c1", "c2", "c3", "c4", "c5"]


SCORE_ITEMS = st.one_of(
    st.none(),  # no AddOnPlacementScore of that name in the cluster's namespace
    st.lists(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["gpu", "mem", ""]), "value": st.integers(-2, 5)}
        ),
        max_size=3,
        unique_by=lambda item: item["name"],  # the CRD's list map: one item per name
    ),
)
SCORE_TESTS = st.sampled_from(
    [
        'managedCluster.scores("s").exists(i, i.name == "gpu" && i.value > 2)',
        'managedCluster.scores("s").size() == 0',
        'managedCluster.scores("t").all(i, i.value >= 0) && managedCluster.scores("s").size() > 1',
        'managedCluster.scores("s").filter(i, i.name == "mem")[0].value < 3',
        f'managedCluster.scores("s").size() > 0 || {LABELS}["env"] == "prod"',
        'managedCluster.metadata.name.endsWith("1") && managedCluster.scores("t").size() < 2',
    ]
)


def score_objects(
    named: str, items: list[list[dict[str, object]] | None]
) -> list[AddOnPlacementScore]:
    return [
        AddOnPlacementScore.model_validate(
            {"metadata": {"name": named, "namespace": f"c{i}"}, "status": {"scores": listed}}
        )
        for i, listed in enumerate(items)
        if listed is not None
    ]


@FAST
@given(
    st.lists(st.tuples(FLEET_LABELS, SCORE_ITEMS, SCORE_ITEMS), min_size=1, max_size=10),
    st.lists(SCORE_TESTS, min_size=1, max_size=2),
)
def test_score_groups_decide_as_the_interpreter(
    fleet_rows: list[
        tuple[dict[str, str], list[dict[str, object]] | None, list[dict[str, object]] | None]
    ],
    tests: list[str],
) -> None:
    """Clusters sharing their labels read and the items of each score read share a run, and
    the verdicts (a missing score object's error included) are the interpreter's on each
    cluster with the score look-up by its name."""
    clusters = fleet_clusters([labels for labels, _, _ in fleet_rows])
    scores = score_objects("s", [s for _, s, _ in fleet_rows])
    scores += score_objects("t", [t for _, _, t in fleet_rows])
    selector = compile_selector(tests)
    reads = selector.label_reads
    assert reads is not None and reads.scores
    by_key = {(o.namespace, o.name): o for o in scores}

    def lookup(cluster: str, name: str) -> list[dict[str, object]] | None:
        found = by_key.get((cluster, name))
        if found is None:
            return None
        assert found.status is not None
        return [{"name": i.name, "value": i.value} for i in found.status.scores or []]

    expected = [selector.evaluate(unstructured(c), lookup) for c in clusters]
    index = FleetIndex()
    for c in clusters:
        index.upsert_cluster(cluster_row(c))
    for o in scores:
        index.upsert_score(o)
    for fleet in (FleetSnapshot.build(clusters, scores=scores), index.snapshot()):
        rows = np.array([fleet.index[c.name] for c in clusters], dtype=np.intp)
        failed, errors = grouped_verdicts(selector, reads, fleet, rows)
        got = [(None if f < 0 else int(f), errors.get(i)) for i, f in enumerate(failed.tolist())]
        assert got == [(v.failed, v.error) for v in expected]
        mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool))
        assert [bool(mask[r]) for r in rows] == [v.matched for v in expected]


def test_clusters_sharing_score_values_share_one_run() -> None:
    clusters = fleet_clusters([{} for _ in range(40)])
    items = [[{"name": "gpu", "value": i % 3}] for i in range(39)] + [None]
    fleet = FleetSnapshot.build(clusters, scores=score_objects("s", items))
    selector = compile_selector(['managedCluster.scores("s")[0].value > 1'])
    runs: list[int] = []
    timer = lambda: lambda: runs.append(1)  # noqa: E731 - counts interpreter runs
    why: dict[int, str] = {}
    mask = cel_mask(selector, fleet, np.ones(fleet.size, dtype=bool), timer, why)
    assert len(runs) == 4  # values 0, 1, 2 and no score object
    assert sorted(fleet.rows_to_names(np.flatnonzero(mask))) == sorted(
        f"c{i}" for i in range(39) if i % 3 == 2
    )
    assert why[fleet.index["c39"]] == (
        # as OCM's controller logs it (00f84c32b): the singular, no status code
        "celExpressions[0] failed: failed to get score: "
        'addonplacementscore.cluster.open-cluster-management.io "s" not found'
    )
