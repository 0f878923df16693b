"""The report's log-log plots: median per size with whiskers from the fastest repetition to p90, and
the targets (docs/performance.md, 'Targets') drawn as dashed lines (matplotlib, no display needed).
Every axis carries at least two numbers, however narrow the range its curves span (`log_ticks`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perf.harness import Case, cases_of, ratio
from perf.kube_report import kube_plots
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
    target_limit,
)

__all__ = ["log_ticks", "plots"]


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
    _label_log_axes(ax)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return name


# Mantissas of labelled ticks, coarsest first: decades only, then 1-2-5, then every integer.
_TICK_MANTISSAS = ((1.0,), (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0))
_FEWEST_LABELS = 3


def log_ticks(low: float, high: float) -> tuple[list[float], tuple[float, float]]:
    """The tick values to label on a log axis showing [low, high]: the coarsest series
    (decades, 1-2-5, 1..9 per decade) with at least three values in range, and the range,
    widened to the neighbouring 1..9 x 10^k values when even the finest has fewer than two
    (a curve spanning less than a factor of two). Log axes label only decades by default, so a
    curve within one decade has one number, or none, on its axis."""
    low, high = min(low, high), max(low, high)
    first, last = math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1
    ticks: list[float] = []
    for mantissas in _TICK_MANTISSAS:
        series = (float(f"{m:g}e{k}") for k in range(first, last + 1) for m in mantissas)
        ticks = [v for v in series if low * (1 - 1e-9) <= v <= high * (1 + 1e-9)]
        if len(ticks) >= _FEWEST_LABELS:
            return ticks, (low, high)
    if len(ticks) >= 2:
        return ticks, (low, high)
    finest = sorted(
        float(f"{m:g}e{k}") for k in range(first, last + 1) for m in _TICK_MANTISSAS[-1]
    )
    below = max(v for v in finest if v <= low * (1 + 1e-9))
    above = min(v for v in finest if v >= high * (1 - 1e-9) and v > below)
    return log_ticks(below, above) if (below, above) != (low, high) else ([low, high], (low, high))


def _label_log_axes(ax: Any) -> None:
    """Numbers on both log axes: the ticks of `log_ticks` labelled in plain notation
    (`1,000`, `0.5`), unlabelled minor ticks in between."""
    import matplotlib.ticker as ticker

    plain = ticker.FuncFormatter(lambda v, _: f"{v:,.6g}")
    for axis, limits, set_limits in (
        (ax.xaxis, ax.get_xlim(), ax.set_xlim),
        (ax.yaxis, ax.get_ylim(), ax.set_ylim),
    ):
        ticks, shown = log_ticks(*limits)
        if shown != (min(limits), max(limits)):
            set_limits(*shown)
        axis.set_major_locator(ticker.FixedLocator(ticks))
        axis.set_major_formatter(plain)
        axis.set_minor_locator(ticker.LogLocator(base=10, subs="auto"))
        axis.set_minor_formatter(ticker.NullFormatter())


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
            ax, cases_of(cases, CYCLE, "scheduler"), lambda c: c.clusters, "scheduler", 1e3
        )
        drawn |= _curve(
            ax, cases_of(cases, CYCLE, "loop"), lambda c: c.clusters, "per-cluster loop", 1e3
        )
        if drawn:
            points = [(float(t.clusters), t.limit * 1e3) for t in TARGETS if t.scenario == CYCLE]
            _target_points(
                ax, points, "targets: " + ", ".join(f"{ms:g} ms at {n:,.0f}" for n, ms in points)
            )
        return drawn

    def speedup(ax: Any) -> bool:
        pts = [(c.clusters, ratio(c, cases)) for c in cases_of(cases, CYCLE, "scheduler")]
        pts = sorted((n, r) for n, r in pts if r is not None)
        if not pts:
            return False
        ax.plot([n for n, _ in pts], [r for _, r in pts], marker="o", label="loop ÷ scheduler")
        ax.set_xlabel("clusters")
        ax.set_ylabel("speed-up")
        return True

    def spread(ax: Any) -> bool:
        ax.set_xlabel("clusters N (picking N/10)")
        ax.set_ylabel("ms per selection")
        drawn = _curve(
            ax, cases_of(cases, SPREAD, "vectorized"), lambda c: c.clusters, "EvenSpread", 1e3
        )
        drawn |= _curve(ax, cases_of(cases, SPREAD, "oracle"), lambda c: c.clusters, "oracle", 1e3)
        if drawn:
            limit = target_limit(SPREAD, "vectorized")
            if limit is not None:
                _target_line(ax, limit[0] * 1e3, f"target: {limit[1]}")
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
            by(COLD, "placements", target_limit(COLD, OCM_SHAPE), "seconds to all decisions"),
        )
    )
    made.append(
        _plot(
            folder,
            "cold-start-clusters.png",
            "Cold start against clusters",
            by(COLD, "clusters", target_limit(COLD, OCM_SHAPE), "seconds to all decisions"),
        )
    )
    made.append(
        _plot(
            folder,
            "fan-out.png",
            "One label change re-queuing every placement",
            by(
                FANOUT,
                "placements",
                target_limit(FANOUT, "controller"),
                "seconds to all updated",
            ),
        )
    )

    def memory(ax: Any) -> bool:
        ax.set_xlabel("clusters (placements = clusters / 10)")
        ax.set_ylabel("peak RSS, MiB")
        drawn = False
        for label, name in (("core", "scheduling core + index"), ("controller", "controller")):
            series = cases_of(cases, MEMORY, label)
            drawn |= _curve(ax, series, lambda c: c.clusters, name, 1.0)
        if drawn:
            limit = target_limit(MEMORY, "controller")
            if limit is not None:
                _target_line(ax, *limit)
        return drawn

    made.append(_plot(folder, "memory.png", "Peak resident memory", memory))
    made += _pod_plots(folder, cases)
    made += kube_plots(folder, cases)
    return [m for m in made if m is not None]


def _pod_plots(folder: Path, cases: Sequence[Case]) -> list[str | None]:
    """One plot per pod scenario against nodes (pods fixed, or growing with the nodes), its
    target as a dashed line."""

    def against_nodes(
        scenario: str, label: str, ylabel: str, scale: float, target: tuple[float, str]
    ) -> Callable[[Any], bool]:
        def draw(ax: Any) -> bool:
            series = [c for c in cases if c.scenario == scenario and c.values]
            if not series:
                return False
            pods = sorted({c.placements for c in series})
            shown = ", ".join(f"{p:,}" for p in pods)
            _curve(ax, series, lambda c: c.clusters, f"{label} (pods: {shown})", scale)
            _target_line(ax, *target)
            ax.set_xlabel("nodes")
            ax.set_ylabel(ylabel)
            return True

        return draw

    return [
        _plot(
            folder,
            "pod-engine.png",
            "Pod engine throughput, no I/O",
            against_nodes(
                POD_ENGINE, "engine", "pods/s", 1.0, (5_000, "target at 5,000 nodes: 5,000 pods/s")
            ),
        ),
        _plot(
            folder,
            "pod-preemption.png",
            "One preemption decision on full nodes",
            against_nodes(
                POD_PREEMPTION, "preemptor", "ms", 1e3, (50, "target, 5,000 x 50,000: 50 ms")
            ),
        ),
        _plot(
            folder,
            "pod-e2e.png",
            "Pod scheduler end to end (embedded API server)",
            against_nodes(
                POD_E2E, "scheduler", "pods/s", 1.0, (1_000, "target, 5,000 x 10,000: 1,000 pods/s")
            ),
        ),
        _plot(
            folder,
            "pod-memory.png",
            "Pod engine peak resident memory (pods = 10 x nodes)",
            against_nodes(
                POD_MEMORY, "engine", "peak RSS, MiB", 1.0, (500, "target, 5,000 x 50,000: 500 MiB")
            ),
        ),
    ]
