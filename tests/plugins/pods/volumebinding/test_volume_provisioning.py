"""VolumeBinding's dynamic provisioning on its own, as kube's volume binder decides it: a claim
without a fitting static volume is provisionable where its class has a provisioner, the node
matches the class's allowedTopologies and, when the CSI driver publishes its capacity, some
CSIStorageCapacity selecting the node holds the request; Reserve assumes the node, PreBind asks
for the selected-node write, a claim whose node was chosen goes there only."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.storage import CSIDriver, CSIStorageCapacity, StorageClass
from placement.pods.framework.events import BindVolumes, ObjectEvent
from plugins.pods.volumebinding.provisioning import assign
from plugins.pods.volumebinding.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    VolumeBinding,
)
from tests.plugins.pods.builders import everything, names, node, snapshot
from tests.plugins.pods.volume_builders import (
    HOST,
    Cluster,
    claim,
    cycle_on,
    local_pv,
    storage_class,
    with_claims,
)

ZONE = "topology.kubernetes.io/zone"
SELECTED = "volume.kubernetes.io/selected-node"
DRIVER = "disk.csi.example.com"
NODES = snapshot(
    [node(n, labels={HOST: n, ZONE: z}) for n, z in (("a", "z1"), ("b", "z1"), ("c", "z2"))]
)


def fast(*, zones: tuple[str, ...] = (), provisioner: str = DRIVER) -> StorageClass:
    wire: dict[str, Any] = {
        "metadata": {"name": "fast"},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    if zones:
        wire["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}
        ]
    return StorageClass.model_validate(wire)


def driver(storage_capacity: bool = True) -> CSIDriver:
    spec = {"storageCapacity": storage_capacity}
    return CSIDriver.model_validate({"metadata": {"name": DRIVER}, "spec": spec})


def capacity(name: str, zone: str, size: str, *, maximum: str | None = None) -> CSIStorageCapacity:
    wire: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": "fast",
        "nodeTopology": {"matchLabels": {ZONE: zone}},
        "capacity": size,
    }
    if maximum is not None:
        wire["maximumVolumeSize"] = maximum
    return CSIStorageCapacity.model_validate(wire)


def filtered(cluster: Cluster, *claims: str) -> tuple[list[str], dict[str, list[str]]]:
    plugin = VolumeBinding()
    cycle = cycle_on(cluster)
    info = with_claims("p", *claims)
    assert plugin.pre_filter(cycle, info, NODES).status.ok
    result = plugin.filter(cycle, info, NODES, everything(NODES))
    found = {r.message: names(NODES, r.rows) for r in result.all_reasons()}
    return names(NODES, result.mask), found


def test_a_class_with_a_provisioner_provisions_on_every_node() -> None:
    assert filtered(Cluster([fast(), claim("data", cls="fast")]), "data") == (["a", "b", "c"], {})


@pytest.mark.parametrize("provisioner", ["kubernetes.io/no-provisioner", ""])
def test_a_class_that_cannot_provision_finds_no_volume(provisioner: str) -> None:
    cluster = Cluster([fast(provisioner=provisioner), claim("data", cls="fast")])
    assert filtered(cluster, "data") == ([], {ERR_REASON_BIND_CONFLICT: ["a", "b", "c"]})


def test_allowed_topologies_limit_the_nodes() -> None:
    cluster = Cluster([fast(zones=("z2",)), claim("data", cls="fast")])
    assert filtered(cluster, "data") == (["c"], {ERR_REASON_BIND_CONFLICT: ["a", "b"]})


def test_published_capacity_must_hold_the_request_on_the_node() -> None:
    objects = [fast(), claim("data", cls="fast", size="10Gi"), driver()]
    objects += [capacity("z1", "z1", "5Gi"), capacity("z2", "z2", "50Gi")]
    assert filtered(Cluster(objects), "data") == (["c"], {ERR_REASON_NOT_ENOUGH_SPACE: ["a", "b"]})


def test_maximum_volume_size_wins_over_capacity() -> None:
    objects = [fast(), claim("data", cls="fast", size="10Gi"), driver()]
    objects += [
        capacity("z1", "z1", "50Gi", maximum="20Gi"),
        capacity("z2", "z2", "50Gi", maximum="8Gi"),
    ]
    assert filtered(Cluster(objects), "data") == (["a", "b"], {ERR_REASON_NOT_ENOUGH_SPACE: ["c"]})


def test_capacity_is_not_checked_unless_the_driver_publishes_it() -> None:
    objects = [fast(), claim("data", cls="fast", size="10Gi"), capacity("z1", "z1", "1Gi")]
    assert filtered(Cluster(objects), "data")[0] == ["a", "b", "c"]  # no CSIDriver
    objects.append(driver(storage_capacity=False))
    assert filtered(Cluster(objects), "data")[0] == ["a", "b", "c"]
    objects[-1] = driver()
    assert filtered(Cluster(objects), "data") == (
        [],
        {ERR_REASON_NOT_ENOUGH_SPACE: ["a", "b", "c"]},
    )


def test_topology_is_checked_before_capacity() -> None:
    objects = [fast(zones=("z1",)), claim("data", cls="fast", size="10Gi"), driver()]
    reasons = filtered(Cluster(objects), "data")[1]
    assert reasons == {ERR_REASON_BIND_CONFLICT: ["c"], ERR_REASON_NOT_ENOUGH_SPACE: ["a", "b"]}


def test_a_static_volume_is_used_before_provisioning_and_only_the_rest_is_provisioned() -> None:
    objects = [fast(zones=("z1",)), claim("x", cls="fast"), claim("y", cls="fast")]
    objects += [local_pv("c1", "c", cls="fast")]  # c: x static, y would need z1
    objects += [local_pv("a1", "a", cls="fast"), local_pv("a2", "a", cls="fast")]
    assert filtered(Cluster(objects), "x", "y") == (
        ["a", "b"],
        {ERR_REASON_BIND_CONFLICT: ["c"]},
    )


def test_reserve_assumes_the_node_and_prebind_asks_for_the_provisioning() -> None:
    cluster = Cluster([fast(), claim("data", cls="fast"), claim("other", cls="fast")])
    plugin = VolumeBinding()
    cycle = cycle_on(cluster)
    info = with_claims("p", "data")
    plugin.pre_filter(cycle, info, NODES)
    plugin.filter(cycle, info, NODES, everything(NODES))
    assert plugin.reserve(cycle, info, "b").ok
    (action,) = plugin.pre_bind(cycle, info, "b").actions
    assert action == BindVolumes(
        info.key, info.uid, "b", (), 600.0, (("default/data", "uid-data"),)
    )
    # A second pod of the same claim goes where its volume is being provisioned.
    second = with_claims("q", "data")
    later = cycle_on(cluster)
    plugin.pre_filter(later, second, NODES)
    result = plugin.filter(later, second, NODES, everything(NODES))
    assert names(NODES, result.mask) == ["b"]
    plugin.unreserve(cycle, info, "b")
    again = cycle_on(cluster)
    plugin.pre_filter(again, second, NODES)
    assert names(NODES, plugin.filter(again, second, NODES, everything(NODES)).mask) == [
        "a",
        "b",
        "c",
    ]


def test_a_claim_with_a_selected_node_is_provisioned_there_only() -> None:
    annotated = claim("data", cls="fast", annotations={"volume.kubernetes.io/selected-node": "c"})
    cluster = Cluster([fast(), annotated, local_pv("a1", "a", cls="fast")])
    assert filtered(cluster, "data") == (["c"], {ERR_REASON_BIND_CONFLICT: ["a", "b"]})
    plugin = VolumeBinding()
    assert plugin.on_event(ObjectEvent("Added", driver()), cluster)  # type: ignore[arg-type]  # capacity news requeue


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 4)), max_size=4),
    st.lists(
        st.tuples(st.integers(1, 6), st.sampled_from(["fast", "local"])), min_size=1, max_size=3
    ),
    st.sampled_from([(), ("z1",), ("z2",)]),
    st.lists(st.tuples(st.sampled_from(["z1", "z2"]), st.integers(1, 8)), max_size=2),
    st.sampled_from([None, "a", "c"]),
)
def test_filter_keeps_exactly_the_nodes_where_reserve_finds_an_assignment(
    static: list[tuple[str, int]],
    claims: list[tuple[int, str]],
    zones: tuple[str, ...],
    capacities: list[tuple[str, int]],
    selected: str | None,
) -> None:
    objects: list[Any] = [fast(zones=zones), storage_class(), driver()]
    objects += [capacity(f"cap{i}", z, f"{s}Gi") for i, (z, s) in enumerate(capacities)]
    objects += [local_pv(f"pv{i}", n, size=f"{s}Gi", cls="fast") for i, (n, s) in enumerate(static)]
    for i, (size, cls) in enumerate(claims):
        annotations = {SELECTED: selected} if selected and i == 0 else {}
        objects.append(claim(f"c{i}", cls=cls, size=f"{size}Gi", annotations=annotations))
    plugin = VolumeBinding()
    cycle = cycle_on(Cluster(objects))
    info = with_claims("p", *(f"c{i}" for i in range(len(claims))))
    assert plugin.pre_filter(cycle, info, NODES).status.ok
    result = plugin.filter(cycle, info, NODES, everything(NODES))
    for row, name in enumerate(NODES.names):
        state = cycle.scratch["VolumeBinding"]
        found = assign(state.unbound, row, name)
        assert bool(result.mask[row]) == (found is not None), name
        failed = [r.message for r in result.all_reasons() if r.rows[row]]
        assert len(failed) == (0 if found is not None else 1), (name, failed)
