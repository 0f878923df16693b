"""The scale harness's plumbing: measured cases and their statistics, repetitions in this
process, runs in a fresh process, and the machine the figures come from.

A `Case` is one thing measured at one size (say "scheduler" at 10,000 clusters) with one value
per repetition. A `Step` is the work that produces it; the runner (`perf.__main__`) runs the
steps in order behind one progress bar and hands the cases to `perf.report`.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "Case",
    "ChildError",
    "Settings",
    "Step",
    "cases_of",
    "children",
    "find_case",
    "in_child",
    "machine",
    "memory_mib",
    "ratio",
    "repeat",
    "size_names",
]


def size_names(scenario: str) -> tuple[str, str]:
    """What a case's two sizes count: clusters and placements on the hub, nodes and pods for
    the local cluster's pod scheduler (scenarios `pod-*`)."""
    return ("nodes", "pods") if scenario.startswith("pod-") else ("clusters", "placements")


@dataclass(frozen=True)
class Settings:
    """How hard to measure: `mode` is "full", "quick" (about 4 minutes) or "smoke" (tiny
    sizes, seconds: checks that the harness itself runs)."""

    mode: str
    seed: int = 20261122
    budget_s: float = 2.0  # time spent repeating one in-process case
    repetitions: int = 3  # repetitions of a case run in fresh processes
    log: Path | None = None  # where children's stderr goes


@dataclass
class Case:
    """One measured case: a value per repetition (seconds, MiB for memory, pods/s for the pod
    scheduler's throughput). A pod scenario's `clusters` and `placements` are its nodes and
    pods (`size_names`)."""

    scenario: str
    label: str
    clusters: int
    placements: int = 1
    values: list[float] = field(default_factory=list)
    unit: str = "s"
    # the case (label, clusters, placements) of the same scenario this one is compared with:
    # ratio = baseline / this when `speedup`, else this / baseline
    baseline: tuple[str, int, int] | None = None
    speedup: bool = True
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # why the case has no (or not all) values

    @property
    def key(self) -> tuple[str, str, int, int]:
        """What the case is: scenario, label, clusters, placements."""
        return (self.scenario, self.label, self.clusters, self.placements)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    @property
    def p90(self) -> float:
        return float(np.percentile(self.values, 90)) if self.values else float("nan")

    @property
    def max(self) -> float:
        return max(self.values) if self.values else float("nan")

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Case:
        """The case `to_json` wrote (statistics are recomputed from the values)."""
        baseline = doc.get("baseline")
        return cls(
            scenario=doc["scenario"],
            label=doc["label"],
            clusters=int(doc["clusters"]),
            placements=int(doc["placements"]),
            values=[float(v) for v in doc["values"]],
            unit=doc["unit"],
            baseline=(baseline[0], int(baseline[1]), int(baseline[2])) if baseline else None,
            speedup=bool(doc.get("speedup", True)),
            details=dict(doc.get("details") or {}),
            error=doc.get("error"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "label": self.label,
            "clusters": self.clusters,
            "placements": self.placements,
            "unit": self.unit,
            "values": self.values,
            "median": self.median if self.values else None,
            "p90": self.p90 if self.values else None,
            "max": self.max if self.values else None,
            "baseline": list(self.baseline) if self.baseline else None,
            "speedup": self.speedup,
            "details": self.details,
            "error": self.error,
        }


@dataclass(frozen=True)
class Step:
    """The work that measures one case; `weight` is its rough share of the run (seconds)."""

    scenario: str
    label: str
    clusters: int
    placements: int
    run: Callable[[], Case]
    weight: float = 1.0

    @property
    def title(self) -> str:
        n, p = size_names(self.scenario)
        size = f"{self.clusters:,} {n}"
        if self.placements > 1:
            size += f" x {self.placements:,} {p}"
        return f"{self.scenario}: {self.label}, {size}"


def repeat(
    fn: Callable[[], object],
    *,
    budget_s: float,
    least: int = 5,
    most: int = 500,
) -> list[float]:
    """Seconds per call of `fn`, after one untimed warm-up call: at least `least` calls, then
    more until `budget_s` is spent or `most` calls are made."""
    fn()
    times: list[float] = []
    began = time.perf_counter()
    while len(times) < most and (len(times) < least or time.perf_counter() - began < budget_s):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def find_case(cases: Iterable[Case], scenario: str, label: str, n: int, p: int) -> Case | None:
    """The measured case of that scenario and label at `n` clusters and `p` placements."""
    wanted = (scenario, label, n, p)
    return next((case for case in cases if case.key == wanted and case.values), None)


def ratio(case: Case, cases: Sequence[Case]) -> float | None:
    """The case against its baseline measured in the same run
    (baseline ÷ case for a speed-up, else case ÷ baseline)."""
    if case.baseline is None or not case.values:
        return None
    base = find_case(cases, case.scenario, *case.baseline)
    if base is None or base.median <= 0 or case.median <= 0:
        return None
    return base.median / case.median if case.speedup else case.median / base.median


def cases_of(cases: Sequence[Case], scenario: str, label: str) -> list[Case]:
    """The measured cases of one curve, in run order."""
    return [c for c in cases if c.scenario == scenario and c.label == label and c.values]


class ChildError(RuntimeError):
    """A measurement run in a fresh process failed; the message says which and why."""


def in_child(module: str, args: list[str], *, log: Path | None, timeout_s: float) -> Any:
    """Run `python -m <module> <args>` in a fresh process (its peak RSS is its own, nothing
    carries over from earlier cases) and return the JSON it printed last on stdout."""
    command = [sys.executable, "-m", module, *args]
    shown = "python " + " ".join(command[1:])
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=Path(__file__).resolve().parent.parent,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ChildError(f"{shown}: no answer within {timeout_s:.0f} s") from exc
    if log is not None:
        with log.open("a") as out:
            out.write(f"\n$ {shown}\n{done.stderr}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        last = [line for line in done.stderr.splitlines() if line.strip()][-1:] or ["no output"]
        raise ChildError(f"{shown} exited {done.returncode}: {last[0].strip()[:300]}")
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        raise ChildError(f"{shown} printed no JSON: {lines[-1][:200]!r}") from exc


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _git(*args: str) -> str:
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _git_commit() -> str:
    try:
        commit = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}{' (uncommitted changes)' if dirty else ''}"


def machine() -> dict[str, Any]:
    """What the figures depend on: CPU, cores, memory, load, versions, commit."""
    from importlib.metadata import PackageNotFoundError, version

    def version_of(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": version_of("numpy"),
        "pydantic": version_of("pydantic"),
        "aiohttp": version_of("aiohttp"),
        "kubernetes_asyncio": version_of("kubernetes-asyncio"),
        "commit": _git_commit(),
    }


def children(
    case: Case,
    module: str,
    args: list[str],
    settings: Settings,
    times: int,
    read: Callable[[Any, Case], float],
    timeout_s: float,
) -> Case:
    """`case` with the value `read` takes from each of `times` runs of `module` in a fresh
    process (`in_child`); the first failure, or a run that sets `case.error`, stops it."""
    for _ in range(times):
        try:
            out = in_child(module, args, log=settings.log, timeout_s=timeout_s)
        except ChildError as exc:
            case.error = str(exc)
            break
        case.values.append(read(out, case))
        if case.error is not None:
            break
    return case


STATUS = Path("/proc/self/status")


def memory_mib(field: str = "VmHWM") -> float:
    """This process's resident memory (`VmRSS`) or its peak (`VmHWM`), in MiB."""
    for line in STATUS.read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{STATUS} has no {field}")
