"""The harness's scenarios of the local cluster's pod scheduler (its targets in docs/performance.md,
'Targets'), each run in a fresh process (`perf.child pod-*`, over the seeded cluster of
`perf._pods_workload`):

7. `pod-engine`: the engine without I/O, pods/s from the first `schedule()` until every pending
   pod is bound (bind results fed back); no node may be over-committed.
8. `pod-preemption`: one preemption decision on full nodes (10 running pods each), ms per
   preemptor over 20 preemptors; each must evict.
9. `pod-e2e`: the scheduler process against the embedded API server process, pods/s from the
   scheduler's readiness until the server holds every pod bound (a run that times out is
   reported with what it bound, as a miss).
10. `pod-memory`: peak RSS of the engine holding every node and pod and scheduling them.

The hub's scenarios (1-6) and the plan of a run are `perf.scenarios`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from perf.harness import Case, Settings, Step, children
from perf.targets import POD_E2E, POD_ENGINE, POD_MEMORY, POD_PREEMPTION, POD_VS_KUBE

__all__ = ["pod_e2e", "pod_engine", "pod_memory", "pod_preemption", "vs_kube", "vs_kube_step"]


def _pods(nodes: int, pods: int) -> list[str]:
    return [f"--nodes={nodes}", f"--pods={pods}"]


def _broken_bindings(out: Any) -> str | None:
    over, misplaced = out.get("overcommitted_nodes", 0), out.get("misplaced_pods", 0)
    if over or misplaced:
        return f"{over} nodes over-committed, {misplaced} pods on a cordoned or untolerated node"
    return None


def pod_engine(nodes: int, pending: int, settings: Settings, times: int) -> Case:
    def read(out: Any, case: Case) -> float:
        for key in ("seconds", "setup_s", "bound", "batches", "peak_rss_mib"):
            case.details.setdefault(key, []).append(out.get(key))
        case.error = _broken_bindings(out)
        if case.error is None and out["bound"] != pending:
            case.error = f"{out['bound']} of {pending} pods bound; queues {out['queues']}"
        return float(out["pods_per_s"])

    case = Case(POD_ENGINE, "engine", nodes, pending, unit="pods/s")
    args = ["pod-engine", *_pods(nodes, pending), f"--seed={settings.seed}"]
    timeout = 120 + nodes * 0.02 + pending * 0.02
    return children(case, "perf.child", args, settings, times, read, timeout)


def pod_preemption(nodes: int, running: int, settings: Settings) -> Case:
    rounds = 5 if settings.mode == "smoke" else 20

    def read(out: Any, case: Case) -> float:
        case.values.extend(ms / 1000 for ms in out["ms"][1:])
        case.details["first_s"] = out["ms"][0] / 1000
        case.details["victims"] = sorted(set(out["victims"]))
        case.details["peak_rss_mib"] = out["peak_rss_mib"]
        if 0 in out["victims"]:
            case.error = f"{out['victims'].count(0)} of {rounds} preemptors evicted nobody"
        return float(out["ms"][0]) / 1000  # the first decision counts too

    case = Case(POD_PREEMPTION, "engine", nodes, running)
    args = ["pod-preemption", *_pods(nodes, running), f"--rounds={rounds}"]
    timeout = 120 + running * 0.005
    return children(case, "perf.child", args, settings, 1, read, timeout)


def pod_e2e(nodes: int, pending: int, settings: Settings) -> Case:
    wait = 120 + pending * 0.1  # generous: a miss is a result

    def read(out: Any, case: Case) -> float:
        keys = ("created_s", "ready_s", "all_bound_s", "waited_s", "bound", "timed_out")
        more = (
            "scheduler_cpu_s",
            "server_cpu_s",
            "attempts",
            "scheduler_exit",
            "scheduler_log_tail",
        )
        for key in (*keys, "pods_per_s_with_start", *more):
            case.details.setdefault(key, []).append(out.get(key))
        case.error = _broken_bindings(out)
        if out["pods_per_s"] is not None:
            return float(out["pods_per_s"])
        ready = out["ready_s"] if out["ready_s"] is not None else out["waited_s"]
        return float(out["bound"] / max(out["waited_s"] - ready, 1e-9))  # what it bound in the time

    case = Case(POD_E2E, "scheduler", nodes, pending, unit="pods/s")
    args = ["pod-e2e", *_pods(nodes, pending), f"--seed={settings.seed}", f"--timeout={wait}"]
    timeout = wait + 180 + nodes * 0.02 + pending * 0.02
    return children(case, "perf.child", args, settings, 1, read, timeout)


def pod_memory(nodes: int, pods: int, settings: Settings) -> Case:
    def read(out: Any, case: Case) -> float:
        for key in ("floor_rss_mib", "loaded_rss_mib", "scheduled_s", "bound", "pending"):
            case.details.setdefault(key, []).append(out.get(key))
        if out["bound"] != out["pending"]:
            case.error = f"{out['bound']} of {out['pending']} pending pods bound"
        return float(out["peak_rss_mib"])

    case = Case(POD_MEMORY, "engine", nodes, pods, unit="MiB")
    args = ["pod-memory", *_pods(nodes, pods), f"--seed={settings.seed}"]
    timeout = 120 + pods * 0.01
    return children(case, "perf.child", args, settings, 1, read, timeout)


def vs_kube(settings: Settings) -> Case:
    """The side-by-side with kube-scheduler (`perf.vs_kube`), its report written beside this
    run's (`vs-kube.md`): the case's value is the lowest throughput ratio, ours / kube-scheduler,
    over the shapes; every target's verdict is in its details."""
    from perf.vs_kube_shapes import SIZES
    from tests.e2e.controlplane import missing_assets

    sizes = SIZES[settings.mode]["SchedulingBasic"]
    case = Case(POD_VS_KUBE, "ours / kube-scheduler", sizes[0], sizes[2], unit="x")
    missing = missing_assets("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
    if missing is not None:
        case.error = f"not run: {missing}"
        return case
    out = settings.log.parent if settings.log is not None else None
    args = ["--json", f"--{settings.mode}"] if settings.mode != "full" else ["--json"]
    if settings.mode == "smoke":  # the harness runs: one shape, both schedulers, both modes
        args += ["--shapes", "SchedulingBasic", "--no-interrupted"]
    if out is not None:
        args.append(f"--out={out}")

    def read(result: Any, case: Case) -> float:
        case.details["verdicts"] = result["verdicts"]
        case.details["report"] = result["report"]
        if result["problems"]:
            case.error = "; ".join(result["problems"])
        return float(result["lowest_throughput_ratio"] or 0.0)

    timeout = {"smoke": 600.0, "quick": 1_800.0}.get(settings.mode, 3_600.0)
    return children(case, "perf.vs_kube", args, settings, 1, read, timeout)


def vs_kube_step(settings: Settings) -> Step:
    from perf.vs_kube_shapes import SIZES
    from tests.e2e.controlplane import missing_assets

    nodes, _, pods = SIZES[settings.mode]["SchedulingBasic"]
    # seconds on 2 quiet cores: the full run took 1,112 s; the quick one 1,387 s at load 5-8
    weight = {"smoke": 80.0, "quick": 700.0}.get(settings.mode, 1_100.0)
    if missing_assets("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        weight = 1.0  # not run: the case says why at once
    run = partial(vs_kube, settings)
    return Step(POD_VS_KUBE, "ours / kube-scheduler", nodes, pods, run, weight)
