"""`placement validate` builds every label and claim selector as OCM would (issue 21): an object
the CRDs admit but the controller would report Misconfigured (an operator such as `exists`, a
claim value that is no label value, a cluster set whose selector has In without values) is an
error naming file, object, field and OCM's own message."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.cli.main import EXIT_ERROR, main
from controllers.cli.manifests import load_paths
from tests.controllers.cli.samples import ROOT

MISCONFIGURED = ROOT / "tests" / "data" / "misconfigured"
FILES = sorted(MISCONFIGURED.glob("*.yaml"))


def expectations(path: Path) -> list[str]:
    return [
        line.removeprefix("# expect: ").rstrip("\n")
        for line in path.read_text().splitlines()
        if line.startswith("# expect: ")
    ]


def test_there_are_misconfigured_examples() -> None:
    assert len(FILES) >= 4


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_models_admit_the_object(path: Path) -> None:
    # As OCM's CRDs: the API server stores it; only building the selector fails.
    result = load_paths([path])
    assert result.errors == []
    assert len(result.objects) == 1


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_validate_reports_it_with_ocm_words(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", str(path)]) == EXIT_ERROR
    err = capsys.readouterr().err
    for fragment in expectations(path):
        assert fragment in err
    assert f"{path}: document 1: " in err
