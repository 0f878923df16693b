"""Properties of InterPodAffinity through the engine: random pods with anti-affinity on the
hostname or the zone never share a domain with a pod they (or it) repel, and a pod left pending
conflicts on every node; an anti-affine gang is placed one member per node or not at all."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apis.core import Pod
from plugins.pods.coscheduling.coscheduling import POD_GROUP_LABEL
from tests.placement.pods.test_engine import T0, World
from tests.placement.pods.test_gang import add_group, pod_group
from tests.plugins.pods.affinity_harness import HOST, ZONE, apod, hnode, placed, term, world

COLORS = ("red", "green", "blue")

pod_shapes = st.lists(
    st.tuples(
        st.sampled_from(COLORS),  # the pod's own color label
        st.lists(st.sampled_from(COLORS), max_size=2, unique=True),  # colors it repels
        st.sampled_from((HOST, ZONE)),  # the domain it repels them from
    ),
    min_size=1,
    max_size=10,
)


def zone_of(node: str) -> str:
    return f"z{int(node[1:]) % 2}"


def conflicts(a: Pod, node_a: str, b: Pod, node_b: str) -> bool:
    """One of the two, on those nodes, has a required anti-affinity term selecting the
    other's color in a domain they share (own namespace)."""

    def repels(x: Pod, y: Pod) -> bool:
        anti = x.spec.affinity.pod_anti_affinity if x.spec.affinity else None
        terms = (anti.required_during_scheduling_ignored_during_execution or []) if anti else []
        color = (y.metadata.labels or {}).get("color")
        for t in terms:
            assert t.label_selector is not None
            same = (
                node_a == node_b if t.topology_key == HOST else zone_of(node_a) == zone_of(node_b)
            )
            if same and (t.label_selector.match_labels or {}).get("color") == color:
                return True
        return False

    return repels(a, b) or repels(b, a)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=pod_shapes, node_count=st.integers(min_value=1, max_value=4))
def test_anti_affine_pods_never_share_a_domain_and_pending_ones_conflict_everywhere(
    shapes: list[tuple[str, list[str], str]], node_count: int
) -> None:
    w = world(*(hnode(f"n{i}", zone_of(f"n{i}")) for i in range(node_count)))
    pods = [
        apod(f"p{i}", {"color": color}, anti=[term({"color": c}, key) for c in repelled])
        for i, (color, repelled, key) in enumerate(shapes)
    ]
    w.add_pods(*pods)
    w.run(until=T0 + timedelta(minutes=1), steps=200)
    where = placed(w)
    by_name = {p.metadata.name: p for p in pods}
    bound = [(by_name[n], node) for n, node in where.items() if node is not None]
    for i, (a, node_a) in enumerate(bound):
        for b, node_b in bound[i + 1 :]:
            assert not conflicts(a, node_a, b, node_b), (a.metadata.name, b.metadata.name)
    # Nothing is left pending that could have run (plenty of cpu on every node).
    for name, node in where.items():
        if node is None:
            for i in range(node_count):
                here = f"n{i}"
                blocked = any(conflicts(by_name[name], here, p, n) for p, n in bound)
                assert blocked, (name, here)


def anti_gang(group: str, size: int) -> list[Pod]:
    out = []
    for i in range(size):
        pod = apod(
            f"{group}-{i}", {"app": group, POD_GROUP_LABEL: group}, anti=[term({"app": group})]
        )
        out.append(pod)
    return out


def run_gang(nodes: int, size: int) -> dict[str, Any]:
    w: World = world(*(hnode(f"n{i}") for i in range(nodes)))
    add_group(w, pod_group("g", size, timeout=10))
    w.add_pods(*anti_gang("g", size))
    w.run(until=T0 + timedelta(seconds=30), steps=200)
    return placed(w)


def test_an_anti_affine_gang_goes_one_member_per_node() -> None:
    where = run_gang(nodes=4, size=3)
    assert all(where.values())
    assert len(set(where.values())) == 3


def test_an_anti_affine_gang_larger_than_the_nodes_is_not_placed_at_all() -> None:
    where = run_gang(nodes=3, size=4)
    assert where == {f"g-{i}": None for i in range(4)}
