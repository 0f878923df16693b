"""The harness's report folder: `report.md` (a table per scenario, the DESIGN §9 verdicts, the
fitted growth exponents), `results.json` (every value) and log-log PNG plots with the targets
drawn as lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perf.harness import Case
from perf.scenarios import COLD, CYCLE, FANOUT, MEMORY, OCM_SHAPE, SPREAD, TARGETS, Target

__all__ = ["Fit", "fits", "ratio", "verdicts", "write_report"]

TITLES = {
    CYCLE: "1. One scheduling cycle against fleet size",
    SPREAD: "2. EvenSpread, pick n = N/10 of N over 3 levels, against the oracle",
    COLD: "3. Controller cold start on the embedded hub",
    FANOUT: "4. Event fan-out: one cluster label change re-queuing every placement",
    MEMORY: "5. Peak resident memory",
}
RATIO_MEANS = {
    CYCLE: "ratio: per-cluster loop ÷ scheduler (speed-up), same fleet, same run",
    SPREAD: "ratio: oracle ÷ vectorized (speed-up), same inputs, same run",
    COLD: "ratio: this ÷ the 1,000-cluster run with as many placements (OCM's own benchmark size)",
    FANOUT: "no baseline: the time from the patch until every placement ran again",
    MEMORY: "ratio: controller ÷ scheduling core alone at the same size",
}


def _find(cases: Iterable[Case], scenario: str, label: str, n: int, p: int) -> Case | None:
    for case in cases:
        key = (case.scenario, case.label, case.clusters, case.placements)
        if key == (scenario, label, n, p) and case.values:
            return case
    return None


def ratio(case: Case, cases: Sequence[Case]) -> float | None:
    """The case against its baseline measured in the same run (see `RATIO_MEANS`)."""
    if case.baseline is None or not case.values:
        return None
    base = _find(cases, case.scenario, *case.baseline)
    if base is None or base.median <= 0 or case.median <= 0:
        return None
    return base.median / case.median if case.speedup else case.median / base.median


def verdicts(cases: Sequence[Case]) -> list[tuple[Target, str, str]]:
    """Each DESIGN §9 target with the measured figure and met / missed / not measured."""
    out = []
    for target in TARGETS:
        case = _find(cases, target.scenario, target.label, target.clusters, target.placements)
        failed = next(
            (
                c
                for c in cases
                if (c.scenario, c.label, c.clusters, c.placements)
                == (target.scenario, target.label, target.clusters, target.placements)
                and c.error
            ),
            None,
        )
        if failed is not None:
            out.append((target, "failed", f"failed: {failed.error}"))
            continue
        if case is None:
            out.append((target, "—", "not measured in this run"))
            continue
        value = ratio(case, cases) if target.at_least else case.median
        if value is None:
            out.append((target, "—", "no baseline in this run"))
            continue
        shown = f"{value:,.0f}×" if target.at_least else fmt(value, target.unit)
        out.append((target, shown, "**met**" if target.judge(value) else "**missed**"))
    return out


# --- growth exponents ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """`time ~ x^exponent` fitted by least squares on log-log axes."""

    series: str
    against: str
    points: tuple[tuple[float, float], ...]
    exponent: float


def _fit(series: str, against: str, points: Sequence[tuple[float, float]]) -> Fit | None:
    usable = sorted((x, y) for x, y in points if x > 0 and y > 0 and math.isfinite(y))
    if len({x for x, _ in usable}) < 2:
        return None
    xs, ys = np.log([x for x, _ in usable]), np.log([y for _, y in usable])
    slope = float(np.polyfit(xs, ys, 1)[0])
    return Fit(series, against, tuple(usable), slope)


def _series(cases: Sequence[Case], scenario: str, label: str) -> list[Case]:
    return [c for c in cases if c.scenario == scenario and c.label == label and c.values]


def fits(cases: Sequence[Case]) -> list[Fit]:
    """Exponents of time (or memory) against N and against P, per curve of the run."""
    found: list[Fit | None] = []
    for scenario, label, name in (
        (CYCLE, "scheduler", "scheduling cycle"),
        (CYCLE, "loop", "per-cluster loop"),
        (SPREAD, "vectorized", "EvenSpread (n = N/10)"),
        (SPREAD, "oracle", "oracle (n = N/10)"),
    ):
        series = _series(cases, scenario, label)
        found.append(_fit(name, "clusters N", [(c.clusters, c.median) for c in series]))
        large = sorted(series, key=lambda c: c.clusters)[-3:]
        if len(series) > 3:
            found.append(
                _fit(f"{name}, 3 largest", "clusters N", [(c.clusters, c.median) for c in large])
            )
    for scenario, label, name in (
        (COLD, OCM_SHAPE, "cold start"),
        (COLD, "mixed workload", "cold start, mixed workload"),
        (FANOUT, "controller", "fan-out"),
        (MEMORY, "core", "core peak RSS"),
        (MEMORY, "controller", "controller peak RSS"),
    ):
        series = _series(cases, scenario, label)
        for p in sorted({c.placements for c in series}):
            pts = [(c.clusters, c.median) for c in series if c.placements == p]
            found.append(_fit(f"{name}, {p:,} placements", "clusters N", pts))
        for n in sorted({c.clusters for c in series}):
            pts = [(c.placements, c.median) for c in series if c.clusters == n]
            found.append(_fit(f"{name}, {n:,} clusters", "placements P", pts))
        if scenario == MEMORY:  # P grows with N there (N/10); the imports' floor is no cost of N
            floors = [_first(c.details.get("floor_rss_mib")) for c in series]
            if all(isinstance(f, int | float) for f in floors):
                pts = [(c.clusters, c.median - f) for c, f in zip(series, floors, strict=True)]
                found.append(_fit(f"{name} above the import floor (P = N/10)", "clusters N", pts))
            else:  # measured as is: the controller's run reports no floor
                pts = [(c.clusters, c.median) for c in series]
                found.append(_fit(f"{name} (P = N/10)", "clusters N", pts))
    return [f for f in found if f is not None]


# --- formatting ----------------------------------------------------------------------------------


def fmt(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "—"
    if unit == "MiB":
        return f"{value:,.0f} MiB"
    if unit != "s":
        return f"{value:,.3g} {unit}"
    if value < 1e-3:
        return f"{value * 1e6:,.0f} µs"
    if value < 1:
        return f"{value * 1e3:,.3g} ms"
    return f"{value:,.3g} s"


def _table(cases: Sequence[Case], scenario: str) -> list[str]:
    rows = [c for c in cases if c.scenario == scenario]
    head = "| case | clusters | placements | reps | median | p90 | max | ratio | notes |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in rows:
        r = ratio(c, cases)
        note = f"**error**: {c.error}" if c.error else _notes(c)
        lines.append(
            f"| {c.label} | {c.clusters:,} | {c.placements:,} | {len(c.values)} | "
            f"{fmt(c.median, c.unit)} | {fmt(c.p90, c.unit)} | {fmt(c.max, c.unit)} | "
            f"{'' if r is None else f'{r:,.3g}×'} | {note} |"
        )
    return lines


def _first(values: Any) -> Any:
    return values[0] if isinstance(values, list) and values else values


def _notes(c: Case) -> str:
    d = c.details
    if c.label == "mixed workload" and "verdicts" in d:
        verdicts = ", ".join(f"{k} {v:,}" for k, v in sorted(_first(d["verdicts"]).items()))
        return (
            f"{_first(d['reconciles']):,} reconciles, {_first(d['decisions']):,} decisions; "
            f"{verdicts}"
        )
    if c.scenario == COLD and "reconciles" in d:
        per = 1000 * c.median / c.placements
        return (
            f"{per:.2f} ms/placement, synced {_first(d['synced_s']):.1f} s, "
            f"{_first(d['reconciles']):,} reconciles, RSS {_first(d['peak_rss_mib']):,.0f} MiB "
            "(server and controller)"
        )
    if c.scenario == FANOUT and "requeued" in d:
        return f"{_first(d['requeued']):,} re-queued, {_first(d['had_it'])} had the cluster"
    if c.scenario == MEMORY and c.label == "core" and "loaded_rss_mib" in d:
        return (
            f"imports {_first(d['floor_rss_mib']):,.0f} MiB, "
            f"index loaded {_first(d['loaded_rss_mib']):,.0f} MiB, "
            f"{_first(d['ms_per_placement']):.2f} ms/placement"
        )
    if c.scenario == MEMORY and "decided_s" in d:
        return f"server apart; cold start {_first(d['decided_s']):.1f} s"
    return ""


# --- plots ---------------------------------------------------------------------------------------


def _plot(
    folder: Path,
    name: str,
    title: str,
    draw: Callable[[Any], bool],
) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    if not draw(ax):
        plt.close(fig)
        return None
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.6g}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return name


def _curve(
    ax: Any, series: Sequence[Case], x: Callable[[Case], int], label: str, scale: float
) -> bool:
    series = sorted(series, key=x)
    if not series:
        return False
    xs = [x(c) for c in series]
    med = [c.median * scale for c in series]
    low = [(c.median - min(c.values)) * scale for c in series]
    high = [(c.p90 - c.median) * scale for c in series]
    ax.errorbar(xs, med, yerr=[low, high], marker="o", capsize=3, label=label)
    return True


def _target_line(ax: Any, value: float, text: str) -> None:
    ax.axhline(value, linestyle="--", linewidth=1, color="crimson", alpha=0.7, label=text)


def _target_points(ax: Any, points: Sequence[tuple[float, float]], text: str) -> None:
    """A target set at some sizes only: a dashed line through them."""
    xs, ys = zip(*points, strict=True)
    ax.plot(xs, ys, linestyle="--", marker="v", color="crimson", alpha=0.7, label=text)


def plots(folder: Path, cases: Sequence[Case]) -> list[str]:
    made: list[str | None] = []

    def cycle(ax: Any) -> bool:
        ax.set_xlabel("clusters")
        ax.set_ylabel("ms per cycle")
        drawn = _curve(
            ax, _series(cases, CYCLE, "scheduler"), lambda c: c.clusters, "scheduler", 1e3
        )
        drawn |= _curve(
            ax, _series(cases, CYCLE, "loop"), lambda c: c.clusters, "per-cluster loop", 1e3
        )
        if drawn:
            _target_points(ax, [(1e4, 1.0), (1e5, 5.0)], "targets: 1 ms at 10k, 5 ms at 100k")
        return drawn

    def speedup(ax: Any) -> bool:
        pts = [(c.clusters, ratio(c, cases)) for c in _series(cases, CYCLE, "scheduler")]
        pts = sorted((n, r) for n, r in pts if r is not None)
        if not pts:
            return False
        ax.plot([n for n, _ in pts], [r for _, r in pts], marker="o", label="loop ÷ scheduler")
        _target_line(ax, 50, "target at 10k: 50×")
        ax.set_xlabel("clusters")
        ax.set_ylabel("speed-up")
        return True

    def spread(ax: Any) -> bool:
        ax.set_xlabel("clusters N (picking N/10)")
        ax.set_ylabel("ms per selection")
        drawn = _curve(
            ax, _series(cases, SPREAD, "vectorized"), lambda c: c.clusters, "EvenSpread", 1e3
        )
        drawn |= _curve(ax, _series(cases, SPREAD, "oracle"), lambda c: c.clusters, "oracle", 1e3)
        if drawn:
            _target_line(ax, 50.0, "target, 1,000 of 10,000: 50 ms")
        return drawn

    def by(
        scenario: str, along: str, target: tuple[float, str] | None, ylabel: str, scale: float = 1.0
    ) -> Callable[[Any], bool]:
        def draw(ax: Any) -> bool:
            series = [c for c in cases if c.scenario == scenario and c.values]
            other = "clusters" if along == "placements" else "placements"
            drawn = False
            for fixed in sorted({getattr(c, other) for c in series}):
                line = [c for c in series if getattr(c, other) == fixed]
                labels = sorted({c.label for c in line})
                for label in labels:
                    curve = [c for c in line if c.label == label]
                    if len(curve) >= 2 or len(series) == 1:
                        name = f"{label}, {fixed:,} {other}"
                        drawn |= _curve(ax, curve, lambda c: getattr(c, along), name, scale)
            if drawn and target is not None:
                _target_line(ax, *target)
            ax.set_xlabel(along)
            ax.set_ylabel(ylabel)
            return drawn

        return draw

    made.append(_plot(folder, "cycle.png", "One scheduling cycle (warm snapshot)", cycle))
    made.append(_plot(folder, "cycle-speedup.png", "Speed-up over a per-cluster loop", speedup))
    made.append(_plot(folder, "spread.png", "EvenSpread against the oracle", spread))
    made.append(
        _plot(
            folder,
            "cold-start-placements.png",
            "Cold start against placements",
            by(
                COLD, "placements", (60, "target, 5,000 x 10,000: 60 s"), "seconds to all decisions"
            ),
        )
    )
    made.append(
        _plot(
            folder,
            "cold-start-clusters.png",
            "Cold start against clusters",
            by(COLD, "clusters", (60, "target, 5,000 x 10,000: 60 s"), "seconds to all decisions"),
        )
    )
    made.append(
        _plot(
            folder,
            "fan-out.png",
            "One label change re-queuing every placement",
            by(FANOUT, "placements", (3, "target, 1,000 re-queued: 3 s"), "seconds to all updated"),
        )
    )

    def memory(ax: Any) -> bool:
        ax.set_xlabel("clusters (placements = clusters / 10)")
        ax.set_ylabel("peak RSS, MiB")
        drawn = False
        for label, name in (("core", "scheduling core + index"), ("controller", "controller")):
            series = _series(cases, MEMORY, label)
            drawn |= _curve(ax, series, lambda c: c.clusters, name, 1.0)
        if drawn:
            _target_line(ax, 1024, "target at 100k x 10k: 1 GiB")
        return drawn

    made.append(_plot(folder, "memory.png", "Peak resident memory", memory))
    return [m for m in made if m is not None]


# --- the folder ----------------------------------------------------------------------------------


def write_report(
    folder: Path,
    cases: Sequence[Case],
    machine: dict[str, Any],
    header: dict[str, Any],
) -> Path:
    """Write report.md, results.json and the plots into `folder`; return report.md's path."""
    folder.mkdir(parents=True, exist_ok=True)
    images = plots(folder, cases)
    lines = ["# ocm-placement scale report", ""]
    lines += [f"* {k}: {v}" for k, v in header.items()]
    lines += ["", "## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in machine.items()]
    lines += ["", "## DESIGN §9 targets", "", "| target | measured | verdict |", "|---|---:|---|"]
    lines += [f"| {t.text} | {shown} | {verdict} |" for t, shown, verdict in verdicts(cases)]
    for scenario, title in TITLES.items():
        if not any(c.scenario == scenario for c in cases):
            continue
        lines += ["", f"## {title}", "", RATIO_MEANS[scenario], "", *_table(cases, scenario)]
        for image in images:
            if image.startswith(scenario) or (scenario == COLD and image.startswith("cold-start")):
                lines += ["", f"![{image}]({image})"]
        if any(image.startswith(scenario) for image in images):
            lines += ["", "Plots: median per size, whiskers from the fastest repetition to p90."]
    found = fits(cases)
    lines += ["", "## 6. How cost grows", ""]
    if found:
        lines += [
            "Least-squares slope of log(median) against log(size): time ∝ size^exponent.",
            "",
            "| curve | against | points | exponent |",
            "|---|---|---:|---:|",
        ]
        lines += [
            f"| {f.series} | {f.against} | {len(f.points)} | {f.exponent:.2f} |" for f in found
        ]
    else:
        lines.append("Too few sizes in this run to fit an exponent.")
    failed = [c for c in cases if c.error]
    if failed:
        lines += ["", "## Errors", ""]
        lines += [
            f"* {c.scenario} {c.label} {c.clusters:,} × {c.placements:,}: {c.error}" for c in failed
        ]
    report = folder / "report.md"
    report.write_text("\n".join(lines) + "\n")
    payload = {
        "header": header,
        "machine": machine,
        "cases": [c.to_json() for c in cases],
        "fits": [
            {"series": f.series, "against": f.against, "exponent": f.exponent, "points": f.points}
            for f in found
        ],
    }
    (folder / "results.json").write_text(json.dumps(payload, indent=1) + "\n")
    return report
