"""The side-by-side's report (`perf.vs_kube`): `vs-kube.md` with a table per way of creating
the pods (each figure the median of the rounds, ours beside kube-scheduler and their ratio),
the targets as ratios to kube-scheduler in the same run with a verdict each, the placements
compared, the interrupted runs; and two plots: bound pods over time per shape, and the ratios
against their targets."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["TARGETS", "aggregate", "harness_section", "verdicts", "write"]

OURS, KUBE = "ours", "kube-scheduler"

# name, metric, mode (None: both), limit, at least (else at most), as a ratio to kube's
TARGETS: tuple[tuple[str, str, str | None, float, bool], ...] = (
    ("throughput", "pods_per_s", None, 1.5, True),
    ("scheduler CPU per pod", "cpu_ms_per_pod", None, 0.7, False),
    ("RSS", "rss_mib", None, 1.5, False),
    ("start to first bind", "first_bind_s", "before", 1.5, False),
)
STOP_LIMIT_S = 1.0


def _median(values: Iterable[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return statistics.median(kept) if kept else None


def aggregate(runs: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(shape, mode, scheduler) -> the medians of its rounds."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["shape"], run["mode"], run["scheduler"]), []).append(run)
    medians: dict[tuple[str, str, str], dict[str, Any]] = {}
    for key, group in groups.items():
        row: dict[str, Any] = {"rounds": len(group)}
        for metric in (
            "pods_per_s", "cpu_ms_per_pod", "cpu_s", "rss_mib", "first_bind_s", "ready_s",
            "stop_s", "apiserver_cpu_s", "etcd_cpu_s", "bound", "expected", "evicted",
        ):  # fmt: skip
            row[metric] = _median(r.get(metric) for r in group)
        for stat in ("Average", "Perc50", "Perc90", "Perc99"):
            row[stat] = _median(r.get("throughput", {}).get(stat) for r in group)
        row["problems"] = sorted({p for r in group for p in r.get("problems", [])})
        medians[key] = row
    return medians


def _ratio(ours: float | None, kube: float | None) -> float | None:
    return None if ours is None or not kube else ours / kube


def verdicts(runs: list[dict[str, Any]]) -> list[tuple[str, str, str, float | None, str]]:
    """(target, shape, mode, ratio or seconds, "met" / "missed" / "n/a") for every target."""
    medians = aggregate(runs)
    cells = sorted({(s, m) for s, m, _ in medians}, key=lambda c: (c[1], c[0]))
    out: list[tuple[str, str, str, float | None, str]] = []
    for shape, mode in cells:
        ours, kube = medians.get((shape, mode, OURS)), medians.get((shape, mode, KUBE))
        if ours is None or kube is None:
            continue
        for name, metric, only, limit, at_least in TARGETS:
            if only is not None and only != mode:
                continue
            ratio = _ratio(ours[metric], kube[metric])
            ok = ratio is not None and (ratio >= limit if at_least else ratio <= limit)
            out.append((name, shape, mode, ratio, "n/a" if ratio is None else _met(ok)))
        stop = ours["stop_s"]
        ok = stop is not None and stop <= STOP_LIMIT_S
        out.append(("SIGTERM to exit (s)", shape, mode, stop, _met(ok)))
    return out


def _met(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _f(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _table(medians: dict[tuple[str, str, str], dict[str, Any]], mode: str) -> list[str]:
    start = "start to first bind s" if mode == "before" else "start to ready s"
    lines = [
        f"| shape | scheduler | pods/s | Average / Perc50 / Perc90 / Perc99 | CPU ms/pod "
        f"| RSS MiB | {start} | SIGTERM to exit s | apiserver CPU s | etcd CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    startkey = "first_bind_s" if mode == "before" else "ready_s"
    for shape in dict.fromkeys(s for s, m, _ in medians if m == mode):
        rows = {n: medians.get((shape, mode, n)) for n in (KUBE, OURS)}
        for name, row in rows.items():
            if row is None:
                continue
            stats = " / ".join(_f(row[s], 0) for s in ("Average", "Perc50", "Perc90", "Perc99"))
            lines.append(
                f"| {shape} | {name} | {_f(row['pods_per_s'])} | {stats} "
                f"| {_f(row['cpu_ms_per_pod'], 2)} | {_f(row['rss_mib'], 0)} "
                f"| {_f(row[startkey], 2)} | {_f(row['stop_s'], 2)} "
                f"| {_f(row['apiserver_cpu_s'], 2)} | {_f(row['etcd_cpu_s'], 2)} |"
            )
        ours, kube = rows[OURS], rows[KUBE]
        if ours is not None and kube is not None:

            def r(metric: str, o: dict[str, Any] = ours, k: dict[str, Any] = kube) -> str:
                ratio = _ratio(o[metric], k[metric])
                return "–" if ratio is None else f"{ratio:.2f}x"

            lines.append(
                f"| | *ours / kube* | *{r('pods_per_s')}* | *{r('Average')}* "
                f"| *{r('cpu_ms_per_pod')}* | *{r('rss_mib')}* | *{r(startkey)}* "
                f"| *{r('stop_s')}* | *{r('apiserver_cpu_s')}* | *{r('etcd_cpu_s')}* |"
            )
    return lines


def _placements(runs: list[dict[str, Any]]) -> list[str]:
    from perf.vs_kube_shapes import compare

    lines = [
        "| shape | pods | same pods bound | measured pods per used node: ours | kube "
        "| evictions: ours | kube | same node |",
        "|---|---|---|---|---|---|---|---|",
    ]
    first = {(r["shape"], r["mode"], r["scheduler"]): r for r in runs if r.get("round") == 0}
    for (shape, mode, name), run in first.items():
        other = first.get((shape, mode, KUBE))
        if name != OURS or other is None:
            continue
        c = compare(run["placements"], other["placements"])
        share = c["same_node_share"]
        (a, b), (x, y) = c["per_node_ours"], c["per_node_kube"]
        lines.append(
            f"| {shape} | {mode} | {c['same_pods_bound']} | {a}–{b} | {x}–{y} "
            f"| {run['evicted']} | {other['evicted']} "
            f"| {'–' if share is None else f'{share:.0%}'} |"
        )
    return lines


def _plots(out: Path, runs: list[dict[str, Any]], checks: list[Any]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = list(dict.fromkeys(r["shape"] for r in runs))
    fig, axes = plt.subplots(len(shapes), 1, figsize=(8, 2.6 * len(shapes)), squeeze=False)
    for ax, shape in zip(axes[:, 0], shapes, strict=True):
        for run in runs:
            if run["shape"] != shape or run.get("round") != 0 or not run["timeline"]:
                continue
            t, n = zip(*run["timeline"], strict=True)
            style = "-" if run["scheduler"] == OURS else "--"
            ax.plot(t, n, style, label=f"{run['scheduler']}, pods {run['mode']}")
        ax.set_title(shape, fontsize=9)
        ax.set_xlabel("seconds from the first bind (before) / first create (during)", fontsize=8)
        ax.set_ylabel("pods bound", fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "vs-kube-timeline.png", dpi=90)
    plt.close(fig)
    ratios = [c for c in checks if c[0] != "SIGTERM to exit (s)" and c[3] is not None]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(ratios) + 1.2))
    labels = [f"{name}: {shape} ({mode})" for name, shape, mode, _, _ in ratios]
    colors = ["tab:green" if v == "met" else "tab:red" for *_, v in ratios]
    ax.barh(range(len(ratios)), [c[3] for c in ratios], color=colors)
    ax.set_yticks(range(len(ratios)), labels, fontsize=7)
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("ours / kube-scheduler (green: target met)", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "vs-kube-ratios.png", dpi=90)
    plt.close(fig)
    return ["vs-kube-timeline.png", "vs-kube-ratios.png"]


def write(out: Path, result: dict[str, Any], plots: Callable[..., list[str]] = _plots) -> Path:
    """`vs-kube.md` (and the plots) in `out` from a run's result; its path."""
    runs = result["runs"]
    medians = aggregate(runs)
    checks = verdicts(runs)
    header = result.get("header", {})
    lines = ["# Pod scheduler side by side with kube-scheduler", ""]
    lines += [f"- {k}: {v}" for k, v in header.items() if k != "machine"]
    machine = header.get("machine", {})
    if machine:
        lines.append(f"- machine: {machine.get('cpu')}, {machine.get('cores')} cores")
        lines.append(f"- commit: {machine.get('commit')}")
    lines += [f"- {k}: {v}" for k, v in result.get("settings", {}).items()]
    sizes = ", ".join(f"{s} {n}/{b}/{m}" for s, (n, b, m) in result.get("sizes", {}).items())
    lines += [f"- sizes (nodes / pods running before / measured): {sizes}", ""]
    for mode, title in (
        ("before", "Pods pending when the scheduler starts (pods/s from the first bind)"),
        ("during", "Pods created once the scheduler is ready (pods/s from the first create)"),
    ):
        if any(m == mode for _, m, _ in medians):
            lines += [f"## {title}", "", *_table(medians, mode), ""]
    lines += ["## Targets (ratios to kube-scheduler in the same run)", ""]
    lines += ["| target | shape | pods | value | verdict |", "|---|---|---|---|---|"]
    for name, shape, mode, value, verdict in checks:
        shown = "–" if value is None else (f"{value:.2f}x" if "(s)" not in name else f"{value}")
        lines.append(f"| {name} | {shape} | {mode} | {shown} | {verdict} |")
    lines += ["", "## Placements (round 1, ours against kube-scheduler)", "", *_placements(runs)]
    stops = result.get("interrupted", [])
    if stops:
        lines += ["", "## SIGTERM with binds in flight (SchedulingWithPVs, pods pending)", ""]
        lines += [
            "| scheduler | pods | bound at SIGTERM | SIGTERM to exit s | bound at exit "
            "| 2 s later | in the end (second instance) | problems |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for s in stops:
            lines.append(
                f"| {s['scheduler']} | {s['pods']} | {s['bound_at_sigterm']} | {s['stop_s']} "
                f"| {s['bound_at_exit']} | {s['bound_after_exit']} | {s['bound_in_the_end']} "
                f"| {'; '.join(s['problems']) or 'none'} |"
            )
    problems = [(k, row["problems"]) for k, row in medians.items() if row["problems"]]
    if problems:
        lines += ["", "## Problems", ""]
        lines += [f"- {' / '.join(k)}: {'; '.join(p)}" for k, p in problems]
    images = plots(out, runs, checks)
    lines += ["", *[f"![{name}]({name})" for name in images], ""]
    report = out / "vs-kube.md"
    report.write_text("\n".join(lines))
    return report


def harness_section(cases: Iterable[Any]) -> list[str]:
    """report.md's lines on the side-by-side case of `python -m perf` (none when it did not
    run): the targets' verdicts, and where the full report is."""
    mine = [c for c in cases if c.scenario == "pod-vs-kube"]
    if not mine:
        return []
    case = mine[0]
    lines = ["", "## 12. Side by side with kube-scheduler v1.36 on a real kube-apiserver", ""]
    if case.error and not case.values:
        return [*lines, f"Not measured: {case.error}"]
    lines += [
        f"Lowest throughput ratio, ours / kube-scheduler, over the shapes: "
        f"{case.values[0]:.2f}x. The tables, the placements compared and the plots: "
        "[vs-kube.md](vs-kube.md).",
        "",
        "| target | shape | pods | value | verdict |",
        "|---|---|---|---|---|",
    ]
    for name, shape, mode, value, verdict in case.details.get("verdicts", []):
        shown = "–" if value is None else (f"{value:.2f}x" if "(s)" not in name else f"{value}")
        lines.append(f"| {name} | {shape} | {mode} | {shown} | {verdict} |")
    return lines
