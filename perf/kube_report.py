"""The report's section on kube scheduler_perf's workloads (issue 29, `perf.kube_scenarios`): one
row per workload (engine and end to end beside their targets and kube's threshold for the same
shape, the load average, the verdict), scheduler_perf's `SchedulingThroughput` statistics of
every case, and a plot per workload of pods bound per second over the run."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perf.harness import Case
from perf.kube_throughput import per_second
from perf.targets import E2E, ENGINE, KUBE_SCENARIOS, KUBE_TARGETS, Target

__all__ = ["TITLE", "kube_plots", "kube_section", "plot_name"]

TITLE = "11. kube scheduler_perf's workloads, engine and end to end (issue 29)"


def plot_name(scenario: str) -> str:
    return f"{scenario}-throughput.png"


def _first(values: Any) -> Any:
    return values[0] if isinstance(values, list) and values else values


def _target(scenario: str, label: str) -> Target | None:
    return next((t for t in KUBE_TARGETS if (t.scenario, t.label) == (scenario, label)), None)


def _shown(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1e3:,.1f} ms" if value < 1 else f"{value:,.2f} s"
    return f"{value:,.0f} {unit}"


def _cell(case: Case | None, target: Target | None) -> tuple[str, str]:
    """The figure with its target and kube ratio, and met / missed (or why none)."""
    if case is None:
        return "not run", "—"
    if case.error:
        return f"**failed**: {case.error}", "failed"
    value = case.median
    cell = _shown(value, case.unit)
    if target is None:
        return cell, "—"
    size = (case.clusters, case.placements) == (target.clusters, target.placements)
    sign = "≥" if target.rate else "≤"
    cell += f" ({sign} {_shown(target.limit, target.unit)}"
    if target.kube:
        cell += f"; {value / target.kube:,.1f}× kube's {target.kube:,.0f}"
    cell += ")"
    if not size:
        return cell + f" at {case.clusters:,} × {case.placements:,}", "smaller size"
    return cell, "met" if target.judge(value) else "**missed**"


def _load(case: Case | None) -> str:
    found = _first(case.details.get("load_average")) if case is not None else None
    return f"{found:.1f}" if isinstance(found, int | float) else "—"


def _throughput_rows(cases: Sequence[Case]) -> list[str]:
    lines = [
        "| workload | run | nodes | before | measured | figure | Average | Perc50 | Perc90 | "
        "Perc99 | samples | CPU s (scheduler / server / client) | pods per CPU-s | created in | "
        "load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for c in cases:
        stats = _first(c.details.get("throughput")) or {}
        samples = _first(c.details.get("samples")) or []
        bound = _first(c.details.get("bound"))
        spent = [_first(c.details.get(k)) for k in ("cpu_s",)]
        client: list[Any] = []
        if c.label == E2E:
            spent = [_first(c.details.get(k)) for k in ("scheduler_cpu_s", "server_cpu_s")]
            client = [_first(c.details.get("client_cpu_s"))]
        cpu = " / ".join(
            f"{s:,.1f}" if isinstance(s, int | float) else "—" for s in (*spent, *client)
        )
        per_cpu = " / ".join(
            f"{bound / s:,.0f}" if isinstance(s, int | float) and s > 0 and bound else "—"
            for s in spent
        )
        created = _first(c.details.get("created_s"))
        shown_created = f"{created:,.1f} s" if isinstance(created, int | float) else "—"
        figure = "—" if c.error or not c.values else _shown(c.median, c.unit)
        cells = [f"{stats[k]:,.0f}" if k in stats else "—" for k in ("Average", "Perc50")]
        cells += [f"{stats[k]:,.0f}" if k in stats else "—" for k in ("Perc90", "Perc99")]
        lines.append(
            f"| {c.scenario.removeprefix('pod-')} | {c.label} | {c.clusters:,} | "
            f"{c.details.get('running', '')} | {c.placements:,} | {figure} | {' | '.join(cells)} | "
            f"{len(samples)} | {cpu} | {per_cpu} | {shown_created} | {_load(c)} |"
        )
    return lines


def kube_section(cases: Sequence[Case], images: Sequence[str]) -> list[str]:
    """The report's lines on the scheduler_perf scenarios (none when none ran)."""
    mine = [c for c in cases if c.scenario in KUBE_SCENARIOS]
    if not mine:
        return []
    lines = [
        "",
        f"## {TITLE}",
        "",
        "Each workload as scheduler_perf names it, through the engine without I/O and end to "
        "end (the embedded API server and the scheduler, each in its own process; the measured "
        "pods created after the scheduler is ready, timed from the first one's creation until "
        "the server holds every measured pod bound). Pods/s unless said (preemption: ms per "
        "preemptor through the engine, preemptions/s end to end; gangs: seconds until every "
        "gang is placed whole or rejected). Beside each: the target, and the ratio to kube's "
        "threshold for the same shape at 5,000 nodes on a real API server. Load: the 1-minute "
        "load average when the case ended (2 shared cores).",
        "",
        "| workload | engine (target; kube ratio) | end to end (target; kube ratio) | "
        "load (engine / e2e) | verdict |",
        "|---|---|---|---|---|",
    ]
    for scenario in KUBE_SCENARIOS:
        found = {c.label: c for c in mine if c.scenario == scenario}
        if not found:
            continue
        engine, e2e = found.get(ENGINE), found.get(E2E)
        left, left_verdict = _cell(engine, _target(scenario, ENGINE))
        right, right_verdict = _cell(e2e, _target(scenario, E2E))
        lines.append(
            f"| {scenario.removeprefix('pod-')} | {left} | {right} | "
            f"{_load(engine)} / {_load(e2e)} | engine {left_verdict}, e2e {right_verdict} |"
        )
    lines += [
        "",
        "scheduler_perf's `SchedulingThroughput`: pods bound in each whole second from the "
        "first measured pod on, and the Average / Perc50 / Perc90 / Perc99 of those samples "
        "(a run shorter than a second gives one sample over its length). CPU: of the engine's "
        "thread, or of the scheduler and the server processes (and of the creating client) "
        "while the measured pods were created and bound; pods per CPU-second (scheduler / "
        "server) is the figure the load of the machine moves least. Created in: how long the "
        "client took to create the measured pods (end to end, inside the timed window, as "
        "scheduler_perf's are; 30 in flight, bodies encoded before, answers not parsed).",
        "",
        *_throughput_rows(mine),
    ]
    for scenario in KUBE_SCENARIOS:
        if plot_name(scenario) in images:
            lines += ["", f"![{plot_name(scenario)}]({plot_name(scenario)})"]
    return lines


def kube_plots(folder: Path, cases: Sequence[Case]) -> list[str]:
    """Per workload: pods bound per second over the run, engine (per `schedule()` batch) and
    end to end (per second), with the pods/s targets dashed and kube's threshold dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made: list[str] = []
    for scenario in KUBE_SCENARIOS:
        runs = [c for c in cases if c.scenario == scenario and _first(c.details.get("timeline"))]
        if not runs:
            continue
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for c in runs:
            timeline = _first(c.details["timeline"])
            if c.label == ENGINE:  # its runs last seconds: the rate of each schedule() batch
                points = [(0.0, 0), *((float(t), int(n)) for t, n in timeline)]
                pairs = [(a, b) for a, b in itertools.pairwise(points) if b[0] > a[0]]
                xs = [b[0] for _, b in pairs]
                ys = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in pairs]
                name = "engine, per schedule() batch (500 pods)"
            else:
                ys = per_second(timeline)
                xs = [k + 1.0 for k in range(len(ys))]
                name = "end to end, per second"
            ax.plot(xs, ys, marker=".", drawstyle="steps-pre", label=name)
        for label in (ENGINE, E2E):
            target = _target(scenario, label)
            if target is not None and target.unit == "pods/s":
                ax.axhline(target.limit, linestyle="--", linewidth=1, alpha=0.6)
                ax.annotate(f"target, {label}", (0, target.limit), fontsize=7)
        kube = next((t.kube for t in KUBE_TARGETS if t.scenario == scenario and t.kube), None)
        if kube:
            ax.axhline(kube, linestyle=":", color="crimson", label=f"kube's threshold {kube:g}")
        ax.set_xlabel("seconds from the first measured pod")
        ax.set_ylabel("pods bound per second")
        first = runs[0]
        ax.set_title(
            f"{scenario.removeprefix('pod-')}: {first.clusters:,} nodes, {first.placements:,} "
            "measured pods",
            fontsize=10,
        )
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(folder / plot_name(scenario), dpi=110)
        plt.close(fig)
        made.append(plot_name(scenario))
    return made
