"""The `placement` command line: exit codes, output and error streams."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controllers.cli.main import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main

ROOT = Path(__file__).resolve().parents[3]


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


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate"])
    assert info.value.code == EXIT_USAGE
    assert "-f/--filename" in capsys.readouterr().err


def test_console_script_is_installed() -> None:
    script = shutil.which("placement", path=str(Path(sys.executable).parent)) or shutil.which(
        "placement"
    )
    assert script, "pip install -e . should install the `placement` console script"
    done = subprocess.run([script, "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert "validate" in done.stdout


def test_placement_without_namespace_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["explain", "-f", str(ROOT / "config" / "samples"), "--placement", "web"])
    assert info.value.code == EXIT_USAGE
    assert "expected NAMESPACE/NAME (got 'web')" in capsys.readouterr().err
