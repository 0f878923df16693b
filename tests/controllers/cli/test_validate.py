"""`placement validate`: valid samples are counted by kind, each bad document is reported on
stderr naming file, document, object and field."""

from __future__ import annotations

import pytest

from controllers.cli.main import EXIT_ERROR, EXIT_OK, main
from tests.controllers.cli.samples import ROOT


def test_validate_accepts_the_samples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", str(ROOT / "config" / "samples")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "20 ManagedCluster" in out
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
