"""The default pod plugin chain (every PreFilter, Filter and Score of DEFAULT_PLUGINS, the weighted
sum and the pick) for one pod at 5,000 nodes. The engine's target (docs/performance.md, 'Targets':
5,000 pods/s at 5,000 nodes) leaves it well under 200 us per pod.

Nodes: a seeded mix of on-demand and spot (tainted NoSchedule, and PreferNoSchedule on some),
three zones, a few cordoned, pods already running. The pod: cpu and memory requests, a
toleration of spot, a nodeSelector and a preferred zone. The snapshot is built outside the
timed part, as the engine keeps it per event. The plugins keep results per pod shape across
snapshots, so the same snapshot twice would measure only cache hits: the warm benchmark assumes
one pod between rounds, as the engine does between cycles (one changed row); the cold one
replaces a node first (every per-snapshot cache rebuilt). Run:
`pytest perf/test_pod_plugins_bench.py --benchmark-enable`.
"""

from __future__ import annotations

import random
from typing import Any, cast

import numpy as np
from pytest_benchmark.fixture import BenchmarkFixture

from apis.core import Node, Pod
from placement.pods.cluster.nodes import NodeSnapshot, NodeTable
from placement.pods.cluster.pod_index import PodIndex
from placement.pods.framework.interface import ClusterView, PodCycle, PodInfo, WaitingPods
from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS
from tests.plugins.pods.builders import NOW

SEED = 20260101
NODES = 5_000


def _nodes(count: int) -> list[Node]:
    rng = random.Random(SEED)
    out = []
    for i in range(count):
        spot = rng.random() < 0.3
        taints = [{"key": "spot", "value": "true", "effect": "NoSchedule"}] if spot else []
        if rng.random() < 0.1:
            taints.append({"key": "busy", "value": "", "effect": "PreferNoSchedule"})
        out.append(
            Node.model_validate(
                {
                    "metadata": {
                        "name": f"node-{i:05d}",
                        "labels": {
                            "zone": f"zone-{i % 3}",
                            "capacity": "spot" if spot else "on-demand",
                            "pool": "general",
                        },
                    },
                    "spec": {"taints": taints, "unschedulable": rng.random() < 0.01},
                    "status": {
                        "allocatable": {
                            "cpu": str(rng.choice((4, 8, 16))),
                            "memory": f"{rng.choice((16, 32, 64))}Gi",
                            "pods": 110,
                        }
                    },
                }
            )
        )
    return out


def _pod(name: str, cpu: str, memory: str, **spec: Any) -> PodInfo:
    body = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        **spec,
    }
    return PodInfo.of(
        Pod.model_validate({"metadata": {"name": name, "namespace": "bench"}, "spec": body})
    )


def _table() -> NodeTable:
    nodes = _nodes(NODES)
    rng = random.Random(SEED + 1)
    running = []
    for i in range(NODES * 4):
        p = _pod(f"r{i}", f"{rng.choice((100, 250, 500))}m", f"{rng.choice((256, 512))}Mi")
        running.append((p.key, f"node-{rng.randrange(NODES):05d}", p.requests, p.non_zero))
    return NodeTable.build(nodes, running)


ZONE_1 = {"key": "zone", "operator": "In", "values": ["zone-1"]}
POD = _pod(
    "web-0",
    "500m",
    "1Gi",
    nodeSelector={"pool": "general"},
    tolerations=[{"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
    affinity={
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {"matchExpressions": [ZONE_1]},
                }
            ]
        }
    },
)


class _Cluster:
    """What the default chain reads of the cluster: no counted pods, no watched objects."""

    counted = PodIndex()

    def objects(self, kind: str) -> dict[str, Any]:
        return {}


def _chain() -> Any:
    plugins: list[Any] = [POD_PLUGINS[name]({}) for name in DEFAULT_PLUGINS]
    pre = [p for p in plugins if hasattr(p, "pre_filter")]
    filters = [p for p in plugins if hasattr(p, "filter")]
    scores = [(p, DEFAULT_SCORE_WEIGHTS.get(p.name, 1)) for p in plugins if hasattr(p, "score")]

    def one(nodes: NodeSnapshot, pod: PodInfo) -> str:
        cycle = PodCycle(NOW, cast(ClusterView, _Cluster()), cast(WaitingPods, None))
        candidates = np.ones(nodes.size, dtype=bool)
        for plugin in pre:
            result = plugin.pre_filter(cycle, pod, nodes)
            if result.nodes is not None:
                candidates &= result.nodes
        for plugin in filters:
            candidates = plugin.filter(cycle, pod, nodes, candidates).mask
        rows = np.flatnonzero(candidates)
        total = np.zeros(len(rows), dtype=np.int64)
        for plugin, weight in scores:
            total += plugin.score(cycle, pod, nodes, rows) * weight
        return nodes.names[int(rows[int(np.argmax(total))])]

    return one


def test_default_chain_per_pod_at_5000_nodes(benchmark: BenchmarkFixture) -> None:
    """Warm: the previous round's pod assumed on a node, as between two engine cycles."""
    table = _table()
    one = _chain()
    one(table.snapshot(), POD)
    rounds = iter(range(10**6))

    def setup() -> tuple[tuple[NodeSnapshot, PodInfo], dict[str, Any]]:
        i = next(rounds)
        table.add_pod(f"bench/assumed-{i}", f"node-{(i * 7919) % NODES:05d}", POD.requests)
        return (table.snapshot(), POD), {}

    chosen = benchmark.pedantic(one, setup=setup, rounds=400, warmup_rounds=5)
    assert chosen.startswith("node-")


def test_default_chain_after_a_node_event_at_5000_nodes(benchmark: BenchmarkFixture) -> None:
    """Cold: a node replaced before each round, so every per-snapshot cache is rebuilt."""
    nodes = _nodes(NODES)
    table = _table()
    one = _chain()
    rounds = iter(range(10**6))

    def setup() -> tuple[tuple[NodeSnapshot, PodInfo], dict[str, Any]]:
        table.put_node(nodes[next(rounds) % NODES])
        return (table.snapshot(), POD), {}

    chosen = benchmark.pedantic(one, setup=setup, rounds=100, warmup_rounds=2)
    assert chosen.startswith("node-")
