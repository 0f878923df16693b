"""The `placement` command as a whole: the console script, usage errors from the top-level
parser (exit code 2)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controllers.cli.main import EXIT_USAGE, main
from tests.controllers.cli.samples import ROOT


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
        main(["explain", "-f", str(ROOT / "config" / "samples" / "hub"), "--placement", "web"])
    assert info.value.code == EXIT_USAGE
    assert "expected NAMESPACE/NAME (got 'web')" in capsys.readouterr().err
