"""The nominator's added pods (`with_nominated(...).overlay.added`), kept node by node as
nominations come and go, against a walk over every nomination in the order kube's nominator
lists them (nodes in the order they got their first standing nomination, pods in order)."""

from __future__ import annotations

import random

import pytest

from placement.pods.backend.nominator import Nominator
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.interface import PodInfo
from tests.placement.pods.test_engine import World, make_node, make_pod

NODES = ("a", "b", "c", "d", "gone")  # "gone" is in no snapshot


def snapshot() -> NodeSnapshot:
    world = World.of()
    world.add_nodes(*(make_node(n) for n in NODES if n != "gone"))
    return world.engine.cache.snapshot()


def expected(
    order: dict[str, dict[str, PodInfo]], pod: PodInfo, nodes: NodeSnapshot
) -> tuple[tuple[int, PodInfo], ...]:
    out: list[tuple[int, PodInfo]] = []
    for node, pods in order.items():
        row = nodes.row_of(node)
        if row is None:
            continue
        out += [(row, p) for k, p in pods.items() if p.priority >= pod.priority and k != pod.key]
    return tuple(out)


@pytest.mark.parametrize("seed", range(25))
def test_added_pods_follow_every_nomination_in_order(seed: int) -> None:
    rng = random.Random(seed)
    nodes = snapshot()
    infos = [PodInfo.of(make_pod(f"p{i}", priority=rng.choice([0, 5, 10]))) for i in range(12)]
    nominator = Nominator()
    order: dict[str, dict[str, PodInfo]] = {}  # the reference: node -> key -> pod
    where: dict[str, str] = {}
    for _ in range(120):
        info = rng.choice(infos)
        if rng.random() < 0.6:
            node = rng.choice(NODES)
            nominator.nominate(info, node)
            old = where.pop(info.key, None)
            if old is not None:
                del order[old][info.key]
                if not order[old]:
                    del order[old]
            where[info.key] = node
            order.setdefault(node, {})[info.key] = info
        else:
            had = nominator.drop(info.key)
            assert had == (info.key in where)
            old = where.pop(info.key, None)
            if old is not None:
                del order[old][info.key]
                if not order[old]:
                    del order[old]
        for viewer in rng.sample(infos, 3):
            got = nominator.with_nominated(viewer, nodes).overlay.added
            assert tuple(got) == expected(order, viewer, nodes)
