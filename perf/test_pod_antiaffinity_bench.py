"""kube-scheduler's scheduler_perf `SchedulingPodAntiAffinity` shape through the pod engine
without I/O (InterPodAffinity is kube's hottest plugin at 5,000 nodes).

5,000 nodes labelled with their hostname; pods labelled `color: green` (and `name: test`), each
with one required anti-affinity term to `color: green` on `kubernetes.io/hostname` over the
namespaces `sched-0` and `sched-1`, as kube's template `pod-with-pod-anti-affinity.yaml`. kube's
workload: 1,000 such pods already running in `sched-0` (one per node), then 1,000 measured
pods in `sched-1`, each of which must land on a node without a green pod. The measured pods
are scheduled by `Engine.schedule` with the default profile (every default plugin); pods/s is
the measured count over the time. `--benchmark-enable` also measures 4,000 pods (4,000 of the
5,000 nodes end up holding a green pod: the filter's domains fill up). Run:
`pytest perf/test_pod_antiaffinity_bench.py --benchmark-enable`.

With `--benchmark-disable` (CI) it runs once at a small size as a smoke test that every pod
lands alone on its node.
"""

from __future__ import annotations

from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis.core import Node, Pod
from apis.meta import ObjectMeta
from perf.test_pod_engine_bench import SCHEDULER, T0, _profile
from placement.pods.framework.events import BindPod, ClusterEvent, NodeEvent, PodEvent
from placement.pods.scheduler.engine import Engine

HOST = "kubernetes.io/hostname"
LABELS = {"color": "green", "name": "test"}


def _template(scheduler: str) -> Pod:
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": HOST,
        "namespaces": ["sched-1", "sched-0"],
    }
    return Pod.model_validate(
        {
            "metadata": {"name": "t"},
            "spec": {
                "schedulerName": scheduler,
                "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}
                ],
                "affinity": {
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
                },
            },
        }
    )


def _pod(template: Pod, name: str, namespace: str, node: str | None = None) -> Pod:
    meta = ObjectMeta(name=name, namespace=namespace, uid=f"uid-{namespace}-{name}", labels=LABELS)
    update: dict[str, Any] = {"metadata": meta}
    if node is not None:
        update["spec"] = template.spec.model_copy(update={"node_name": node})
    return template.model_copy(update=update)


def _node(i: int) -> Node:
    name = f"node-{i:05d}"
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": {HOST: name}},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": 110}},
        }
    )


def anti_affinity_engine(nodes: int, running: int, pending: int) -> Engine:
    """The nodes, `running` green pods bound one per node in sched-0, `pending` green pods of
    the scheduler in sched-1."""
    events: list[ClusterEvent] = [NodeEvent("Added", _node(i)) for i in range(nodes)]
    bound, waiting = _template("other"), _template(SCHEDULER)
    stride = max(1, nodes // max(1, running))
    for i in range(running):
        node = f"node-{(i * stride) % nodes:05d}"
        events.append(PodEvent("Added", _pod(bound, f"init-{i}", "sched-0", node)))
    events.extend(PodEvent("Added", _pod(waiting, f"m-{i}", "sched-1")) for i in range(pending))
    engine = Engine(_profile())
    engine.handle_many(events, T0)
    return engine


@pytest.mark.parametrize("measured", [1_000, pytest.param(4_000, marks=pytest.mark.largest)])
def test_scheduling_pod_anti_affinity(
    benchmark: BenchmarkFixture, benchmarking: bool, measured: int
) -> None:
    if not benchmarking and measured > 1_000:
        pytest.skip("largest size: measured only with --benchmark-enable")
    sizes = (5_000, 1_000, measured) if benchmarking else (60, 20, 30)

    def setup() -> tuple[tuple[Engine], dict[str, Any]]:
        return (anti_affinity_engine(*sizes),), {}

    placed: dict[str, str] = {}

    def run(engine: Engine) -> int:
        actions = engine.schedule(T0)
        placed.clear()
        placed.update((a.key, a.node) for a in actions if isinstance(a, BindPod))
        return len(placed)

    bound = benchmark.pedantic(run, setup=setup, rounds=1, iterations=1)
    nodes, running, pending = sizes
    assert bound == pending  # room for every one of them
    taken = {f"node-{(i * max(1, nodes // running)) % nodes:05d}" for i in range(running)}
    assert len(set(placed.values())) == pending  # one per node
    assert not taken & set(placed.values())  # and never beside an initial green pod
    stats = benchmark.stats.stats if benchmark.stats is not None else None
    if stats is not None and stats.mean:
        benchmark.extra_info["pods_per_second"] = round(pending / stats.mean)
    benchmark.extra_info.update(nodes=nodes, running=running, pending=pending)
