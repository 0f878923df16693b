"""The harness's report folder: `report.md` (a table per scenario, the DESIGN §9 verdicts, the
fitted growth exponents), `results.json` (every value) and log-log PNG plots with the targets
drawn as lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perf.harness import Case, cases_of, ratio
from perf.plots import plots
from perf.scenarios import COLD, CYCLE, FANOUT, MEMORY, OCM_SHAPE, SPREAD, TARGETS, Target

__all__ = ["Fit", "fits", "fmt", "ratio", "verdicts", "write_report"]

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


def verdicts(cases: Sequence[Case]) -> list[tuple[Target, str, str]]:
    """Each DESIGN §9 target with the measured figure and met / missed / not measured."""
    out = []
    for target in TARGETS:
        case = next((c for c in cases if c.key == target.key), None)
        if case is not None and case.error:
            out.append((target, "failed", f"failed: {case.error}"))
            continue
        if case is None or not case.values:
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


def fits(cases: Sequence[Case]) -> list[Fit]:
    """Exponents of time (or memory) against N and against P, per curve of the run."""
    found: list[Fit | None] = []
    for scenario, label, name in (
        (CYCLE, "scheduler", "scheduling cycle"),
        (CYCLE, "loop", "per-cluster loop"),
        (SPREAD, "vectorized", "EvenSpread (n = N/10)"),
        (SPREAD, "oracle", "oracle (n = N/10)"),
    ):
        series = cases_of(cases, scenario, label)
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
        series = cases_of(cases, scenario, label)
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
