"""Issue 20, items 4-9: the hostile-input corpus (tests/data/hostile) through the commands that
read manifests. A document that cannot be read (nesting too deep, an alias bomb, a recursive
alias, an integer beyond its int32/int64 range, a bad name or namespace) ends the command with
exit code 1 and exactly one line on stderr naming the file and the document; one that can be
scheduled but not as written (a 40,000-character mode, a placement name too long for the
PlacementDecision label, a toleration expiring after the year 9999) is scheduled, with a
condition saying why.

The documents that used to crash the process itself (SIGSEGV, a hang, RecursionError) run in a
subprocess, as a user runs the command; the others in process, which is quicker.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from controllers.cli.main import EXIT_ERROR, EXIT_OK, main
from controllers.cli.manifests import MAX_DEPTH
from placement.outcome import MAX_CONDITION_MESSAGE
from tests.controllers.cli.samples import ROOT
from tests.controllers.cli.test_bad_invocations import assert_one_error_line, placement

HOSTILE = ROOT / "tests" / "data" / "hostile"
NOW = "2026-06-01T00:00:00Z"

# File -> the error after `<file>: document <n>: `, for documents refused when read.
REFUSED: dict[str, tuple[int, str]] = {
    "deep.json": (1, f"the document nests deeper than {MAX_DEPTH} levels"),
    "deep-flow.yaml": (4, f"the document nests deeper than {MAX_DEPTH} levels"),
    "alias-bomb.yaml": (4, r"aliases expand the document beyond 10000 more nodes .*"),
    "alias-recursive.yaml": (4, r"the alias \*spec refers to a node containing it"),
    "number-of-clusters-over-int32.yaml": (
        4,
        r"Placement apps/p: spec\.numberOfClusters: must be between 0 and 2147483647, "
        r"within the int32 range \(got 2147483648\)",
    ),
    "max-skew-over-int32.yaml": (
        4,
        r"Placement apps/p: spec\.spreadPolicy\.spreadConstraints\[0\]\.maxSkew: "
        r"must be between 1 and 2147483647, within the int32 range \(got 2147483648\)",
    ),
    "lease-duration-over-int32.yaml": (
        3,
        r"ManagedCluster c1: spec\.leaseDurationSeconds: must be between 0 and 2147483647, "
        r"within the int32 range \(got 2147483648\)",
    ),
    "toleration-seconds-over-int64.yaml": (
        4,
        r"Placement apps/p: spec\.tolerations\[0\]\.tolerationSeconds: must be between "
        r"-9223372036854775808 and 9223372036854775807, within the int64 range "
        r"\(got 9223372036854775808\)",
    ),
    "integer-5000-digits.yaml": (
        4,
        r"invalid YAML: Exceeds the limit \(4300 digits\) for integer string conversion: "
        r"value has 5000 digits",
    ),
    "clusters-per-group-over-int32.yaml": (
        4,
        r"Placement apps/p: spec\.decisionStrategy\.groupStrategy\.clustersPerDecisionGroup: "
        r"must be between -2147483648 and 2147483647, within the int32 range "
        r"\(got 2147483648\)",
    ),
    "name-uppercase.yaml": (
        4,
        r'Placement apps/Bad_Name: metadata\.name: Invalid value: "Bad_Name": a lowercase '
        r"RFC 1123 subdomain .*",
    ),
    "name-254.yaml": (
        4,
        r"Placement apps/a{254}: metadata\.name: Invalid value: \"a{254}\": "
        r"must be no more than 253 characters",
    ),
    "name-empty.yaml": (
        4,
        r"Placement apps/<unnamed>: metadata\.name: Required value: name or generateName is "
        r"required",
    ),
    "namespace-underscore.yaml": (
        4,
        r'Placement Team_A/p: metadata\.namespace: Invalid value: "Team_A": a lowercase RFC '
        r"1123 label .*",
    ),
    "metadata-missing.yaml": (
        4,
        r"Placement /<unnamed>: metadata\.name: Required value: name or generateName is "
        r"required",
    ),
}
# What crashed or hung the process before: run as a user runs the command.
IN_SUBPROCESS = ("deep.json", "deep-flow.yaml", "alias-bomb.yaml", "alias-recursive.yaml")
READERS: list[list[str]] = [
    ["simulate"],
    ["explain", "--placement", "apps/p"],
    ["scheduler", "simulate"],
]


def error_line(name: str) -> str:
    index, message = REFUSED[name]
    return re.escape(f"{HOSTILE / name}: document {index}: ") + message


def test_the_corpus_is_what_the_tests_name() -> None:
    scheduled = {
        "mode-40000.yaml",
        "builtin-40000.yaml",
        "name-64.yaml",
        "name-dotted.yaml",
        "toleration-seconds-int64-max.yaml",
        "taint-added-year-9999.yaml",
        "generate-name-only.yaml",
    }
    assert {p.name for p in HOSTILE.iterdir()} == set(REFUSED) | scheduled


@pytest.mark.parametrize("name", IN_SUBPROCESS)
@pytest.mark.parametrize("verb", READERS, ids=lambda v: " ".join(v[:2]))
def test_a_hostile_document_is_one_line_in_a_subprocess(
    name: str, verb: list[str], tmp_path: Path
) -> None:
    outcome = placement([*verb, "-f", str(HOSTILE / name)], tmp_path)
    assert_one_error_line(outcome, EXIT_ERROR, error_line(name))
    assert outcome.stdout == ""


@pytest.mark.parametrize("name", IN_SUBPROCESS)
def test_validate_reports_a_hostile_document_and_the_rest(name: str, tmp_path: Path) -> None:
    outcome = placement(["validate", "-f", str(HOSTILE / name)], tmp_path)
    assert "Traceback" not in outcome.stderr
    assert outcome.code == EXIT_ERROR
    assert re.fullmatch(error_line(name), outcome.lines[0]), outcome.lines[0]
    # The documents before the hostile one were read and counted.
    assert outcome.lines[1].startswith("1 invalid document(s); valid: ")
    assert len(outcome.lines) == 2


def test_yaml_nested_100000_deep_is_refused_not_a_segfault(tmp_path: Path) -> None:
    # libyaml's composer recursed until SIGSEGV (exit -11) on this.
    deep = tmp_path / "deep.yaml"
    deep.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\nspec: " + "[" * 100_000)
    for verb in (["validate"], ["simulate"]):
        outcome = placement([*verb, "-f", str(deep)], tmp_path)
        assert outcome.code == EXIT_ERROR, outcome.stderr
        assert outcome.lines[0] == f"{deep}: document 1: the document nests deeper than 100 levels"


def test_block_nesting_is_bounded_as_flow_nesting_is(tmp_path: Path) -> None:
    lines = "".join("  " * (depth + 1) + f"k{depth}:\n" for depth in range(MAX_DEPTH + 5))
    deep = tmp_path / "deep.yaml"
    deep.write_text(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n  labels:\n{lines}")
    outcome = placement(["simulate", "-f", str(deep)], tmp_path)
    assert_one_error_line(outcome, EXIT_ERROR, error_line_of(deep, 1, "nests deeper"))


def error_line_of(path: Path, index: int, words: str) -> str:
    return re.escape(f"{path}: document {index}: ") + f".*{words}.*"


def test_nesting_up_to_the_bound_and_plain_anchors_still_load(tmp_path: Path) -> None:
    # Anchors and aliases used as people use them (a shared label map) are fine; so is a
    # document exactly MAX_DEPTH deep.
    shared = tmp_path / "shared.yaml"
    shared.write_text(
        "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\n"
        "metadata: {name: c1, labels: &labels {env: prod}, annotations: *labels}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n"
        "x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    )
    assert main(["validate", "-f", str(shared), "--validate=ignore"]) == EXIT_OK


@pytest.mark.parametrize("name", [n for n in REFUSED if n not in IN_SUBPROCESS])
@pytest.mark.parametrize("verb", READERS, ids=lambda v: " ".join(v[:2]))
def test_a_document_breaking_a_rule_is_one_line(
    name: str, verb: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*verb, "-f", str(HOSTILE / name)]) == EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert re.fullmatch(error_line(name), lines[0]), lines[0]


def simulate(name: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The Placement simulate writes for the corpus file `name`; nothing on stderr."""
    assert main(["simulate", "-f", str(HOSTILE / name), "-o", "json", "--now", NOW]) == EXIT_OK
    captured = capsys.readouterr()
    assert captured.err == ""
    items = json.loads(captured.out)["items"]
    (found,) = [item for item in items if item["kind"] == "Placement"]
    return dict(found)


def conditions(placement: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in placement["status"]["conditions"]}


@pytest.mark.parametrize("name", ["mode-40000.yaml", "builtin-40000.yaml"])
def test_a_long_message_is_cut_to_the_condition_limit_keeping_the_reason(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    misconfigured = conditions(simulate(name, capsys))["PlacementMisconfigured"]
    assert misconfigured["status"] == "True"
    assert misconfigured["reason"] == "Misconfigured"
    message = misconfigured["message"]
    assert len(message) == MAX_CONDITION_MESSAGE
    assert message.startswith(":incorrect ")
    assert message.endswith("XXXX ...") or message.endswith("YYYY ...")


def test_explain_cuts_the_error_as_the_condition_is(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(HOSTILE / "mode-40000.yaml")
    assert main(["explain", "-f", path, "--placement", "apps/p", "-o", "json"]) == EXIT_OK
    error = json.loads(capsys.readouterr().out)["error"]
    assert len(error) == MAX_CONDITION_MESSAGE
    assert error.endswith(" ...")


def test_a_name_too_long_for_the_label_is_misconfigured_without_decisions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = simulate("name-64.yaml", capsys)
    assert found["status"]["numberOfSelectedClusters"] == 0
    assert found["status"]["decisionGroups"] == []
    misconfigured = conditions(found)["PlacementMisconfigured"]
    assert misconfigured["status"] == "True"
    assert misconfigured["message"] == (
        ":the placement name is 64 characters long, but its PlacementDecisions carry it in the "
        "label cluster.open-cluster-management.io/placement, whose values are at most 63 "
        "characters: rename the placement"
    )


def test_a_placement_without_a_name_is_misconfigured_in_simulate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = simulate("generate-name-only.yaml", capsys)
    assert found["status"]["decisionGroups"] == []
    misconfigured = conditions(found)["PlacementMisconfigured"]
    assert misconfigured["status"] == "True"
    assert "generateName is filled in by the API server only" in misconfigured["message"]


@pytest.mark.parametrize(
    "name",
    ["name-dotted.yaml", "toleration-seconds-int64-max.yaml", "taint-added-year-9999.yaml"],
)
def test_edge_values_are_scheduled(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    found = simulate(name, capsys)
    satisfied = conditions(found)["PlacementSatisfied"]
    assert (satisfied["status"], satisfied["reason"]) == ("True", "AllDecisionsScheduled")
    assert found["status"]["numberOfSelectedClusters"] == 1


def test_a_json_integer_of_5000_digits_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "big.json"
    doc.write_text(
        '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ' + "9" * 5000 + "}}"
    )
    assert main(["simulate", "-f", str(doc)]) == EXIT_ERROR
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"{doc}: document 1: invalid JSON: Exceeds the limit (4300 digits)")
