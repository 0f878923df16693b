"""VolumeBinding on its own: kube's reasons per node, WaitForFirstConsumer volumes found per
node, assumed at Reserve, bound by PreBind's action, never given twice."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.pods.cluster.volumes import static_match, volume_capacity
from placement.pods.framework.events import BindVolumes
from placement.pods.framework.interface import PodCode
from plugins.pods.volumebinding.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
    VolumeBinding,
)
from plugins.pods.volumebinding.volume_index import Pool
from tests.plugins.pods.builders import everything, names, node, pod, snapshot
from tests.plugins.pods.volume_builders import (
    HOST,
    Cluster,
    claim,
    cycle_on,
    local_pv,
    storage_class,
    with_claims,
)

NODES = snapshot([node(n, labels={HOST: n}) for n in ("a", "b", "c")])


def reasons(result: object) -> dict[str, list[str]]:
    return {
        r.message: names(NODES, r.rows)
        for r in result.all_reasons()  # type: ignore[attr-defined]
    }


def run(cluster: Cluster, info: object) -> tuple[VolumeBinding, object, object]:
    plugin = VolumeBinding()
    cycle = cycle_on(cluster)
    pre = plugin.pre_filter(cycle, info, NODES)  # type: ignore[arg-type]
    assert pre.status.ok, pre.status.message
    return plugin, cycle, plugin.filter(cycle, info, NODES, everything(NODES))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("objects", "info", "message"),
    [
        ([], with_claims("p", "data"), 'persistentvolumeclaim "data" not found'),
        (
            [],
            pod("p", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]),
            "waiting for ephemeral volume controller to create the persistentvolumeclaim"
            ' "p-scratch"',
        ),
        (
            [claim("data", cls="fast"), storage_class("fast", mode="Immediate")],
            with_claims("p", "data"),
            ERR_UNBOUND_IMMEDIATE,
        ),
        ([claim("data", cls="gone")], with_claims("p", "data"), ERR_UNBOUND_IMMEDIATE),
        ([claim("data", cls=None)], with_claims("p", "data"), ERR_UNBOUND_IMMEDIATE),
    ],
    ids=["missing", "ephemeral-missing", "immediate", "class-missing", "no-class"],
)
def test_pre_filter_refuses_unusable_claims_unresolvably(
    objects: list[object], info: object, message: str
) -> None:
    status = VolumeBinding().pre_filter(cycle_on(Cluster(objects)), info, NODES).status  # type: ignore[arg-type]
    assert status.code == PodCode.UNRESOLVABLE
    assert status.message == message


def test_pods_without_claims_skip() -> None:
    info = pod("p", volumes=[{"name": "cfg", "configMap": {"name": "c"}}])
    assert (
        VolumeBinding().pre_filter(cycle_on(Cluster([])), info, NODES).status.code == PodCode.SKIP
    )


def test_a_bound_claim_keeps_the_pod_where_its_volume_is() -> None:
    cluster = Cluster(
        [claim("data", volume="pv-b"), local_pv("pv-b", "b", claim_ref="default/data")]
    )
    _, _, result = run(cluster, with_claims("p", "data"))
    assert names(NODES, result.mask) == ["b"]  # type: ignore[attr-defined]
    assert reasons(result) == {ERR_REASON_NODE_CONFLICT: ["a", "c"]}
    assert not any(r.resolvable for r in result.all_reasons())  # type: ignore[attr-defined]


def test_a_claim_bound_to_a_missing_volume_fits_nowhere() -> None:
    _, _, result = run(Cluster([claim("data", volume="gone")]), with_claims("p", "data"))
    assert not result.mask.any()  # type: ignore[attr-defined]
    assert reasons(result) == {ERR_REASON_PV_NOT_EXIST: ["a", "b", "c"]}


def test_wait_for_first_consumer_finds_an_available_volume_per_node() -> None:
    cluster = Cluster(
        [
            storage_class(),
            claim("data", size="5Gi"),
            local_pv("pv-a-small", "a", size="1Gi"),  # too small
            local_pv("pv-b", "b", size="10Gi"),
            local_pv("pv-c", "c", size="10Gi", claim_ref="default/other"),  # taken
            local_pv("pv-c-rox", "c", size="10Gi", modes=("ReadOnlyMany",)),  # wrong mode
            local_pv("pv-c-slow", "c", size="10Gi", cls="slow"),  # other class
        ]
    )
    _, _, result = run(cluster, with_claims("p", "data"))
    assert names(NODES, result.mask) == ["b"]  # type: ignore[attr-defined]
    assert reasons(result) == {ERR_REASON_BIND_CONFLICT: ["a", "c"]}


def test_reserve_takes_the_smallest_fitting_volume_and_prebind_binds_it() -> None:
    cluster = Cluster(
        [
            storage_class(),
            claim("data", size="2Gi"),
            local_pv("big", "a", size="9Gi"),
            local_pv("fit", "a", size="3Gi"),
        ]
    )
    info = with_claims("p", "data")
    plugin, cycle, _ = run(cluster, info)
    assert plugin.reserve(cycle, info, "a").ok  # type: ignore[arg-type]
    assert plugin.assumed() == {"fit": "default/data"}
    bound = plugin.pre_bind(cycle, info, "a")  # type: ignore[arg-type]
    assert bound.actions == (
        BindVolumes(info.key, info.uid, "a", (("default/data", "uid-data", "fit"),)),
    )


def test_an_assumed_volume_is_not_offered_to_another_claim_until_unreserved() -> None:
    cluster = Cluster([storage_class(), claim("one"), claim("two"), local_pv("only", "a")])
    first, second = with_claims("p1", "one"), with_claims("p2", "two")
    plugin = VolumeBinding()
    cycle = cycle_on(cluster)
    plugin.pre_filter(cycle, first, NODES)
    plugin.filter(cycle, first, NODES, everything(NODES))
    assert plugin.reserve(cycle, first, "a").ok
    later = cycle_on(cluster)
    plugin.pre_filter(later, second, NODES)
    assert not plugin.filter(later, second, NODES, everything(NODES)).mask.any()
    plugin.unreserve(cycle, first, "a")
    again = cycle_on(cluster)
    plugin.pre_filter(again, second, NODES)
    assert names(NODES, plugin.filter(again, second, NODES, everything(NODES)).mask) == ["a"]


def test_a_pod_with_two_claims_needs_two_volumes_on_the_node() -> None:
    cluster = Cluster(
        [
            storage_class(),
            claim("x"),
            claim("y"),
            local_pv("a1", "a"),
            local_pv("b1", "b"),
            local_pv("b2", "b"),
        ]
    )
    plugin, cycle, result = run(cluster, with_claims("p", "x", "y"))
    assert names(NODES, result.mask) == ["b"]  # type: ignore[attr-defined]
    assert reasons(result) == {ERR_REASON_BIND_CONFLICT: ["a", "c"]}
    assert plugin.reserve(cycle, with_claims("p", "x", "y"), "b").ok  # type: ignore[arg-type]
    assert sorted(plugin.assumed()) == ["b1", "b2"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 4)), max_size=6),
    st.lists(st.integers(1, 4), min_size=1, max_size=5),
)
def test_pods_reserved_one_after_another_never_share_a_volume(
    volumes: list[tuple[str, int]], sizes: list[int]
) -> None:
    objects: list[object] = [storage_class()]
    objects += [local_pv(f"pv{i}", n, size=f"{s}Gi") for i, (n, s) in enumerate(volumes)]
    objects += [claim(f"c{i}", size=f"{s}Gi") for i, s in enumerate(sizes)]
    cluster = Cluster(objects)  # type: ignore[arg-type]
    plugin = VolumeBinding()
    taken: dict[str, str] = {}
    for i, size in enumerate(sizes):
        info = with_claims(f"p{i}", f"c{i}")
        cycle = cycle_on(cluster)
        plugin.pre_filter(cycle, info, NODES)
        fits = plugin.filter(cycle, info, NODES, everything(NODES)).mask
        free = {n for j, (n, s) in enumerate(volumes) if s >= size and f"pv{j}" not in taken}
        assert set(names(NODES, fits)) == free
        if fits.any():
            assert plugin.reserve(cycle, info, NODES.names[int(np.flatnonzero(fits)[0])]).ok
            new = set(plugin.assumed()) - set(taken)
            assert len(new) == 1
            taken[new.pop()] = info.key
    assert len(set(plugin.assumed())) == len(taken)


def test_capacity_scoring_follows_the_shape_only_when_configured() -> None:
    cluster = Cluster(
        [
            storage_class(),
            storage_class("other"),
            claim("data", size="5Gi"),
            claim("logs", size="1Gi", cls="other"),
            local_pv("a-data", "a", size="10Gi"),
            local_pv("a-logs", "a", size="3Gi", cls="other"),
            local_pv("b-data", "b", size="5Gi"),
            local_pv("b-logs", "b", size="4Gi", cls="other"),
        ]
    )
    info = with_claims("p", "data", "logs")
    rows = np.array([0, 1], dtype=np.intp)
    shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    packing = VolumeBinding.from_args({"shape": shape})
    cycle = cycle_on(cluster)
    packing.pre_filter(cycle, info, NODES)
    # a: data 50%, logs 33% -> (50 + 33) / 2 = 41.5 -> 42 (Go's round); b: 100%, 25% -> 62.5 -> 63
    assert packing.score(cycle, info, NODES, rows).tolist() == [42, 63]
    plain = VolumeBinding()
    cycle = cycle_on(cluster)
    plain.pre_filter(cycle, info, NODES)
    assert plain.score(cycle, info, NODES, rows).tolist() == [0, 0]


def test_a_shape_must_be_sorted() -> None:
    with pytest.raises(ValueError, match="sorted in increasing order"):
        VolumeBinding.from_args({"shape": [{"utilization": 50}, {"utilization": 10}]})


MODES = [("ReadWriteOnce",), ("ReadWriteOnce", "ReadOnlyMany"), ("ReadOnlyMany",)]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 6),  # capacity, Gi
            st.sampled_from(
                [("ReadWriteOnce",), ("ReadWriteOnce", "ReadOnlyMany"), ("ReadOnlyMany",)]
            ),
            st.booleans(),  # labelled fast
        ),
        max_size=8,
    ),
    st.integers(1, 6),
    st.sampled_from(MODES),
    st.booleans(),  # the claim selects fast volumes
)
def test_the_index_finds_what_the_static_match_would(
    specs: list[tuple[int, tuple[str, ...], bool]],
    request: int,
    modes: tuple[str, ...],
    select: bool,
) -> None:
    volumes = [
        local_pv(f"pv{i}", "a", size=f"{size}Gi", modes=m, labels={"speed": "fast"} if fast else {})
        for i, (size, m, fast) in enumerate(specs)
    ]
    extra = {"selector": {"matchLabels": {"speed": "fast"}}} if select else {}
    wanted = claim("data", size=f"{request}Gi", modes=modes)
    if extra:
        wanted = type(wanted).model_validate(
            {**wanted.to_wire(), "spec": {**wanted.to_wire()["spec"], **extra}}
        )
    pool = Pool(volumes)
    found = [pool.volumes[i].name for i in pool.matching(wanted, excluded={"pv0"})]
    expected = sorted(
        (v for v in volumes if v.name != "pv0" and static_match(v, wanted)),
        key=lambda v: (volume_capacity(v), v.name),
    )
    assert found == [v.name for v in expected]
