"""`placement scheduler simulate -o wide` over every pod sample (the top folder's files together,
each file of a subfolder alone, the numbered files of `dra/` together) equals the output
recorded in `tests/data/simulate_pods/`: the scheduler's speed work (issue 29) must leave every
placement, status and message as it was.

After a deliberate change of behaviour, record again with
`python -m tests.controllers.cli.test_pod_samples_recorded` and review the diff."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from controllers.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "config" / "samples" / "pods"
RECORDED = ROOT / "tests" / "data" / "simulate_pods"
NOW = "2026-11-23T00:00:00Z"
NUMBERED = re.compile(r"^\d\d-[\w.-]+\.yaml$")


def scenarios() -> dict[str, list[Path]]:
    """Scenario name -> the files simulated together (a subfolder of numbered files, such as
    `dra/`, is one scenario named after it)."""
    found = {"top": sorted(SAMPLES.glob("*.yaml"))}
    for path in sorted(SAMPLES.glob("*/*.yaml")):
        siblings = list(path.parent.glob("*.yaml"))
        if all(NUMBERED.match(p.name) for p in siblings):
            found.setdefault(path.parent.name, []).append(path)
        else:
            found[f"{path.parent.name}-{path.stem}"] = [path]
    return found


def simulate(files: list[Path]) -> str:
    argv = ["scheduler", "simulate", "-o", "wide", "--now", NOW]
    for path in files:
        argv += ["-f", str(path)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(argv)
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(scenarios()))
def test_simulate_output_is_as_recorded(name: str) -> None:
    expected = (RECORDED / f"{name}.txt").read_text()
    assert simulate(scenarios()[name]) == expected


def test_every_recording_has_its_scenario() -> None:
    assert sorted(p.stem for p in RECORDED.glob("*.txt")) == sorted(scenarios())


if __name__ == "__main__":
    for stale in RECORDED.glob("*.txt"):
        stale.unlink()
    for key, paths in scenarios().items():
        (RECORDED / f"{key}.txt").write_text(simulate(paths))
