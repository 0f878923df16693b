"""The harness's scenarios of kube scheduler_perf's workloads (issue 29), named as there:
`pod-SchedulingBasic`, `pod-SchedulingPodAntiAffinity`, `pod-TopologySpreading`,
`pod-PreemptionBasic` and `pod-gangs` (100 gangs x 50 members on 1,000 nodes, whole or none).
Each runs twice in a fresh process (`perf.child_kube`; a smoke run keeps the engine's in this
one): `engine` (the pod engine without I/O,
`perf.kube_workloads`) and `end to end` (the embedded API server and the scheduler each in its
own process, the measured pods created once the scheduler is ready, as scheduler_perf does).

A case's value is pods/s from the first measured pod until every one is bound (preemption:
ms per preemptor through the engine, preemptions/s end to end; gangs: seconds until every gang
is placed whole or rejected); its details keep the timeline of the bound count, the per-second
samples and their Average / Perc50 / Perc90 / Perc99 (`perf.kube_throughput`, scheduler_perf's
`SchedulingThroughput`), the CPU seconds and the load average when it ended. A case whose
measured pods are not all bound, or whose bindings break the workload's rule (anti-affinity,
spread skew, more evictions than preemptors, a gang partly bound, a node over-committed) is
an error, never a figure.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from perf.harness import Case, Settings, Step, children
from perf.kube_throughput import per_second, summary
from perf.targets import (
    E2E,
    ENGINE,
    KUBE_FULL,
    KUBE_GANGS,
    KUBE_PREEMPTION,
    KUBE_QUICK,
    KUBE_SCENARIOS,
    KUBE_SMOKE,
)

__all__ = ["kube_case", "kube_steps"]

KEPT = (
    "setup_s",
    "ready_s",
    "created_s",
    "seconds",
    "cpu_s",
    "scheduler_cpu_s",
    "server_cpu_s",
    "client_cpu_s",
    "creator",
    "bound",
    "expected",
    "evicted",
    "whole_gangs",
    "load_average",
    "peak_rss_mib",
    "scheduler_log_tail",
)


def _unit(scenario: str, label: str) -> str:
    if scenario == KUBE_GANGS:
        return "s"
    if scenario == KUBE_PREEMPTION:
        return "s" if label == ENGINE else "preemptions/s"
    return "pods/s"


def _value(scenario: str, label: str, out: dict[str, Any]) -> float:
    if scenario == KUBE_GANGS:
        return float(out["seconds"])
    if scenario == KUBE_PREEMPTION and label == ENGINE:
        return float(out["ms_per_preemptor"]) / 1000
    return float(out["pods_per_s"] or 0.0)


def read(scenario: str, label: str, out: dict[str, Any], case: Case) -> float:
    """The case's value from one run, its details kept, its problems as the case's error."""
    for key in KEPT:
        if key in out:
            case.details.setdefault(key, []).append(out[key])
    timeline = out.get("timeline") or []
    samples = per_second(timeline)
    case.details.setdefault("timeline", []).append(timeline)
    case.details.setdefault("samples", []).append([round(s, 1) for s in samples])
    case.details.setdefault("throughput", []).append(
        {k: round(v, 1) for k, v in summary(samples).items()}
    )
    problems = list(out.get("problems") or [])
    if out.get("overcommitted_nodes"):
        problems.append(f"{out['overcommitted_nodes']} nodes over-committed")
    if out.get("misplaced_pods"):
        problems.append(f"{out['misplaced_pods']} pods on a cordoned node")
    if problems:
        case.error = "; ".join(problems)
    return _value(scenario, label, out)


def kube_case(scenario: str, label: str, sizes: tuple[int, int, int], settings: Settings) -> Case:
    """One workload, one way (engine or end to end), in a fresh process."""
    nodes, running, measured = sizes
    pods = running * measured if scenario == KUBE_GANGS else measured
    case = Case(scenario, label, nodes, pods, unit=_unit(scenario, label))
    case.details["running"] = running
    workload = "gangs" if scenario == KUBE_GANGS else scenario.removeprefix("pod-")
    args = [workload, f"--nodes={nodes}", f"--running={running}", f"--pods={measured}"]
    timeout = 120 + nodes * 0.02 + running * measured * 0.01 + pods * 0.02
    if label == E2E:
        wait = 120 + pods * 0.1  # generous: a slow run is a result
        args += ["--e2e", f"--timeout={wait}"]
        timeout += wait + 120 + (nodes * running if scenario == KUBE_PREEMPTION else 0) * 0.01
    reader: Callable[[Any, Case], float] = partial(read, scenario, label)
    if settings.mode == "smoke" and label == ENGINE:  # seconds: spare the process start (CI)
        from perf.kube_workloads import gangs, run

        if scenario == KUBE_GANGS:
            out = gangs(running, measured, nodes)
        else:
            out = run(workload, nodes, running, measured)
        case.values.append(reader(out, case))
        return case
    return children(case, "perf.child_kube", args, settings, 1, reader, timeout)


def kube_steps(settings: Settings, only: tuple[str, ...] | list[str]) -> list[Step]:
    """The steps of the scheduler_perf scenarios in `only`, engine then end to end."""
    sizes = {"smoke": KUBE_SMOKE, "quick": KUBE_QUICK}.get(settings.mode, KUBE_FULL)
    steps: list[Step] = []
    for scenario in KUBE_SCENARIOS:
        if scenario not in only:
            continue
        nodes, running, measured = sizes[scenario]
        pods = running * measured if scenario == KUBE_GANGS else measured
        for label, weight in ((ENGINE, 3 + nodes / 1_000), (E2E, 8 + nodes / 250 + pods / 200)):
            run = partial(kube_case, scenario, label, sizes[scenario], settings)
            steps.append(Step(scenario, label, nodes, pods, run, weight))
    return steps
