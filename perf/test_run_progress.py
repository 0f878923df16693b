"""`python -m perf` says how long it should take and, as it goes, which step of how many it is
on with the time elapsed (issue 48, item 9: `--quick` said "about 4 min" and took 33)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import perf.__main__ as runner
import tests.e2e.controlplane as controlplane
from perf.harness import Case, Settings, Step
from perf.scenarios import plan
from perf.targets import CYCLE


def test_help_quotes_the_estimate_of_the_steps_and_no_page_a_stale_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The minutes `--help` promises are the sum of the steps' recorded costs (the real control
    plane's side-by-side included when it can run), not a figure written once; the pages quote
    what was measured, with its date, and no estimate of their own that could go stale."""
    monkeypatch.setattr(controlplane, "missing_assets", lambda *names: None)
    quick = runner.estimate(plan(Settings("quick", 1, 0.5, 1, None)))
    full = runner.estimate(plan(Settings("full", 1, 2.0, 3, None)))
    minutes = re.fullmatch(r"about (\d+) min", quick)
    assert minutes is not None, quick
    assert int(minutes[1]) >= 10  # the side-by-side with kube-scheduler alone is ~12
    help_text = " ".join(runner._parser().format_help().split())
    assert f"one repetition: {quick} here on 2 quiet cores" in help_text
    assert f"The full run: {full} here on 2 quiet cores" in help_text
    root = Path(__file__).resolve().parents[1]
    pages = {"perf/__main__.py": runner.__doc__ or ""}
    for page in ("perf/README.md", "docs/performance.md"):
        pages[page] = (root / page).read_text(encoding="utf-8")
    for page, said in pages.items():
        stale = re.findall(r"python -m perf( --quick)? .*about \d+ min", said)
        assert not stale, f"{page} quotes an estimate of its own: {stale}"


def test_a_run_says_its_estimate_then_each_step_with_the_time_elapsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def steps(settings: Settings, only: object) -> list[Step]:
        def measured(label: str) -> Case:
            done = Case(CYCLE, label, 1_000, 1)
            done.values = [0.001]
            return done

        return [
            Step(CYCLE, "loop", 1_000, 1, lambda: measured("loop"), 40.0),
            Step(CYCLE, "scheduler", 1_000, 1, lambda: measured("scheduler"), 80.0),
        ]

    monkeypatch.setattr(runner, "plan", steps)
    assert runner.main(["--smoke", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "python -m perf: 2 steps, about 2 min on 2 quiet cores, up to twice that on a loaded "
        "machine"
    )
    assert re.fullmatch(r"python -m perf: 00:00 step 1/2 cycle: loop, 1,000 clusters", err[1])
    assert re.fullmatch(r"python -m perf: 00:0\d step 2/2 cycle: scheduler, 1,000 clusters", err[2])
