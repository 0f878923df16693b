"""The harness's report folder: `report.md` (a table per scenario, the targets' verdicts, the
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

from perf.harness import Case, cases_of, ratio, size_names
from perf.kube_report import kube_section
from perf.plots import plots
from perf.targets import (
    COLD,
    CYCLE,
    FANOUT,
    MEMORY,
    OCM_SHAPE,
    POD_E2E,
    POD_ENGINE,
    POD_MEMORY,
    POD_PREEMPTION,
    SPREAD,
    TARGETS,
    Target,
)
from perf.vs_kube_report import harness_section
from perf.vs_ocm_report import harness_section as ocm_section

__all__ = ["Fit", "fits", "fmt", "ratio", "verdicts", "write_report"]

TITLES = {
    CYCLE: "1. One scheduling cycle against fleet size",
    SPREAD: "2. EvenSpread, pick n = N/10 of N over 3 levels, against the oracle",
    COLD: "3. Controller cold start on the embedded hub",
    FANOUT: "4. Event fan-out: one cluster label change re-queuing every placement",
    MEMORY: "5. Peak resident memory",
}
POD_TITLES = {  # the local cluster's pod scheduler, after the hub's growth exponents (section 6)
    POD_ENGINE: "7. Pod scheduler engine throughput, no I/O",
    POD_PREEMPTION: "8. Pod preemption decision on full nodes",
    POD_E2E: "9. Pod scheduler end to end on the embedded API server",
    POD_MEMORY: "10. Pod engine peak resident memory",
}
RATIO_MEANS = {
    CYCLE: "ratio: per-cluster loop ÷ scheduler (speed-up), same fleet, same run",
    SPREAD: "ratio: oracle ÷ vectorized (speed-up), same inputs, same run",
    COLD: "ratio: this ÷ the 1,000-cluster run with as many placements (OCM's own benchmark size)",
    FANOUT: "no baseline: the time from the patch until every placement ran again",
    MEMORY: "ratio: controller ÷ scheduling core alone at the same size",
    POD_ENGINE: (
        "pods bound per second from the first `Engine.schedule` until the active queue is empty "
        "(batches of 500, every BindPod answered with a successful BindResult), after nodes, "
        "4 running pods per node and the pending pods were fed in as events (`setup`, untimed); "
        "every binding checked: no node over-committed, no pod on a cordoned or untolerated node"
    ),
    POD_PREEMPTION: (
        "one `Engine.schedule` for a 2-cpu pod of priority 1,000 on 8-cpu nodes each full with "
        "10 running pods of 800m at priorities 0-9 (`pods` = running pods); one value per "
        "preemptor, the victims replaced between preemptors so each finds a full cluster"
    ),
    POD_E2E: (
        "`python -m controllers.addons.scheduler --url` against `python -m controllers.embedded` "
        "(two processes; nodes and pending pods created first): pods ÷ seconds from the "
        "scheduler's /readyz (informers synced) until the server lists no unbound pod (polled "
        "every 0.1 s); with start = from launching the process; CPU = user + system seconds of "
        "each process from the launch until all were bound"
    ),
    POD_MEMORY: (
        "peak RSS of one process holding the engine (default profile), every node and pod "
        "(4 running per node, the rest pending) and scheduling them all; imports = RSS before "
        "the first event"
    ),
}


def verdicts(cases: Sequence[Case]) -> list[tuple[Target, str, str]]:
    """Each target (docs/performance.md, 'Targets') with the measured figure and met / missed /
    not measured."""
    out = []
    for target in TARGETS:
        case = next((c for c in cases if c.key == target.key), None)
        if case is not None and case.error:
            out.append((target, "failed", f"failed: {case.error}"))
            continue
        if case is None or not case.values:
            out.append((target, "—", "not measured in this run"))
            continue
        value: float | None
        if target.detail is not None:
            found = _first(case.details.get(target.detail))
            if not isinstance(found, int | float):
                out.append((target, "—", "not measured in this run"))
                continue
            value = float(found)
        else:
            value = ratio(case, cases) if target.at_least else case.median
        if value is None:
            out.append((target, "—", "no baseline in this run"))
            continue
        shown = f"{value:,.0f}×" if target.at_least else fmt(value, target.unit)
        if case.details.get("timed_out") and any(case.details["timed_out"]):
            shown += " (timed out)"
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
        (POD_ENGINE, "engine", "pod engine pods/s"),
        (POD_PREEMPTION, "engine", "preemption decision"),
        (POD_E2E, "scheduler", "pod scheduler end to end pods/s"),
        (POD_MEMORY, "engine", "pod engine peak RSS"),
    ):
        series = cases_of(cases, scenario, label)
        n_name, p_name = size_names(scenario)
        for p in sorted({c.placements for c in series}):
            pts = [(c.clusters, c.median) for c in series if c.placements == p]
            found.append(_fit(f"{name}, {p:,} {p_name}", f"{n_name} N", pts))
        for n in sorted({c.clusters for c in series}):
            pts = [(c.placements, c.median) for c in series if c.clusters == n]
            found.append(_fit(f"{name}, {n:,} {n_name}", f"{p_name} P", pts))
        if scenario == POD_E2E and len({c.placements for c in series}) > 1:
            pts = [(c.placements, c.median) for c in series]  # N and P grow together
            found.append(_fit(f"{name} (N and P together)", "pods P", pts))
        if scenario == POD_MEMORY:  # P = 10 N; the imports' floor is no cost of N
            floors = [_first(c.details.get("floor_rss_mib")) for c in series]
            if all(isinstance(f, int | float) for f in floors):
                pts = [(c.clusters, c.median - f) for c, f in zip(series, floors, strict=True)]
                found.append(_fit(f"{name} above the import floor (P = 10 N)", "nodes N", pts))
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
    if unit in ("MiB", "pods/s"):
        return f"{value:,.0f} {unit}"
    if unit != "s":
        return f"{value:,.3g} {unit}"
    if value < 1e-3:
        return f"{value * 1e6:,.0f} µs"
    if value < 1:
        return f"{value * 1e3:,.3g} ms"
    return f"{value:,.3g} s"


def _table(cases: Sequence[Case], scenario: str) -> list[str]:
    rows = [c for c in cases if c.scenario == scenario]
    n, p = size_names(scenario)
    head = f"| case | {n} | {p} | reps | median | p90 | max | ratio | notes |"
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
    if c.label.startswith("wide workload") and "verdicts" in d:
        per = _first(d.get("requests_per_pd"))
        return (
            f"{_first(d['placement_decisions']):,} PlacementDecisions, "
            f"{_first(d['decisions']):,} decisions (widest {_first(d['widest']):,}), "
            f"{_first(d['events']):,} events"
            + (f", {per:.2f} requests per PD" if isinstance(per, int | float) else "")
            + f"; controller alone: peak RSS {_first(d['peak_rss_mib']):,.0f} MiB, "
            f"CPU {_first(d['cpu_s']):.1f} s (API server {_first(d['server_cpu_s']):.1f} s); "
            f"{_first(d['reconciles']):,} reconciles"
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
    return _pod_notes(c)


def _pod_notes(c: Case) -> str:
    d = c.details
    if c.scenario == POD_ENGINE and "seconds" in d:
        seconds = ", ".join(f"{s:.2f}" for s in d["seconds"])
        return (
            f"{_first(d['bound']):,} bound in {seconds} s ({_first(d['batches'])} batches), "
            f"setup {_first(d['setup_s']):.1f} s, peak RSS {max(d['peak_rss_mib']):,.0f} MiB; "
            "none over-committed"
        )
    if c.scenario == POD_PREEMPTION and "victims" in d:
        return (
            f"{len(c.values)} preemptors, first {fmt(d['first_s'], 's')}, "
            f"victims per preemptor {d['victims']}, peak RSS {d['peak_rss_mib']:,.0f} MiB"
        )
    if c.scenario == POD_E2E and "created_s" in d:
        ready, done = _first(d["ready_s"]), _first(d["all_bound_s"])
        if _first(d["timed_out"]):
            ended = (
                f"**timed out** after {_first(d['waited_s']):.0f} s with "
                f"{_first(d['bound']):,} of {c.placements:,} bound"
            )
        else:
            ended = (
                f"all bound {done:.1f} s after launch "
                f"({_first(d['pods_per_s_with_start']):,.0f} pods/s with start)"
            )
        shown_ready = "never ready" if ready is None else f"ready after {ready:.1f} s"
        cpu = ""
        scheduler_cpu, server_cpu = _first(d.get("scheduler_cpu_s")), _first(d.get("server_cpu_s"))
        if isinstance(scheduler_cpu, int | float) and isinstance(server_cpu, int | float):
            cpu = f"; CPU meanwhile: scheduler {scheduler_cpu:.1f} s, API server {server_cpu:.1f} s"
        return f"created in {_first(d['created_s']):.1f} s; {shown_ready}; {ended}{cpu}"
    if c.scenario == POD_MEMORY and "loaded_rss_mib" in d:
        return (
            f"imports {_first(d['floor_rss_mib']):,.0f} MiB, all events in "
            f"{_first(d['loaded_rss_mib']):,.0f} MiB, {_first(d['bound']):,} pending scheduled "
            f"in {_first(d['scheduled_s']):.1f} s"
        )
    return ""


# --- the folder ----------------------------------------------------------------------------------


def _sections(cases: Sequence[Case], images: Sequence[str], titles: dict[str, str]) -> list[str]:
    lines: list[str] = []
    for scenario, title in titles.items():
        if not any(c.scenario == scenario for c in cases):
            continue
        lines += ["", f"## {title}", "", RATIO_MEANS[scenario], "", *_table(cases, scenario)]
        mine = [image for image in images if image.removesuffix(".png").startswith(scenario)]
        lines += [line for image in mine for line in ("", f"![{image}]({image})")]
        if mine:
            lines += ["", "Plots: median per size, whiskers from the fastest repetition to p90."]
    return lines


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
    lines += ["", "## Targets", "", "| target | measured | verdict |", "|---|---:|---|"]
    lines += [f"| {t.text} | {shown} | {verdict} |" for t, shown, verdict in verdicts(cases)]
    lines += _sections(cases, images, TITLES)
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
    lines += _sections(cases, images, POD_TITLES)
    lines += kube_section(cases, images)
    lines += harness_section(cases)
    lines += ocm_section(cases)
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
