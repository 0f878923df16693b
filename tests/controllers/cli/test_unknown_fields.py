"""`--validate=strict|warn|ignore` on `validate`, `simulate` and `explain`: a misspelt field is
an error by default (as `kubectl apply --validate=strict`), a warning on stderr with `warn`,
nothing with `ignore`; the line names file, document, object and full field path, with a
suggestion for a near miss. And names: a bad or missing name is an error at every level."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controllers.cli.main import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main
from tests.controllers.cli.samples import NOW, SAMPLES, run

# A placement meant to pick 2 prod clusters; both keys are misspelt, so without the check it
# would pick every cluster of the global set.
TYPO = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: typo
  namespace: apps
spec:
  numberOfCluster: 2
  predicates:
    - requiredClusterSelector:
        labelSelector:
          matchLabel:
            env: prod
"""
COUNT_LINE = 'spec.numberOfCluster: unknown field, did you mean "numberOfClusters"?'
MATCH_LINE = (
    "spec.predicates[0].requiredClusterSelector.labelSelector.matchLabel: unknown field, "
    'did you mean "matchLabels"?'
)
# The same placement spelt right.
FIXED = TYPO.replace("numberOfCluster:", "numberOfClusters:").replace("matchLabel:", "matchLabels:")
VERBS = {
    "validate": ["validate"],
    "simulate": ["simulate", "-f", SAMPLES, *NOW],
    "explain": ["explain", "-f", SAMPLES, "--placement", "apps/typo", *NOW],
}


@pytest.fixture
def typo(tmp_path: Path) -> Path:
    path = tmp_path / "typo.yaml"
    path.write_text(TYPO)
    return path


def expected_lines(path: Path) -> list[str]:
    prefix = f"{path}: document 1: Placement apps/typo: "
    return [prefix + COUNT_LINE, prefix + MATCH_LINE]


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
@pytest.mark.parametrize(
    "flag", [[], ["--validate=strict"], ["--validate"], ["--validate", "true"]], ids=str
)
def test_unknown_fields_are_errors_by_default(
    capsys: pytest.CaptureFixture[str], typo: Path, verb: str, flag: list[str]
) -> None:
    code, out, err = run(capsys, *VERBS[verb], "-f", str(typo), *flag)
    assert code == EXIT_ERROR
    assert out == ""
    lines = err.splitlines()
    for line in expected_lines(typo):
        assert line in lines
    assert "Traceback" not in err


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
def test_warn_prints_the_same_lines_as_warnings_and_goes_on(
    capsys: pytest.CaptureFixture[str], typo: Path, verb: str
) -> None:
    code, out, err = run(capsys, *VERBS[verb], "-f", str(typo), "--validate=warn")
    assert code == EXIT_OK
    assert out
    lines = err.splitlines()
    for line in expected_lines(typo):
        assert f"warning: {line}" in lines
    assert not [line for line in lines if line.startswith(str(typo))]


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
@pytest.mark.parametrize("level", ["ignore", "false"])
def test_ignore_is_silent(
    capsys: pytest.CaptureFixture[str], typo: Path, verb: str, level: str
) -> None:
    code, out, err = run(capsys, *VERBS[verb], "-f", str(typo), f"--validate={level}")
    assert code == EXIT_OK
    assert out
    assert "unknown field" not in err


def test_what_the_typo_would_have_done_without_the_check(
    capsys: pytest.CaptureFixture[str], typo: Path
) -> None:
    # The reason strict is the default: the misspelt placement selects far more than 2.
    code, out, _ = run(capsys, *VERBS["simulate"], "-f", str(typo), "--validate=ignore")
    assert code == EXIT_OK
    items = json.loads(out)["items"]
    placement = next(i for i in items if i["metadata"]["name"] == "typo")
    assert placement["status"]["numberOfSelectedClusters"] > 2


def test_validate_counts_the_document_as_valid_under_warn(
    capsys: pytest.CaptureFixture[str], typo: Path
) -> None:
    code, out, _ = run(capsys, "validate", "-f", str(typo), "--validate=warn")
    assert (code, out) == (EXIT_OK, "valid: 1 Placement\n")


def test_an_unknown_validate_level_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], typo: Path
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", "-f", str(typo), "--validate=lenient"])
    assert exit_info.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--validate: invalid choice: 'lenient'" in err


@pytest.mark.parametrize("level", ["strict", "warn", "ignore"])
def test_names_are_checked_at_every_level(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, level: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(FIXED.replace("name: typo", "name: Typo_1"))
    code, _, err = run(capsys, "validate", "-f", str(bad), f"--validate={level}")
    assert code == EXIT_ERROR
    assert (
        f'{bad}: document 1: Placement apps/Typo_1: metadata.name: Invalid value: "Typo_1": '
        "a lowercase RFC 1123 subdomain must consist of"
    ) in err


def test_a_document_without_name_or_generate_name_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    nameless = tmp_path / "nameless.yaml"
    nameless.write_text(FIXED.replace("  name: typo\n", ""))
    code, _, err = run(capsys, "simulate", "-f", SAMPLES, "-f", str(nameless), *NOW)
    assert code == EXIT_ERROR
    assert err.splitlines() == [
        f"{nameless}: document 1: Placement apps/<unnamed>: metadata.name: "
        "Required value: name or generateName is required"
    ]
