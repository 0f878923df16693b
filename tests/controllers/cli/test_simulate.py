"""`placement simulate` on the samples, and the input handling it shares with `placement
explain`: bad input, the clock, other kinds skipped, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from apis.placements import PLACEMENT_LABEL
from controllers.cli.main import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main
from tests.controllers.cli.samples import NOW, PLACEMENTS, ROOT, SAMPLES, broken_cel, run

INVALID = ROOT / "tests" / "data" / "invalid" / "placement-weight-too-high.yaml"


def test_samples_have_placements_to_simulate() -> None:
    assert len(PLACEMENTS) >= 10
    assert "apps/web-label-predicate" in PLACEMENTS


def test_simulate_json_lists_every_placement_with_status_and_its_decisions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "simulate", "-f", SAMPLES, *NOW)
    assert code == EXIT_OK
    doc = json.loads(out)
    assert (doc["apiVersion"], doc["kind"]) == ("v1", "List")
    placements = [i for i in doc["items"] if i["kind"] == "Placement"]
    keys = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in placements]
    assert keys == PLACEMENTS  # sorted by namespace/name
    for p in placements:
        types = {c["type"] for c in p["status"]["conditions"]}
        assert types == {"PlacementSatisfied", "PlacementMisconfigured"}
    decisions = [i for i in doc["items"] if i["kind"] == "PlacementDecision"]
    assert decisions
    for pd in decisions:
        owner = pd["metadata"]["labels"][PLACEMENT_LABEL]
        assert pd["metadata"]["name"].startswith(f"{owner}-decision-")
    # the pod-level sample kinds are skipped with a warning, not an error
    assert "warning: skipped" in err


def test_simulate_yaml_is_the_same_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "-f", SAMPLES, "-o", "yaml", *NOW)
    assert code == EXIT_OK
    from_yaml = yaml.safe_load(out)
    _, out_json, _ = run(capsys, "simulate", "-f", SAMPLES, *NOW)
    assert from_yaml == json.loads(out_json)


def _table_rows(out: str) -> tuple[str, list[str], list[str]]:
    """The header, the rows and the notes under them of `simulate -o table`."""
    table, _, notes = out.partition("\n\n")
    header, *rows = table.splitlines()
    return header, rows, notes.splitlines()


def test_simulate_table_has_one_row_per_placement(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "-f", SAMPLES, "-o", "table", *NOW)
    assert code == EXIT_OK
    header, rows, _ = _table_rows(out)
    assert header.split() == ["NAMESPACE", "NAME", "SATISFIED", "REASON", "SELECTED", "CLUSTERS"]
    assert [f"{r.split()[0]}/{r.split()[1]}" for r in rows] == PLACEMENTS
    select_none = next(r for r in rows if " select-none " in r)
    assert select_none.split()[2:5] == ["False", "NoManagedClusterMatched", "0"]


def test_simulate_table_shows_a_misconfigured_placement_and_its_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    extra = broken_cel(tmp_path)
    code, out, _ = run(capsys, "simulate", "-f", SAMPLES, "-f", extra, "-o", "table", *NOW)
    assert code == EXIT_OK
    _, rows, notes = _table_rows(out)
    cel = next(r for r in rows if " web-cel-broken " in r)
    assert cel.split()[2:5] == ["False", "Misconfigured", "0"]
    assert any(
        n.startswith("apps/web-cel-broken: Misconfigured: Predicate:compilation failed: ERROR:")
        for n in notes
    )
    # every placement that is not satisfied has its note, and only those
    unsatisfied = {f"{r.split()[0]}/{r.split()[1]}" for r in rows if r.split()[2] != "True"}
    assert {n.split(":")[0] for n in notes} == unsatisfied


def test_simulate_table_fits_120_columns_and_counts_the_clusters_it_leaves_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "simulate", "-f", SAMPLES, "-o", "table", *NOW)
    assert max(len(line) for line in out.splitlines()) <= 120
    _, rows, _ = _table_rows(out)
    _, as_json, _ = run(capsys, "simulate", "-f", SAMPLES, "-o", "json", *NOW)
    doc = json.loads(as_json)
    decided = {
        pd["metadata"]["labels"][PLACEMENT_LABEL]: [
            d["clusterName"] for d in pd["status"]["decisions"]
        ]
        for pd in doc["items"]
        if pd["kind"] == "PlacementDecision"
    }
    select_all = next(r for r in rows if " select-all " in r).split(maxsplit=5)
    selected = int(select_all[4])
    assert selected == len(decided["select-all"]) > 10
    shown = select_all[5]
    names, count = shown.rsplit("(+", 1) if "(+" in shown else ("", shown.lstrip("+"))
    if not names:  # not even one name fits: the count says what it counts
        assert count.endswith(" more"), shown
    kept = [n for n in names.strip().split(",") if n]
    assert len(kept) + int(count.rstrip(")").removesuffix(" more")) == selected


def test_simulate_wide_shows_every_cluster_group_and_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "simulate", "-f", SAMPLES, "-o", "wide", *NOW)
    assert code == EXIT_OK
    header, *rows = out.splitlines()
    assert header.split() == [
        "NAMESPACE",
        "NAME",
        "SATISFIED",
        "REASON",
        "SELECTED",
        "CLUSTERS",
        "GROUPS",
        "MESSAGE",
    ]
    _, as_json, _ = run(capsys, "simulate", "-f", SAMPLES, *NOW)
    items = json.loads(as_json)["items"]
    for placement in (i for i in items if i["kind"] == "Placement"):
        name = placement["metadata"]["name"]
        row = next(r for r in rows if r.split()[1] == name)
        clusters = [
            d["clusterName"]
            for pd in items
            if pd["kind"] == "PlacementDecision"
            and pd["metadata"]["labels"][PLACEMENT_LABEL] == name
            and pd["metadata"]["namespace"] == placement["metadata"]["namespace"]
            for d in pd["status"]["decisions"]
        ]
        if clusters:
            assert f"   {','.join(clusters)}   " in row
        groups = placement["status"]["decisionGroups"]
        assert (
            ",".join(
                f"{g.get('decisionGroupName') or g['decisionGroupIndex']}:{g['clusterCount']}"
                for g in groups
            )
            in row
        )
    cel = next(r for r in rows if " web-cel-predicate " in r)
    assert cel.split()[2] == "True"  # the CEL sample schedules
    assert max(len(line) for line in rows) > 120  # nothing cut


def test_invalid_object_exits_1_naming_file_and_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "simulate", "-f", str(INVALID))
    assert code == EXIT_ERROR
    assert out == ""
    assert str(INVALID) in err
    assert "Placement ns1/web" in err


def test_missing_file_exits_1_naming_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    code, _, err = run(capsys, "simulate", "-f", str(missing))
    assert code == EXIT_ERROR
    assert str(missing) in err


def test_bad_clock_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "simulate", "-f", SAMPLES, "--now", "yesterday")
    assert code == EXIT_ERROR
    assert "--now" in err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["simulate"], id="simulate-without-file"),
        pytest.param(["simulate", "-f", SAMPLES, "-o", "xml"], id="simulate-bad-output"),
        pytest.param(["explain", "-f", SAMPLES], id="explain-without-placement"),
        pytest.param(
            ["explain", "-f", SAMPLES, "--placement", "a/b", "-o", "xml"], id="explain-bad-output"
        ),
        pytest.param(["frobnicate"], id="unknown-command"),
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == EXIT_USAGE
    assert "usage:" in capsys.readouterr().err


MIXED = """\
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}
---
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: one}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: global}
spec: {clusterSelector: {selectorType: LabelSelector, labelSelector: {}}}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: global, namespace: apps}
spec: {clusterSet: global}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: web, namespace: apps}
spec: {}
"""


def test_other_kinds_are_skipped_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "mixed.yaml").write_text(MIXED)
    code, out, err = run(capsys, "simulate", "-f", str(tmp_path), "-o", "table", *NOW)
    assert code == EXIT_OK
    assert "warning" in err
    assert "skipped objects of other kinds: 1 Deployment, 1 Namespace" in err
    (row,) = out.splitlines()[1:]
    assert row.split() == ["apps", "web", "True", "AllDecisionsScheduled", "1", "one"]


DUPLICATED = """\
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: twice, labels: {env: dev}}
---
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: twice, labels: {env: prod}}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: global}
spec: {clusterSelector: {selectorType: LabelSelector, labelSelector: {}}}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: global, namespace: ns}
spec: {clusterSet: global}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: prod, namespace: ns}
spec:
  predicates:
  - requiredClusterSelector: {labelSelector: {matchLabels: {env: prod}}}
"""


def test_a_cluster_defined_twice_is_a_warning_and_the_last_definition(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text(DUPLICATED)
    code, out, err = run(capsys, "simulate", "-f", str(path), *NOW)
    assert code == EXIT_OK, err
    assert f"{path}: document 2: ManagedCluster twice is also defined at {path}: document 1" in err
    (placement,) = [i for i in json.loads(out)["items"] if i["kind"] == "Placement"]
    assert placement["status"]["numberOfSelectedClusters"] == 1
