"""The performance figures README.md, docs/performance.md and docs/status.md quote agree with
each other and with the run they come from, so that they cannot drift apart again (issue 48,
item 9: the three disagreed).

The source of truth is what was measured: the harness's reports (`perf/results/report.md` for
the hub, `perf/results-kube/report.md` for the scheduler_perf workloads,
`perf/results-vs-kube/vs-kube.md` beside kube-scheduler) and, for the figures of alternated
runs no report holds, their rows in `perf/RESULTS.md`. Recording a new run makes this test
name every quote the docs must update.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README, PERFORMANCE, STATUS = "README.md", "docs/performance.md", "docs/status.md"
NUMBER = r"[\d.,]+"
RANGE = rf"{NUMBER}–{NUMBER}"
Figure = tuple[float, ...]


@cache
def text(path: str) -> str:
    """The file with its line breaks and runs of spaces as one space (quotes wrap)."""
    return " ".join((ROOT / path).read_text(encoding="utf-8").split())


def figure(quoted: str) -> Figure:
    """`1,310` -> (1310.0,), `0.66–0.72` -> (0.66, 0.72)."""
    return tuple(float(part.replace(",", "")) for part in quoted.split("–"))


def span(values: list[float]) -> Figure:
    return (min(values), max(values))


def one(pattern: str, path: str) -> str:
    found = re.search(pattern, text(path))
    assert found is not None, f"{path} no longer says {pattern!r}"
    return found[1]


# --- the sources -------------------------------------------------------------------------------


@cache
def targets(report: str) -> dict[str, tuple[Figure, bool]]:
    """The report's target table: target -> (measured, met)."""
    rows = re.findall(
        rf"\| ([^|]+?) \| ({NUMBER})[^|]* \| \*\*(met|missed)\*\* \|",
        (ROOT / report).read_text(encoding="utf-8"),
    )
    return {target: (figure(value), verdict == "met") for target, value, verdict in rows}


KUBE = "perf/results-kube/report.md"
HUB = "perf/results/report.md"
VS_KUBE = "perf/results-vs-kube/vs-kube.md"
RESULTS = "perf/RESULTS.md"


def kube(target: str) -> Figure:
    (value, _) = next(v for t, v in targets(KUBE).items() if t.startswith(target))
    return value


def hub(target: str) -> Figure:
    (value, _) = next(v for t, v in targets(HUB).items() if t.startswith(target))
    return value


def engine_ratios() -> Figure:
    """The engine's ratios to kube's thresholds in the scheduler_perf table of the report."""
    ratios = re.findall(r"^\| \S+ \| [^|]*; ([\d.]+)× kube's \d+\) \|", kube_text(), re.M)
    return span([float(r) for r in ratios])


def kube_text() -> str:
    return (ROOT / KUBE).read_text(encoding="utf-8")


def targets_met() -> Figure:
    verdicts = [met for _, met in targets(KUBE).values()]
    return (float(sum(verdicts)), float(len(verdicts)))


def the_missed_one() -> Figure:
    missed = [value for value, met in targets(KUBE).values() if not met]
    assert len(missed) == 1, "the docs name the one target the latest run missed: update them"
    return missed[0]


def vs_kube_rows(scheduler: str) -> list[list[str]]:
    """The rows of one scheduler (`ours`, `kube-scheduler`, or `*ours / kube*`) in both tables
    of the side-by-side, cells split."""
    lines = (ROOT / VS_KUBE).read_text(encoding="utf-8").splitlines()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    return [r for r in rows if len(r) > 2 and r[1] == scheduler]


def ratios(column: int) -> list[float]:
    return [float(r[column].strip("*x")) for r in vs_kube_rows("*ours / kube*")]


def faster() -> Figure:
    above = [r for r in ratios(2) if r >= 1]
    assert len(above) == 11, "README says 11 of 12 cells: update it"
    return span(above)


def slower() -> Figure:
    (below,) = [r for r in ratios(2) if r < 1]
    return (below,)


def first_bind(scheduler: str) -> Figure:
    """Start to first bind with the pods pending before (the first table), of the shapes whose
    first bind waits for nothing but the scheduler (not the victims' nor the PV controller)."""
    rows = vs_kube_rows(scheduler)[:6]
    return span([float(r[6]) for r in rows if r[0] not in ("PreemptionBasic", "SchedulingWithPVs")])


def sigterm() -> Figure:
    return span([float(r[7]) for r in vs_kube_rows("ours")])


def results_row(start: str) -> str:
    found = re.search(rf"^\| {re.escape(start)} \|([^\n]+)", text_lines(RESULTS), re.M)
    assert found is not None, start
    return found[1]


def text_lines(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def warm_cycle(size: str) -> Figure:
    """The alternated ratios of the warm cycle to the build that set the bar."""
    row = results_row("one placement, warm, 10k / 100k clusters ≤ 0.1 / 0.5 ms")
    first = re.search(r"ratios ([\d., ]+) at 10k and ([\d., ]+) at 100k", row)
    again = re.search(r"again at [\d:]+ UTC ([\d.]+)–([\d.]+) and ([\d.]+)–([\d.]+)", row)
    assert first is not None and again is not None
    at10k = [float(v) for v in first[1].split(", ")] + [float(again[1]), float(again[2])]
    at100k = [float(v) for v in first[2].split(", ")] + [float(again[3]), float(again[4])]
    return span(at10k if size == "10k" else at100k)


def cold_start(which: str) -> Figure:
    row = results_row("cold start 5,000 × 10,000 ≤ 15 s")
    pattern = r"\*\*([\d.]+) over all 24 pairs\*\*" if which == "all" else r"\(bar ([\d.]+)\)"
    found = re.search(pattern, row)
    assert found is not None
    return figure(found[1])


def gangs_beside(which: str) -> Figure:
    found = re.search(
        rf"\| gangs \|[^\n]*eleven runs beside it \(({RANGE}) s, median ({NUMBER}),",
        text_lines(RESULTS),
    )
    assert found is not None
    return figure(found[1] if which == "range" else found[2])


# --- the figures and where each is quoted -------------------------------------------------------


@dataclass(frozen=True)
class Quoted:
    name: str
    measured: Callable[[], Figure]
    quotes: tuple[tuple[str, str], ...]  # (file, pattern whose group 1 is the figure)


VS_KUBE_DRA = "perf/results-vs-kube-dra/vs-kube.md"


def dra(column: int) -> Figure:
    """A cell of the first `*ours / kube*` row (pods pending at start) of the DRA side-by-side:
    2 pods/s, 4 CPU per pod."""
    lines = (ROOT / VS_KUBE_DRA).read_text(encoding="utf-8").splitlines()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    first = next(r for r in rows if len(r) > 2 and r[1] == "*ours / kube*")
    return (float(first[column].strip("*x")),)


def steady(variant: str) -> Figure:
    """The ours / kube ratio of a steady-state run (`perf.vs_kube_steady`)."""
    report = ROOT / "perf/results-vs-kube-dra" / f"steady-{variant}" / "vs-kube-steady.md"
    return figure(one_in(r"\| \*ours / kube\* \| \*([\d.]+)x\*", report))


VS_OCM = "perf/results-vs-ocm/vs-ocm.md"


def vs_ocm(target: str) -> list[float]:
    """The values of the side-by-side with OCM's controller's target rows named `target`."""
    rows = re.findall(
        rf"\| {re.escape(target)} \| \w+ \| ({NUMBER}) \| met \|",
        (ROOT / VS_OCM).read_text(encoding="utf-8"),
    )
    assert rows, f"{VS_OCM} no longer has a met row for {target!r}"
    return [float(r) for r in rows]


def one_in(pattern: str, path: Path) -> str:
    found = re.search(pattern, path.read_text(encoding="utf-8"))
    assert found is not None, f"{path} no longer says {pattern!r}"
    return found[1]


def figures() -> list[Quoted]:
    n = NUMBER
    return [
        Quoted(
            "engine above kube's thresholds",
            lambda: engine_ratios(),
            (
                (README, rf"pod engine is ({RANGE})× above"),
                (PERFORMANCE, rf"pod engine is ({RANGE})× above"),
                (STATUS, rf"the engine ({RANGE})× kube-scheduler's"),
            ),
        ),
        Quoted(
            "targets met in the latest harness run",
            lambda: targets_met(),
            (
                (README, r"met (\d+ of its \d+) targets"),
                (PERFORMANCE, r"met (\d+ of its \d+) targets"),
                (STATUS, r"met (\d+ of its \d+) targets"),
            ),
        ),
        Quoted(
            "the target it missed",
            lambda: the_missed_one(),
            (
                (README, rf"SchedulingBasic missed \(({n}) pods/s"),
                (PERFORMANCE, rf"SchedulingBasic missed \(({n}) pods/s"),
                (PERFORMANCE, rf"\| ({n}) pods/s in the latest harness run"),
                (STATUS, rf"SchedulingBasic missed \(({n}) pods/s"),
            ),
        ),
        Quoted(
            "SchedulingBasic end to end",
            lambda: kube("SchedulingBasic, end to end"),
            (
                (README, rf"end to end SchedulingBasic \(({n}) pods/s\)"),
                (PERFORMANCE, rf"preemption \(({n}), {n} and {n} pods/s"),
                (PERFORMANCE, rf"\| ({n}) pods/s in the latest harness run \(run 9, 2026"),
            ),
        ),
        Quoted(
            "anti-affinity end to end",
            lambda: kube("SchedulingPodAntiAffinity, end to end"),
            (
                (README, rf"anti-affinity \(({n})\)"),
                (PERFORMANCE, rf"preemption \({n}, ({n}) and {n} pods/s"),
            ),
        ),
        Quoted(
            "topology spread end to end",
            lambda: kube("TopologySpreading, end to end"),
            (
                (README, rf"topology spread \(({n})\)"),
                (PERFORMANCE, rf"preemption \({n}, {n} and ({n}) pods/s"),
            ),
        ),
        Quoted(
            "preemption end to end",
            lambda: kube("PreemptionBasic, end to end"),
            (
                (README, rf"preemption \(({n}) preemptions/s\)"),
                (PERFORMANCE, rf"pods/s, ({n}) preemptions/s\)"),
            ),
        ),
        Quoted(
            "gangs end to end",
            lambda: kube("gangs, end to end"),
            (
                (README, rf"the gangs in ({n}) s against 4 s"),
                (PERFORMANCE, rf"the gangs in ({n}) s against 4 s"),
            ),
        ),
        Quoted(
            "gangs in the eleven runs beside it",
            lambda: gangs_beside("range"),
            (
                (README, rf"\(({RANGE}) s in eleven runs beside it"),
                (PERFORMANCE, rf"\(({RANGE}) s in eleven runs beside it"),
                (PERFORMANCE, rf"({RANGE}) s in eleven runs beside it \(median"),
            ),
        ),
        Quoted(
            "their median",
            lambda: gangs_beside("median"),
            (
                (README, rf"eleven runs beside it, median ({n})\)"),
                (PERFORMANCE, rf"eleven runs beside it, median ({n}) s"),
                (PERFORMANCE, rf"eleven runs beside it \(median ({n}) s\)"),
            ),
        ),
        Quoted(
            "wide placements decided",
            lambda: hub("cold start 5,000 x 2,000, 20% wide"),
            (
                (STATUS, rf"20% wide in ({n}) s"),
                (PERFORMANCE, rf"20% wide ≤ 60 s, ≤ 512 MiB \| ({n}) s"),
                (PERFORMANCE, rf"decided in ({n}) s \(target ≤ 60 s\)"),
            ),
        ),
        Quoted(
            "wide placements' controller RSS",
            lambda: hub("same: controller peak RSS"),
            (
                (STATUS, rf"20% wide in {n} s, controller ({n}) MiB"),
                (PERFORMANCE, rf"20% wide ≤ 60 s, ≤ 512 MiB \| {n} s, ({n}) MiB"),
                (PERFORMANCE, rf"controller peak RSS ({n}) MiB \(target ≤ 512 MiB"),
            ),
        ),
        Quoted(
            "warm cycle at 10k",
            lambda: hub("one placement, warm, 10k"),
            (
                (PERFORMANCE, rf"\| ({n}) µs / {n} µs on 2026-11-26"),
                (PERFORMANCE, rf"({n}) µs at 10k, {n} µs at 100k"),
            ),
        ),
        Quoted(
            "warm cycle at 100k",
            lambda: hub("one placement, warm, 100k"),
            (
                (PERFORMANCE, rf"\| {n} µs / ({n}) µs on 2026-11-26"),
                (PERFORMANCE, rf"{n} µs at 10k, ({n}) µs at 100k"),
            ),
        ),
        Quoted(
            "warm cycle's ratio at 10k",
            lambda: warm_cycle("10k"),
            (
                (README, rf"\(({RANGE})× / {RANGE}× of it"),
                (PERFORMANCE, rf"took ({RANGE})× of its time at 10k"),
            ),
        ),
        Quoted(
            "warm cycle's ratio at 100k",
            lambda: warm_cycle("100k"),
            (
                (README, rf"\({RANGE}× / ({RANGE})× of it"),
                (PERFORMANCE, rf"at 10k and ({RANGE})× at 100k"),
            ),
        ),
        Quoted(
            "cold start's ratio over 24 pairs",
            lambda: cold_start("all"),
            (
                (README, rf"\(({n})× of that build over 24"),
                (PERFORMANCE, rf"\(({n})× over 24 alternated pairs"),
                (PERFORMANCE, rf"Over all 24 pairs: ({n})×"),
            ),
        ),
        Quoted(
            "cold start's bar",
            lambda: cold_start("bar"),
            (
                (README, rf"24 alternated pairs, ({n})× needed"),
                (PERFORMANCE, rf"; ({n})× needed\)"),
            ),
        ),
        Quoted(
            "faster than kube-scheduler",
            lambda: faster(),
            (
                (README, rf"both, ({RANGE})× its throughput in 11 of 12 cells"),
                (PERFORMANCE, rf"in 11 of 12 cells \(({RANGE})x;"),
            ),
        ),
        Quoted(
            "slower than kube-scheduler",
            lambda: slower(),
            (
                (README, rf"and ({n})× in one \(PreemptionBasic"),
                (PERFORMANCE, rf"pending at start \(({n})x\)"),
            ),
        ),
        Quoted(
            "SIGTERM to exit",
            lambda: sigterm(),
            (
                (README, rf"SIGTERM to exit ({RANGE}) s with nothing lost"),
                (PERFORMANCE, rf"we stop in ({RANGE}) s"),
            ),
        ),
        Quoted(
            "our start to first bind",
            lambda: first_bind("ours"),
            (
                (README, rf"\(({RANGE}) s to the first bind against"),
                (PERFORMANCE, rf"\(ours ({RANGE}) s against kube's"),
            ),
        ),
        Quoted(
            "kube-scheduler's start to first bind",
            lambda: first_bind("kube-scheduler"),
            (
                (README, rf"to the first bind against its ({RANGE}) s"),
                (PERFORMANCE, rf"against kube's ({RANGE}) s"),
            ),
        ),
        Quoted(
            "DRA throughput beside kube-scheduler",
            lambda: dra(2),
            (
                (PERFORMANCE, rf"kube-scheduler's {n}, \*\*({n})x\*\*"),
                (README, rf"500 nodes × 2,500 pods\): ({n})× its throughput"),
                ("docs/dra.md", rf"2,500 pods: ({n})x its throughput"),
            ),
        ),
        Quoted(
            "DRA CPU per pod beside kube-scheduler",
            lambda: dra(4),
            (
                (PERFORMANCE, rf"at ({n})x its CPU per pod \(met\)"),
                ("docs/dra.md", rf"pending at start, ({n})x its CPU per pod"),
            ),
        ),
        Quoted(
            "DRA steady state, no device in use",
            lambda: steady("empty"),
            (
                (PERFORMANCE, rf"29.5 \(({n})x\)"),
                ("docs/dra.md", rf"time\) ({n})x with no device in use"),
            ),
        ),
        Quoted(
            "DRA steady state, half the devices allocated",
            lambda: steady("half"),
            (
                (PERFORMANCE, rf"24.9 \(({n})x\)"),
                ("docs/dra.md", rf"and ({n})x with half of them allocated"),
            ),
        ),
        Quoted(
            "the hub's cold start beside OCM's controller",
            lambda: tuple(vs_ocm("cold start (x faster)")),
            (
                (README, rf"decides a cold start ({n})× faster"),
                (PERFORMANCE, rf"OCM's {n} s \(medians; \*\*({n})x\*\*"),
            ),
        ),
        Quoted(
            "the hub's churn steps beside OCM's controller",
            lambda: span(vs_ocm("churn step (x faster)")),
            (
                (README, rf"settles each churn step ({RANGE})× faster"),
                (PERFORMANCE, rf"OCM's {n}-{n} s \(({RANGE})x\)"),
            ),
        ),
        Quoted(
            "our memory beside kube-scheduler's",
            lambda: span(ratios(5)),
            ((README, rf"use ({RANGE})× its memory"),),
        ),
    ]


FIGURES = {f.name: f for f in figures()}


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_quote_of_a_figure_is_the_measured_one(name: str) -> None:
    quoted = FIGURES[name]
    measured = quoted.measured()
    for path, pattern in quoted.quotes:
        shown = one(pattern, path)
        parts = re.fullmatch(r"(\d+) of its (\d+)", shown)
        value = (float(parts[1]), float(parts[2])) if parts else figure(shown)
        assert value == measured, f"{path} says {shown} for {name}: measured {measured}"


def test_figures_quoted_in_more_than_one_place_are_all_checked() -> None:
    """Most figures here are quoted by two files or more: that is what drifted."""
    several = [f for f in FIGURES.values() if len({path for path, _ in f.quotes}) > 1]
    assert len(several) >= 15
