"""Properties of a scheduling cycle over random small fleets (hypothesis)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.cluster import ManagedCluster
from apis.meta import KubeObject
from apis.placements import Placement
from placement.scheduler import rank
from placement.simulate import simulate
from placement.testing import (
    NOW,
    builtin,
    cluster,
    decision,
    global_set,
    placement,
    predicate,
    snapshot,
    taint,
    toleration,
)
from plugins import default_scheduler

FAST = settings(max_examples=100, deadline=None)
# ManagedCluster names are DNS-1123 labels: lower case, digits, "-" inside.
NAMES = st.from_regex(r"[ab1]([-ab1]{0,2}[ab1])?", fullmatch=True)


@st.composite
def clusters(draw: st.DrawFn) -> list[ManagedCluster]:
    names = draw(st.lists(NAMES, max_size=10, unique=True))
    out = []
    for name in names:
        effect = draw(st.sampled_from([None, "NoSelect", "NoSelectIfNew", "PreferNoSelect"]))
        out.append(
            cluster(
                name,
                labels={"env": draw(st.sampled_from(["prod", "dev"]))},
                cpu=draw(st.sampled_from([None, "1", "2", "8", "500m"])),
                taints=[taint("k", effect)] if effect else [],
            )
        )
    return out


@st.composite
def placements(draw: st.DrawFn) -> Placement:
    spec: dict[str, Any] = {}
    number = draw(st.one_of(st.none(), st.integers(0, 12)))
    if number is not None:
        spec["numberOfClusters"] = number
    if draw(st.booleans()):
        spec["predicates"] = [predicate({"env": draw(st.sampled_from(["prod", "dev"]))})]
    if draw(st.booleans()):
        spec["tolerations"] = [toleration("k", "Exists")]
    weight = draw(st.integers(-3, 3))
    spec["prioritizerPolicy"] = {"configurations": [builtin("ResourceAllocatableCPU", weight)]}
    return placement("apps", "web", **spec)


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[KubeObject], Placement]:
    fleet = draw(clusters())
    names = [c.name for c in fleet]
    objects: list[KubeObject] = [*fleet, *global_set("apps")]
    for owner in ("web", "other", "third"):
        chosen = draw(st.lists(st.sampled_from(names), max_size=5)) if names else []
        objects.append(decision("apps", owner, chosen))
    return objects, draw(placements())


@FAST
@given(worlds())
def test_selected_clusters_are_feasible_and_as_many_as_asked(
    world: tuple[list[KubeObject], Placement],
) -> None:
    objects, web = world
    fleet = snapshot(objects)
    result = default_scheduler().schedule(web, fleet, NOW)
    assert result.status.ok
    feasible = set(result.feasible.tolist())
    selected = result.selected.tolist()
    assert set(selected) <= feasible
    assert len(set(selected)) == len(selected)
    wanted = web.spec.number_of_clusters
    assert len(selected) == (len(feasible) if wanted is None else min(wanted, len(feasible)))
    # the selected are the best: no feasible cluster left out scores higher
    assert result.total is not None
    left_out = feasible - set(selected)
    if selected and left_out:
        assert min(result.total[selected]) >= max(result.total[list(left_out)])


@FAST
@given(worlds(), st.randoms(use_true_random=False))
def test_result_does_not_depend_on_the_input_order(
    world: tuple[list[KubeObject], Placement], rnd: Any
) -> None:
    objects, web = world
    shuffled = list(objects)
    rnd.shuffle(shuffled)
    scheduler = default_scheduler()
    first, second = snapshot(objects), snapshot(shuffled)
    a = scheduler.schedule(web, first, NOW)
    b = scheduler.schedule(web, second, NOW)
    assert first.rows_to_names(a.selected) == second.rows_to_names(b.selected)
    assert a.total is not None and b.total is not None
    assert a.total.tolist() == b.total.tolist()


@FAST
@given(worlds(), st.randoms(use_true_random=False))
def test_simulate_is_deterministic(world: tuple[list[KubeObject], Placement], rnd: Any) -> None:
    objects, web = world
    everything = [*objects, web, placement("apps", "other", numberOfClusters=2)]
    shuffled = list(everything)
    rnd.shuffle(shuffled)

    def wire(items: list[KubeObject]) -> list[dict[str, Any]]:
        out = []
        for item in simulate(items, default_scheduler(), NOW):
            out.append(item.placement.to_wire())
            out.extend(pd.to_wire() for pd in item.decisions)
        return out

    assert wire(everything) == wire(everything) == wire(shuffled)


@FAST
@given(
    st.lists(st.tuples(st.booleans(), st.integers(-3, 3)), max_size=30),
    st.one_of(st.none(), st.integers(0, 35)),
)
def test_rank_with_a_limit_is_the_prefix_of_the_full_ranking(
    rows: list[tuple[bool, int]], limit: int | None
) -> None:
    candidates = np.array([c for c, _ in rows], dtype=bool)
    total = np.array([t for _, t in rows], dtype=np.int64)
    full = rank(candidates, total).tolist()
    assert rank(candidates, total, limit).tolist() == (full if limit is None else full[:limit])
