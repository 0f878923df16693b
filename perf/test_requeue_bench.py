"""Pods kept out by node affinity alone while running pods finish (issue 29, the requeue hints
of the default plugins). P pending pods ask for `disk: ssd`, which no node has; R running pods
finish one a second, each freeing room. kube registers NodeAffinity for node events only, so
freed room moves none of them (they come back at the 5-minute flush); a NodeAffinity that
listened to freed room, as ours did before, moves all P pods on every finish: P x R attempts.

The benchmark times the engine over the finishes at a small size and checks the attempts. The
figure in perf/RESULTS.md:

    python -m perf.test_requeue_bench --nodes 1000 --running 2000 --pending 500

prints one JSON line per variant (attempts, CPU seconds), alternated twice.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import timedelta
from typing import Any

from pytest_benchmark.fixture import BenchmarkFixture

from placement.pods.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD_OR_UPDATE,
    NodeEvent,
    PodEvent,
)
from placement.pods.scheduler.engine import Engine
from tests.placement.pods.test_engine import T0, default_profile, make_node, make_pod

FLUSH = timedelta(minutes=5)


def churn(nodes: int, running: int, pending: int, *, listens: bool = False) -> dict[str, Any]:
    """The engine after the pods were tried once: the attempts and CPU seconds the R finishes
    cost (`listens`: NodeAffinity also listens to freed room)."""
    profile = default_profile()
    if listens:
        for plugin in profile.filters:
            if plugin.name == "NodeAffinity":
                plugin.requeue_on = frozenset({ASSIGNED_POD_DELETE, NODE_ADD_OR_UPDATE})  # type: ignore[attr-defined]
    engine = Engine(profile)
    engine.handle_many([NodeEvent("Added", make_node(f"n{i}")) for i in range(nodes)], T0)
    pods = [make_pod(f"r{i}", 1, node=f"n{i % nodes}") for i in range(running)]
    engine.handle_many([PodEvent("Added", p) for p in pods], T0)
    ssd = {"disk": "ssd"}
    waiting = [make_pod(f"p{i}", 1, nodeSelector=ssd) for i in range(pending)]
    engine.handle_many([PodEvent("Added", p) for p in waiting], T0)
    engine.schedule(T0)
    before = engine.stats.cycles
    began = time.process_time()
    for i, pod in enumerate(pods):
        now = T0 + timedelta(seconds=11 + i)  # past every backoff: a moved pod is tried
        engine.handle(PodEvent("Deleted", pod), now)
        engine.schedule(now)
    return {
        "listens": listens,
        "attempts": engine.stats.cycles - before,
        "flushes": (running + 10) // int(FLUSH.total_seconds()),
        "cpu_s": round(time.process_time() - began, 3),
    }


def test_freed_room_leaves_pods_kept_out_by_node_affinity(benchmark: BenchmarkFixture) -> None:
    out = benchmark(churn, 20, 100, 30)
    assert out["flushes"] == 0 and out["attempts"] == 0
    assert churn(20, 100, 30, listens=True)["attempts"] == 30 * 100


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.test_requeue_bench", description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--running", type=int, default=2000)
    parser.add_argument("--pending", type=int, default=500)
    args = parser.parse_args(argv)
    for listens in (True, False, True, False):
        print(json.dumps(churn(args.nodes, args.running, args.pending, listens=listens)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
