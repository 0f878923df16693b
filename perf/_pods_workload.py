"""A seeded local cluster for the pod scheduler's scale scenarios (the pod scheduler's targets,
docs/performance.md, 'Targets'): nodes, pods already running on them, pending pods of mixed shapes,
and the PriorityClasses the pods name. Everything is built as the API objects the scheduler reads
(`apis.core`), so the same cluster feeds the engine directly (`Engine.handle`) and the embedded API
server (`create`).

The mix, per node: 70% on-demand, 30% spot (label `capacity=spot`, taint `spot=true:NoSchedule`),
three zones, 8 / 16 / 32 cpu with 4 GiB per cpu, 110 pods, 1% cordoned. Per pending pod: five
request shapes from 100m / 128Mi to 2 cpu / 4Gi (small ones commonest), 30% tolerate spot, 15%
select `capacity=on-demand`, 10% select a zone, 10% priority 100 and 4% priority 1,000 (the rest
0). Running pods (4 per node by default) belong to another scheduler and take 100m-1 cpu each:
usage the engine must count, never move. At 1,000 nodes or more every pending pod of a
10,000-pod run fits, so "all bound" is the expected end.

Pods are copies of a few validated templates with their own metadata: validating tens of
thousands of pod documents would dominate the set-up and is no part of what is measured.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from apis.core import Node, Pod
from apis.meta import ObjectMeta
from apis.registry import parse_as
from apis.scheduling import PriorityClass

__all__ = [
    "NAMESPACE",
    "OTHER_SCHEDULER",
    "SCHEDULER",
    "PodMaker",
    "Shape",
    "full_nodes",
    "nodes",
    "pending_pods",
    "priority_classes",
    "running_pods",
]

SCHEDULER = "ocm-pod-scheduler"
OTHER_SCHEDULER = "default-scheduler"  # running pods were placed by someone else
NAMESPACE = "bench"
ZONES = ("zone-a", "zone-b", "zone-c")
ZONE_LABEL = "topology.kubernetes.io/zone"
CPUS = (8, 16, 32)
PRIORITIES = {"": 0, "bench-high": 100, "bench-critical": 1_000}
SHAPES = (("100m", "128Mi"), ("250m", "256Mi"), ("500m", "512Mi"), ("1", "1Gi"), ("2", "4Gi"))
SHAPE_WEIGHTS = (30, 30, 20, 15, 5)


def _node(name: str, cpu: int, zone: str, *, spot: bool, cordoned: bool) -> Node:
    spec: dict[str, Any] = {}
    if spot:
        spec["taints"] = [{"key": "spot", "value": "true", "effect": "NoSchedule"}]
    if cordoned:
        spec["unschedulable"] = True
    amounts = {"cpu": str(cpu), "memory": f"{cpu * 4}Gi", "pods": "110"}
    return parse_as(
        Node,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    ZONE_LABEL: zone,
                    "capacity": "spot" if spot else "on-demand",
                },
            },
            "spec": spec,
            "status": {"allocatable": amounts, "capacity": amounts},
        },
    )


def nodes(count: int, seed: int) -> list[Node]:
    """`count` nodes named `node-00000`..., the seeded mix of the module docstring."""
    rng = random.Random(seed)
    return [
        _node(
            f"node-{i:05d}",
            rng.choice(CPUS),
            ZONES[i % len(ZONES)],
            spot=rng.random() < 0.3,
            cordoned=rng.random() < 0.01,
        )
        for i in range(count)
    ]


def full_nodes(count: int, cpu: int = 8) -> list[Node]:
    """`count` identical untainted nodes (the preemption scenario fills each of them)."""
    return [
        _node(f"node-{i:05d}", cpu, ZONES[i % len(ZONES)], spot=False, cordoned=False)
        for i in range(count)
    ]


def priority_classes() -> list[PriorityClass]:
    """The classes pending pods name (the API server's admission needs them to exist)."""
    return [
        parse_as(
            PriorityClass,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
        for name, value in PRIORITIES.items()
        if name
    ]


@dataclass(frozen=True)
class Shape:
    """What distinguishes one pod template from another."""

    cpu: str
    memory: str
    priority_class: str = ""
    priority: int | None = None  # without a class (running pods, whose priority is settled)
    scheduler: str = SCHEDULER
    tolerate_spot: bool = False
    selector: tuple[tuple[str, str], ...] = ()
    node: str | None = None  # set on a copy, not on the template


class PodMaker:
    """Pods as copies of one validated template per shape."""

    def __init__(self) -> None:
        self._templates: dict[Shape, Pod] = {}

    def template(self, shape: Shape) -> Pod:
        found = self._templates.get(shape)
        if found is not None:
            return found
        requests = {"cpu": shape.cpu, "memory": shape.memory}
        spec: dict[str, Any] = {
            "schedulerName": shape.scheduler,
            "containers": [{"name": "main", "image": "app", "resources": {"requests": requests}}],
        }
        if shape.priority_class:
            spec["priorityClassName"] = shape.priority_class
            spec["priority"] = PRIORITIES[shape.priority_class]
        elif shape.priority is not None:
            spec["priority"] = shape.priority
        if shape.tolerate_spot:
            spec["tolerations"] = [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
        if shape.selector:
            spec["nodeSelector"] = dict(shape.selector)
        doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"}, "spec": spec}
        found = self._templates[shape] = parse_as(Pod, doc)
        return found

    def make(self, name: str, shape: Shape, node: str | None = None) -> Pod:
        template = self.template(shape)
        update: dict[str, Any] = {
            "metadata": ObjectMeta(name=name, namespace=NAMESPACE, uid=f"uid-{name}")
        }
        if node is not None:
            update["spec"] = template.spec.model_copy(update={"node_name": node})
        return template.model_copy(update=update)


def _pending_shape(rng: random.Random) -> Shape:
    cpu, memory = rng.choices(SHAPES, SHAPE_WEIGHTS)[0]
    draw = rng.random()
    priority = "bench-critical" if draw < 0.04 else "bench-high" if draw < 0.14 else ""
    draw = rng.random()
    selector: tuple[tuple[str, str], ...] = ()
    if draw < 0.15:
        selector = (("capacity", "on-demand"),)
    elif draw < 0.25:
        selector = ((ZONE_LABEL, rng.choice(ZONES)),)
    return Shape(cpu, memory, priority, tolerate_spot=rng.random() < 0.3, selector=selector)


def pending_pods(count: int, seed: int, maker: PodMaker | None = None) -> Iterator[Pod]:
    """`count` pending pods `p-000000`... for our scheduler, of the seeded mixed shapes."""
    rng = random.Random(seed + 1)
    maker = maker or PodMaker()
    for i in range(count):
        yield maker.make(f"p-{i:06d}", _pending_shape(rng))


def running_pods(
    on: list[Node], per_node: int, seed: int, maker: PodMaker | None = None
) -> Iterator[Pod]:
    """`per_node` pods bound to each node by another scheduler, 100m to 1 cpu each."""
    rng = random.Random(seed + 2)
    maker = maker or PodMaker()
    for node in on:
        name = node.metadata.name
        for j in range(per_node):
            cpu, memory = rng.choice(SHAPES[:4])
            shape = Shape(cpu, memory, scheduler=OTHER_SCHEDULER)
            yield maker.make(f"r-{name}-{j}", shape, node=name)
