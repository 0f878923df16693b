"""A long `placement simulate` says how far it is on stderr; a short one says nothing
(issue 48, item 9: 10k clusters ran minutes without a line)."""

from __future__ import annotations

import io
import json
import re

import pytest

from controllers.cli import simulate as simulate_cli
from controllers.cli.main import EXIT_OK
from controllers.cli.progress import Progress
from tests.controllers.cli.samples import NOW, PLACEMENTS, SAMPLES, run

LINE = re.compile(
    r"placement simulate: (reading the manifests|loading the fleet|writing the output"
    r"|scheduled \d+/\d+ placements), \d+\.\d s elapsed"
)


def test_a_long_run_prints_progress_lines_and_a_last_one_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(simulate_cli, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(simulate_cli, "PROGRESS_EVERY", 0.01)
    code, out, err = run(capsys, "simulate", "-f", SAMPLES, *NOW)
    assert code == EXIT_OK
    assert json.loads(out)["kind"] == "List"  # stdout stays the output alone
    lines = [line for line in err.splitlines() if line.startswith("placement simulate:")]
    assert len(lines) >= 2, err
    *during, last = lines
    assert during[0].startswith("placement simulate: reading the manifests, ")
    assert all(LINE.fullmatch(line) for line in during), during
    assert re.fullmatch(
        rf"placement simulate: done, {len(PLACEMENTS)} placements in \d+\.\d s", last
    ), last


def test_a_short_run_prints_no_progress(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "simulate", "-f", SAMPLES, "-o", "table", *NOW)
    assert code == EXIT_OK
    assert "placement simulate:" not in err


def test_the_line_counts_the_placements_scheduled() -> None:
    progress = Progress("placement simulate", io.StringIO(), after=60, every=60)
    progress.stage("reading the manifests")
    assert progress.line().startswith("placement simulate: reading the manifests, 0.")
    progress.advance(4_120, 10_000)
    assert re.fullmatch(
        r"placement simulate: scheduled 4,120/10,000 placements, \d+\.\d s elapsed",
        progress.line(),
    )
