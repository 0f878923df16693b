"""Measurements the harness runs in a fresh process, one per call, each printing one JSON line.

    python -m perf.child fan-out --clusters 5000 --placements 1000
    python -m perf.child core --clusters 100000 --placements 10000
    python -m perf.child mixed --clusters 5000 --placements 1000
    python -m perf.child mixed --clusters 5000 --placements 2000 --wide 0.2 --split
    python -m perf.child pod-engine --nodes 5000 --pods 10000
    python -m perf.child pod-preemption --nodes 5000 --pods 50000
    python -m perf.child pod-memory --nodes 5000 --pods 50000
    python -m perf.child pod-e2e --nodes 1000 --pods 5000

`fan-out`: a cold start of the controller against the embedded hub (OCM's benchmark shape,
`perf.controller_run`), then one cluster label change that re-queues every placement; the time
from the patch until every decision is updated. `core`: the scheduling core alone with the
in-memory index (docs/performance.md's memory target, no API machinery): a generated workload
(`perf.workload`) is handed, as the rows the controller's caches keep, to a second fresh process
that loads it into a `FleetIndex` and schedules every placement in turn, its decisions written
back into the index so later placements see them (as the controller does). It reports that
process's resident memory once the index holds the fleet, and its peak. `mixed`: a controller
cold start like `perf.controller_run` but on the generated workload (spread policies, decision
groups, Exact mode, tolerations, claims ...) instead of OCM's benchmark shape; every placement
must end with a status, none misconfigured, and its PlacementDecisions must hold what its status
counts.

The pod scheduler's (targets in docs/performance.md, the cluster of `perf._pods_workload`):
`pod-engine` feeds nodes, running pods and pending pods to an `Engine` with the default profile,
then times `schedule()` in batches, each BindPod answered with a successful BindResult, until
the active queue is empty; every binding is checked (no node over-committed, no spot or
cordoned node misused). `pod-preemption`: full nodes of 10 running pods each at priorities 0..9
and, round after round, one pod of priority 1,000 whose cycle must preempt; the victims are then
replaced so every round starts from a full cluster. `pod-memory`: this process's resident memory
after the imports, once the engine holds every node and pod, and its peak after scheduling them
all. `pod-e2e`: the embedded API server and the scheduler (`python -m
controllers.addons.scheduler --url`) each in its own process, the nodes and pending pods created
first, timed from the scheduler's start until the server holds every pod bound.

The hub's measurements are `perf.child_hub`, the pod scheduler's `perf.child_pods`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from controllers.cli.run import tune_gc
from perf._controller_hub import Shape
from perf.child_hub import core, core_run, fan_out_after_cold_start, mixed, mixed_serve
from perf.child_pods import pod_e2e, pod_engine, pod_memory, pod_preemption

__all__ = ["main"]


HUB = ("fan-out", "core", "mixed")
PODS = ("pod-engine", "pod-preemption", "pod-memory", "pod-e2e")


def main(argv: list[str] | None = None) -> int:
    """Run the measurement `argv` names and print its result as one JSON line."""
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["core-run"] and len(argv) == 2:  # the second half of `core`, internal
        tune_gc()
        print(json.dumps(core_run(Path(argv[1]))))
        return 0
    if argv[:1] == ["mixed-serve"]:  # the server half of `mixed --split`, internal
        tune_gc()
        serve = argparse.ArgumentParser()
        for name in ("--clusters", "--placements", "--workers", "--seed"):
            serve.add_argument(name, type=int, required=True)
        serve.add_argument("--wide", type=float, required=True)
        a = serve.parse_args(argv[1:])
        asyncio.run(mixed_serve(Shape(a.clusters, a.placements, a.workers), a.seed, a.wide))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m perf.child",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("what", choices=[*HUB, *PODS], help="the measurement to run")
    parser.add_argument("--clusters", type=int, help="fleet size (hub measurements)")
    parser.add_argument("--placements", type=int, help="number of placements (hub)")
    parser.add_argument("--nodes", type=int, help="number of nodes (pod measurements)")
    parser.add_argument(
        "--pods",
        type=int,
        help="pending pods (pod-engine, pod-e2e); running pods (pod-preemption); all (pod-memory)",
    )
    parser.add_argument("--per-node", type=int, default=4, help="running pods per node")
    parser.add_argument("--batch", type=int, default=500, help="pods per schedule() (pod-engine)")
    parser.add_argument("--rounds", type=int, default=20, help="preemptors (pod-preemption)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds (pod-e2e)")
    parser.add_argument("--seed", type=int, default=20261122, help="workload seed")
    parser.add_argument("--workers", type=int, default=4, help="controller workers")
    parser.add_argument(
        "--wide", type=float, default=0.0, help="share of wide placements (mixed; issue 20)"
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="serve the hub from a child process; the peak RSS is then the controller's alone "
        "(mixed)",
    )
    parser.add_argument("--profile", help="write cProfile stats of the cold start here (mixed)")
    args = parser.parse_args(argv)
    sized = ("clusters", "placements") if args.what in HUB else ("nodes", "pods")
    if any(getattr(args, name) is None or getattr(args, name) < 1 for name in sized):
        parser.error(f"--{sized[0]} and --{sized[1]} must be at least 1")
    tune_gc()
    out: dict[str, Any]
    if args.what == "core":
        out = core(args.clusters, args.placements, args.seed)
    elif args.what == "mixed":
        out = asyncio.run(
            mixed(
                args.clusters,
                args.placements,
                args.seed,
                args.workers,
                args.wide,
                args.split,
                args.profile,
            )
        )
    elif args.what == "fan-out":
        out = asyncio.run(
            fan_out_after_cold_start(Shape(args.clusters, args.placements, args.workers))
        )
    elif args.what == "pod-engine":
        out = pod_engine(args.nodes, args.pods, args.per_node, args.seed, args.batch)
    elif args.what == "pod-preemption":
        out = pod_preemption(args.nodes, max(1, args.pods // args.nodes), args.rounds)
    elif args.what == "pod-memory":
        out = pod_memory(args.nodes, args.pods, args.per_node, args.seed)
    else:
        out = asyncio.run(pod_e2e(args.nodes, args.pods, args.seed, args.timeout))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
