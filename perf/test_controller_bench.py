"""The controller against the embedded hub (the first bars of docs/performance.md, 'Targets'): cold
start to all decisions (5,000 clusters × 10,000 placements ≤ 60 s), one label change re-queuing
1,000 placements to all decisions updated (≤ 3 s), and the peak RSS of a cold start in a fresh
process.

Server, real `kubernetes_asyncio` client and controller share one process and one event loop, as
the controller tests run them (the hub is OCM's benchmark shape, see `perf/controller_run.py`).
Only the phase named is timed: loading the hub, and for the fan-out the cold start before it,
are set up outside the timing; the checks run after it.

Run: `pytest perf/test_controller_bench.py --benchmark-enable -s` (about 7 minutes). With
`--benchmark-disable` (CI) only 200 clusters × 50 placements run, once each. Results:
perf/RESULTS.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from perf.controller_run import (
    ColdStart,
    ControllerRun,
    Fanout,
    FanoutRun,
    Hub,
    Shape,
    running_hub,
)

ROOT = Path(__file__).resolve().parents[1]
T_co = TypeVar("T_co", covariant=True)
R = TypeVar("R", bound="_Run[Any]")
SMOKE = Shape(200, 50)
largest = pytest.mark.largest

COLD_STARTS = [
    pytest.param(SMOKE, id="200x50"),
    pytest.param(Shape(1_000, 1_000), id="1kx1k-ocm", marks=largest),
    pytest.param(Shape(1_000, 10_000), id="1kx10k-ocm", marks=largest),
    pytest.param(Shape(5_000, 1_000), id="5kx1k", marks=largest),
    pytest.param(Shape(5_000, 10_000), id="5kx10k", marks=largest),
    pytest.param(Shape(5_000, 1_000, workers=1), id="5kx1k-1-worker", marks=largest),
    pytest.param(Shape(5_000, 1_000, workers=8), id="5kx1k-8-workers", marks=largest),
]
FANOUTS = [
    pytest.param(SMOKE, id="200x50"),
    pytest.param(Shape(5_000, 1_000), id="5kx1k", marks=largest),
]
RSS = [
    pytest.param(SMOKE, ["--split"], id="200x50-controller-alone"),
    pytest.param(Shape(5_000, 10_000), ["--split"], id="5kx10k-controller-alone", marks=largest),
    pytest.param(Shape(5_000, 10_000), [], id="5kx10k-one-process", marks=largest),
]


@pytest.fixture(autouse=True)
def skip_largest_unless_benchmarking(request: pytest.FixtureRequest, benchmarking: bool) -> None:
    if request.node.get_closest_marker("largest") and not benchmarking:
        pytest.skip("benchmark sizes only when benchmarking (--benchmark-enable)")


def rounds_for(shape: Shape, benchmarking: bool) -> int:
    if not benchmarking:
        return 1
    return 3 if shape.placements <= 1_000 else 2


class Rounds:
    """Each round in its own event loop: `setup` loads a fresh hub (untimed), the benchmark
    times one phase, `teardown` checks the server and stops everything."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stack: contextlib.AsyncExitStack | None = None
        self.hub: Hub | None = None

    def run(self, step: Any) -> Any:
        assert self.loop is not None
        return self.loop.run_until_complete(step)

    def open(self) -> Hub:
        self.loop = asyncio.new_event_loop()
        self.stack = contextlib.AsyncExitStack()
        self.hub = self.run(self.stack.enter_async_context(running_hub(self.shape)))
        return self.hub

    def close(self) -> None:
        assert self.loop is not None and self.stack is not None
        self.run(self.stack.aclose())
        self.loop.close()
        self.loop = self.stack = self.hub = None
        # The next round starts on a clean heap, as in a fresh process: a round leaves millions
        # of objects in reference cycles, whose collection would otherwise land in the next.
        gc.collect()


def medians(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each numeric figure over the rounds, the other values of the last."""
    out = dict(results[-1])
    for key, value in out.items():
        if isinstance(value, float):
            values = sorted(r[key] for r in results)
            out[key] = round(values[len(values) // 2], 3)
    return out


# --- cold start ---------------------------------------------------------------------------------


class _Run(Protocol[T_co]):
    async def checked(self) -> T_co: ...

    async def close(self) -> None: ...


def timed_rounds(
    benchmark: BenchmarkFixture,
    shape: Shape,
    benchmarking: bool,
    make: Callable[[Hub], R],
    prepare: Callable[[R], Awaitable[object]],
    phase: Callable[[R], Awaitable[object]],
) -> list[Any]:
    """Per round: a fresh hub and `make(hub)` prepared (untimed), `phase` timed, then the run's
    `checked()` result kept and everything stopped. Returns the checked results."""
    rounds = Rounds(shape)
    results: list[Any] = []
    run: R | None = None

    def setup() -> None:
        nonlocal run
        run = make(rounds.open())
        rounds.run(prepare(run))

    def timed() -> None:
        assert run is not None
        rounds.run(phase(run))

    def teardown() -> None:
        nonlocal run
        assert run is not None
        try:
            results.append(rounds.run(run.checked()))
        finally:
            rounds.run(run.close())
            rounds.close()
            run = None

    benchmark.pedantic(
        timed, setup=setup, teardown=teardown, rounds=rounds_for(shape, benchmarking)
    )
    if run is not None:  # a disabled benchmark skips the teardown
        teardown()
    return results


# --- cold start ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", COLD_STARTS)
def test_a_cold_start_gives_every_placement_its_decisions(
    benchmark: BenchmarkFixture, benchmarking: bool, shape: Shape
) -> None:
    results: list[ColdStart] = timed_rounds(
        benchmark,
        shape,
        benchmarking,
        ControllerRun,
        lambda run: run.open(),
        lambda run: run.start(),
    )
    figures = medians([asdict(r) | {"per_placement": r.per_placement} for r in results])
    benchmark.extra_info.update(figures)
    print(json.dumps(figures))
    for cold in results:
        assert cold.placement_decisions == shape.placements
        assert cold.decided_ten == shape.placements  # 10 distinct clusters, all from pool=a
        assert cold.selected_ten == shape.placements
        assert cold.events_dropped == 0
        assert cold.writes["PlacementDecision ADDED"] == shape.placements
        assert cold.reconciles == shape.placements  # the echoes of our writes re-queue nothing


# --- fan-out ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", FANOUTS)
def test_one_label_change_reschedules_every_placement_and_drops_the_cluster_where_it_was(
    benchmark: BenchmarkFixture, benchmarking: bool, shape: Shape
) -> None:
    results: list[Fanout] = timed_rounds(
        benchmark,
        shape,
        benchmarking,
        FanoutRun,
        lambda run: run.prepare(),
        lambda run: run.relabel(),
    )
    figures = medians([asdict(r) for r in results])
    benchmark.extra_info.update(figures)
    print(json.dumps(figures))
    for fanout in results:
        assert fanout.requeued == shape.placements
        assert fanout.had_it > 0
        assert fanout.still_have_it == 0
        assert fanout.decided_ten == shape.placements
        assert fanout.changed >= fanout.had_it
        assert fanout.writes["PlacementDecision MODIFIED"] >= fanout.had_it


# --- peak RSS -----------------------------------------------------------------------------------


def cold_start_in_a_fresh_process(shape: Shape, options: list[str]) -> dict[str, Any]:
    """`python -m perf.controller_run` for `shape`: its JSON line."""
    args = [
        sys.executable,
        "-m",
        "perf.controller_run",
        f"--clusters={shape.clusters}",
        f"--placements={shape.placements}",
        f"--workers={shape.workers}",
        *options,
    ]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1800, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


@pytest.mark.parametrize(("shape", "options"), RSS)
def test_the_peak_rss_of_a_cold_start_is_measured_in_a_fresh_process(
    benchmark: BenchmarkFixture, shape: Shape, options: list[str]
) -> None:
    figures: dict[str, Any] = {}

    def run() -> None:
        figures.update(cold_start_in_a_fresh_process(shape, options))

    benchmark.pedantic(run, rounds=1)
    benchmark.extra_info.update(figures)
    print(json.dumps(figures))
    assert figures["placement_decisions"] == shape.placements
    assert figures["decided_ten"] == shape.placements
    assert figures["peak_rss_mib"] > 0
    # Against a separate server too, where echoes often arrive before the responses.
    assert figures["reconciles"] == shape.placements
    if "--split" in options:
        assert figures["server_peak_rss_mib"] > 0
        assert figures["server_cpu_s"] > 0
