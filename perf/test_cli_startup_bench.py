"""How long `placement` takes to start, per verb: a fresh interpreter running `placement <verb>
--help` (the verb's imports and its parser, no work). Each run is one subprocess, so the figure
is the whole start: the interpreter, the imports, argparse.
Run: `pytest perf/test_cli_startup_bench.py --benchmark-enable`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [
    [],
    ["validate"],
    ["simulate"],
    ["explain"],
    ["run"],
    ["demo"],
    ["scheduler", "simulate"],
    ["scheduler", "run"],
    ["webhook", "run"],
    ["webhook", "certs"],
]


def start(words: list[str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "controllers.cli", *words, "--help"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )


@pytest.mark.parametrize("words", COMMANDS, ids=[" ".join(c) or "placement" for c in COMMANDS])
def test_start_of_a_verb(benchmark: BenchmarkFixture, words: list[str]) -> None:
    benchmark.pedantic(start, args=(words,), rounds=3, iterations=1)
