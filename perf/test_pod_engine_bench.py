"""The pod engine without I/O: scheduling throughput and the time of one preemption decision (the
targets in docs/performance.md, 'Targets').

* Throughput: 5,000 nodes (the plugin benchmark's seeded mix of on-demand and spot, three zones,
  a few cordoned) with 20,000 pods already running, then 10,000 pending pods of mixed shapes
  through `Engine.schedule` with the default profile (every default plugin, DefaultPreemption
  included). Target: 5,000 pods/s.
* The same run asked in batches of 16 pods (as the controller does), and the initial sync of
  those 35,000 events through `Engine.handle_many`.
* Preemption: 5,000 nodes of 8 cpu, each full with 10 running pods of 800m at priorities 0..9
  (50,000 pods), and one pod of priority 1,000 asking for 2 cpu: one full scheduling cycle
  (filters fail everywhere, DefaultPreemption picks the node and the victims). Target: 50 ms.

With `--benchmark-disable` (CI) both run once at a small size as a smoke test. Run:
`pytest perf/test_pod_engine_bench.py --benchmark-enable`.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis.core import Node, Pod
from apis.meta import ObjectMeta
from perf.test_pod_plugins_bench import _nodes
from placement.pods.config.scheduler_config import build_profile, load_config
from placement.pods.framework.events import BindPod, ClusterEvent, DeletePod, NodeEvent, PodEvent
from placement.pods.scheduler.engine import Engine
from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS
from plugins.pods.defaultpreemption.default_preemption import DefaultPreemption

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCHEDULER = "ocm-pod-scheduler"
SEED = 20260102


def _profile() -> Any:
    registry = {"DefaultPreemption": DefaultPreemption.from_args, **POD_PLUGINS}
    defaults = (*(n for n in DEFAULT_PLUGINS if n != "DefaultPreemption"), "DefaultPreemption")
    return build_profile(
        load_config({"schedulerName": SCHEDULER}),
        registry,
        defaults=defaults,
        default_weights=DEFAULT_SCORE_WEIGHTS,
    )


class _Pods:
    """Pods from a few templates (validating 50,000 pod documents would dominate the setup)."""

    def __init__(self) -> None:
        self._templates: dict[tuple[Any, ...], Pod] = {}

    def make(
        self,
        name: str,
        cpu: str,
        memory: str,
        *,
        priority: int = 0,
        node: str | None = None,
        scheduler: str = SCHEDULER,
        tolerate_spot: bool = False,
    ) -> Pod:
        shape = (cpu, memory, priority, scheduler, tolerate_spot)
        template = self._templates.get(shape)
        if template is None:
            spec: dict[str, Any] = {
                "schedulerName": scheduler,
                "priority": priority,
                "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
                ],
            }
            if tolerate_spot:
                spec["tolerations"] = [{"key": "spot", "operator": "Exists"}]
            template = Pod.model_validate({"metadata": {"name": "t"}, "spec": spec})
            self._templates[shape] = template
        meta = ObjectMeta(name=name, namespace="bench", uid=f"uid-{name}")
        update: dict[str, Any] = {"metadata": meta}
        if node is not None:
            update["spec"] = template.spec.model_copy(update={"node_name": node})
        return template.model_copy(update=update)


def _sync_events(nodes: int, running: int, pending: int) -> list[ClusterEvent]:
    """The events of an initial list: nodes, running pods of another scheduler, pending pods."""
    events: list[ClusterEvent] = [NodeEvent("Added", node) for node in _nodes(nodes)]
    rng = random.Random(SEED)
    pods = _Pods()
    shapes = (("100m", "128Mi"), ("250m", "256Mi"), ("500m", "512Mi"), ("1", "1Gi"))
    for i in range(running):
        cpu, mem = rng.choice(shapes)
        where = f"node-{rng.randrange(nodes):05d}"
        pod = pods.make(f"r{i}", cpu, mem, node=where, scheduler="x")
        events.append(PodEvent("Added", pod))
    for i in range(pending):
        cpu, mem = rng.choice(shapes)
        pod = pods.make(f"p{i}", cpu, mem, priority=rng.choice((0, 10)), tolerate_spot=i % 3 == 0)
        events.append(PodEvent("Added", pod))
    return events


def _throughput_engine(nodes: int, running: int, pending: int) -> tuple[Engine, int]:
    engine = Engine(_profile())
    engine.handle_many(_sync_events(nodes, running, pending), T0)
    return engine, pending


def test_engine_throughput(benchmark: BenchmarkFixture, benchmarking: bool) -> None:
    sizes = (5_000, 20_000, 10_000) if benchmarking else (200, 400, 300)

    def setup() -> tuple[tuple[Engine], dict[str, Any]]:
        engine, _ = _throughput_engine(*sizes)
        return (engine,), {}

    def run(engine: Engine) -> int:
        return sum(isinstance(a, BindPod) for a in engine.schedule(T0))

    bound = benchmark.pedantic(run, setup=setup, rounds=1, iterations=1)
    pending = sizes[2]
    assert bound > pending * 0.9  # the cluster has room for (nearly) all of them
    stats = benchmark.stats.stats if benchmark.stats is not None else None
    if stats is not None and stats.mean:
        benchmark.extra_info["pods_per_second"] = round(pending / stats.mean)
    benchmark.extra_info.update(nodes=sizes[0], running=sizes[1], pending=pending)


def test_initial_sync(benchmark: BenchmarkFixture, benchmarking: bool) -> None:
    """The throughput setup's events through `Engine.handle_many` (a shell's initial list)."""
    sizes = (5_000, 20_000, 10_000) if benchmarking else (200, 400, 300)
    events = _sync_events(*sizes)

    def setup() -> tuple[tuple[Engine], dict[str, Any]]:
        return (Engine(_profile()),), {}

    def run(engine: Engine) -> Engine:
        engine.handle_many(events, T0)
        return engine

    engine = benchmark.pedantic(run, setup=setup, rounds=3, iterations=1)
    assert engine.nodes().size == sizes[0]
    assert engine.queue_sizes()["active"] == sizes[2]
    benchmark.extra_info.update(nodes=sizes[0], running=sizes[1], pending=sizes[2])


def test_engine_throughput_in_batches(benchmark: BenchmarkFixture, benchmarking: bool) -> None:
    """As the controller asks: `schedule(now, limit=16)` until the queue is empty (each call
    also flushes the queue and computes the next wake, which must not scan every pod)."""
    sizes = (5_000, 20_000, 10_000) if benchmarking else (200, 400, 300)

    def setup() -> tuple[tuple[Engine], dict[str, Any]]:
        engine, _ = _throughput_engine(*sizes)
        return (engine,), {}

    def run(engine: Engine) -> int:
        bound = 0
        while engine.queue_sizes()["active"]:
            bound += sum(isinstance(a, BindPod) for a in engine.schedule(T0, 16))
        return bound

    bound = benchmark.pedantic(run, setup=setup, rounds=1, iterations=1)
    assert bound > sizes[2] * 0.9
    stats = benchmark.stats.stats if benchmark.stats is not None else None
    if stats is not None and stats.mean:
        benchmark.extra_info["pods_per_second"] = round(sizes[2] / stats.mean)


def _full_cluster(nodes: int, per_node: int) -> Engine:
    engine = Engine(_profile())
    events: list[ClusterEvent] = []
    for i in range(nodes):
        node = Node.model_validate(
            {
                "metadata": {"name": f"node-{i:05d}", "labels": {"zone": f"zone-{i % 3}"}},
                "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": 110}},
            }
        )
        events.append(NodeEvent("Added", node))
    rng = random.Random(SEED)
    pods = _Pods()
    for i in range(nodes):
        for j in range(per_node):
            pod = pods.make(
                f"r{i}-{j}",
                "800m",
                "1Gi",
                priority=rng.randrange(10),
                node=f"node-{i:05d}",
                scheduler="x",
            )
            events.append(PodEvent("Added", pod))
    engine.handle_many(events, T0)
    return engine


@pytest.fixture(scope="module")
def full_cluster(benchmarking: bool) -> Engine:
    return _full_cluster(5_000 if benchmarking else 200, 10)


def test_preemption_decision(benchmark: BenchmarkFixture, full_cluster: Engine) -> None:
    engine = full_cluster
    pods = _Pods()
    preemptor = pods.make("vip", "2", "1Gi", priority=1_000)
    state = {"n": 0}

    def setup() -> tuple[tuple[()], dict[str, Any]]:
        # A fresh preemptor each round (the previous one and its nomination are forgotten).
        engine.handle(PodEvent("Deleted", preemptor), T0)
        engine.handle(PodEvent("Added", preemptor), T0)
        state["n"] += 1
        return (), {}

    def run() -> list[Any]:
        return engine.schedule(T0)

    actions = benchmark.pedantic(run, setup=setup, rounds=10, iterations=1)
    victims = [a for a in actions if isinstance(a, DeletePod)]
    nominated = engine.nominated().get("bench/vip")
    assert nominated is not None
    # Three 800m pods make room for 2 cpu; the first round deleted them, later rounds pick the
    # same node again (deletes already sent are not repeated).
    assert len(victims) in (0, 3)
    benchmark.extra_info.update(nodes=engine.nodes().size, running=10 * engine.nodes().size)
