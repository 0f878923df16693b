"""`perf.cycle_alternate`: both builds measured in fresh processes, their selections compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perf import cycle_alternate

ROOT = Path(__file__).resolve().parent.parent


def test_one_process_times_each_cycle_and_digests_the_selection() -> None:
    out = cycle_alternate.one_process(1_000, 5)
    assert out["selected"] == 10
    assert 0 < out["cpu_min_us"] <= out["cpu_median_us"]
    assert 0 < out["wall_min_us"] <= out["wall_median_us"]
    assert len(out["digest"]) == 16


def test_a_pair_of_the_same_checkout_selects_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    code = cycle_alternate.main(
        ["--reference", str(ROOT), "--candidate", str(ROOT), "--sizes", "1000", "--pairs", "1",
         "--cycles", "3"]
    )  # fmt: skip
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert lines[0]["same_selection"] is True
    assert lines[0]["reference"]["digest"] == lines[0]["candidate"]["digest"]
    assert lines[-1]["size"] == 1000 and lines[-1]["median_cpu_min_ratio"] > 0


def test_a_folder_that_is_not_a_checkout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="not a checkout"):
        cycle_alternate.main(["--reference", str(tmp_path), "--sizes", "1000"])


def test_both_builds_run_under_the_hub_controllers_collector_thresholds() -> None:
    from controllers.runtime.process import HUB_GC_THRESHOLDS

    assert cycle_alternate._THRESHOLDS == HUB_GC_THRESHOLDS
