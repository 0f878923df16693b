"""The pod engine on kube scheduler_perf's `TopologySpreading` shape: 5,000 nodes in three zones
(`topology.kubernetes.io/zone`), 1,000 pods already running, then pending pods with one zone
spread constraint (DoNotSchedule, maxSkew 1, the same labels) through `Engine.schedule` with
the default profile. kube's threshold for the required variant at 5,000 nodes is 460 pods/s.

Every cycle counts the matching pods per zone: `MatchCounts` follows the pod index's changes,
so the cost per pod stays flat as pods bind. With `--benchmark-disable` (CI) it runs once at a
small size as a smoke test. Run: `pytest perf/test_pod_spread_bench.py --benchmark-enable`.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from pytest_benchmark.fixture import BenchmarkFixture

from apis.core import Node, Pod
from apis.meta import ObjectMeta
from perf.test_pod_engine_bench import _profile
from placement.pods.framework.events import BindPod, ClusterEvent, NodeEvent, PodEvent
from placement.pods.scheduler.engine import Engine

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ZONE = "topology.kubernetes.io/zone"
LABELS = {"app": "spread"}


def _node(i: int) -> Node:
    return Node.model_validate(
        {
            "metadata": {
                "name": f"node-{i:05d}",
                "labels": {ZONE: f"moon-{i % 3}", "kubernetes.io/hostname": f"node-{i:05d}"},
            },
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": 110}},
        }
    )


def _template(scheduler: str) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": "t", "labels": LABELS},
            "spec": {
                "schedulerName": scheduler,
                "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}
                ],
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": LABELS},
                    }
                ],
            },
        }
    )


def _events(nodes: int, running: int, pending: int) -> list[ClusterEvent]:
    events: list[ClusterEvent] = [NodeEvent("Added", _node(i)) for i in range(nodes)]
    mine, other = _template("ocm-pod-scheduler"), _template("x")
    for i in range(running):
        meta = ObjectMeta(name=f"r{i}", namespace="bench", uid=f"uid-r{i}", labels=LABELS)
        spec = other.spec.model_copy(update={"node_name": f"node-{(i * 7) % nodes:05d}"})
        events.append(PodEvent("Added", other.model_copy(update={"metadata": meta, "spec": spec})))
    for i in range(pending):
        meta = ObjectMeta(name=f"p{i}", namespace="bench", uid=f"uid-p{i}", labels=LABELS)
        events.append(PodEvent("Added", mine.model_copy(update={"metadata": meta})))
    return events


def test_topology_spreading_throughput(benchmark: BenchmarkFixture, benchmarking: bool) -> None:
    sizes = (5_000, 1_000, 10_000) if benchmarking else (60, 30, 90)

    def setup() -> tuple[tuple[Engine], dict[str, Any]]:
        engine = Engine(_profile())
        engine.handle_many(_events(*sizes), T0)
        return (engine,), {}

    placed: dict[str, str] = {}

    def run(engine: Engine) -> int:
        binds = [a for a in engine.schedule(T0) if isinstance(a, BindPod)]
        placed.update({a.key: a.node for a in binds})
        return len(binds)

    bound = benchmark.pedantic(run, setup=setup, rounds=1, iterations=1)
    nodes, _, pending = sizes
    assert bound == pending
    zones = Counter(int(node.rsplit("-", 1)[1]) % 3 for node in placed.values())
    assert max(zones.values()) - min(zones.values()) <= 1  # the running pods are spread too
    stats = benchmark.stats.stats if benchmark.stats is not None else None
    if stats is not None and stats.mean:
        benchmark.extra_info["pods_per_second"] = round(pending / stats.mean)
    benchmark.extra_info.update(nodes=nodes, running=sizes[1], pending=pending)
