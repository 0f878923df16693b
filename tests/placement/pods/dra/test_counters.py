"""Partitionable devices in the DRA allocator (kube-scheduler v1.36, DRAPartitionableDevices
beta and on): kubernetes.io's documented example (two devices of 6Gi from a counter set of
8Gi), a MIG-like GPU (the whole device, two halves and eight 1g slices over eight memory-slice
counters), counters used by devices in use anywhere in the pool, backtracking, and the pools
kube's allocator finds invalid or incomplete."""

from __future__ import annotations

from typing import Any

import pytest

from apis.resource import ResourceSlice
from placement.pods.dra import AllocationError, DeviceKey
from tests.placement.pods.dra.world import (
    allocator,
    claim,
    device_class,
    everywhere,
    exactly,
    first,
    node,
    results,
    snapshot,
)

DOC_DRIVER = "dra.example.com"
GPU_DRIVER = "gpu.example.com"


def counter_slice(
    name: str,
    sets: dict[str, dict[str, str]],
    *,
    driver: str = DOC_DRIVER,
    pool: str = "pool",
    count: int = 2,
    generation: int = 1,
    **reach: Any,
) -> ResourceSlice:
    return ResourceSlice.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "driver": driver,
                "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
                **(reach or {"nodeName": "worker-1"}),
                "sharedCounters": [
                    {"name": s, "counters": {c: {"value": v} for c, v in counters.items()}}
                    for s, counters in sets.items()
                ],
            },
        }
    )


def device_slice(
    name: str,
    devices: list[dict[str, Any]],
    *,
    driver: str = DOC_DRIVER,
    pool: str = "pool",
    count: int = 2,
    generation: int = 1,
    **reach: Any,
) -> ResourceSlice:
    return ResourceSlice.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "driver": driver,
                "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
                **(reach or {"nodeName": "worker-1"}),
                "devices": devices,
            },
        }
    )


def consuming(name: str, counter_set: str, **counters: str | int) -> dict[str, Any]:
    return {
        "name": name,
        "consumesCounters": [
            {"counterSet": counter_set, "counters": {c: {"value": v} for c, v in counters.items()}}
        ],
    }


# --- kubernetes.io, DRA features, "Partitionable devices" ---------------------------------

DOC_CLASS = device_class("example", f'device.driver == "{DOC_DRIVER}"')


def documented() -> list[ResourceSlice]:
    return [
        counter_slice("resourceslice-with-countersets", {"gpu-1-counters": {"memory": "8Gi"}}),
        device_slice(
            "resourceslice-with-devices",
            [
                consuming("device-1", "gpu-1-counters", memory="6Gi"),
                consuming("device-2", "gpu-1-counters", memory="6Gi"),
            ],
        ),
    ]


def test_documented_example_allocates_one_device_of_the_two() -> None:
    alloc = allocator(documented(), [DOC_CLASS])
    prepared = alloc.prepare([claim("one", exactly("gpu", "example"))])
    assert results(first(alloc.allocate(prepared, "worker-1", {}, set()))) == [("gpu", "device-1")]


def test_documented_example_never_allocates_both_devices() -> None:
    alloc = allocator(documented(), [DOC_CLASS])
    nodes = snapshot([node("worker-1")])
    both = alloc.prepare([claim("both", exactly("gpu", "example", count=2))])
    assert alloc.allocate(both, "worker-1", {}, set()) is None
    assert alloc.feasible(both, nodes, everywhere(nodes), set()).tolist() == [False]
    # Two claims of one device each: the second finds the counters used up.
    two = alloc.prepare(
        [claim("a", exactly("gpu", "example")), claim("b", exactly("gpu", "example"))]
    )
    assert alloc.allocate(two, "worker-1", {}, set()) is None
    assert alloc.feasible(two, nodes, everywhere(nodes), set()).tolist() == [False]


def test_documented_example_device_in_use_uses_the_counters_of_the_other() -> None:
    alloc = allocator(documented(), [DOC_CLASS])
    nodes = snapshot([node("worker-1")])
    prepared = alloc.prepare([claim("one", exactly("gpu", "example"))])
    busy = {DeviceKey(DOC_DRIVER, "pool", "device-1")}
    # device-2 is free but 6Gi + 6Gi is over 8Gi: neither Filter nor allocation take it.
    assert alloc.feasible(prepared, nodes, everywhere(nodes), busy).tolist() == [False]
    assert alloc.allocate(prepared, "worker-1", {}, busy) is None
    free = alloc.feasible(prepared, nodes, everywhere(nodes), set())
    assert free.tolist() == [True]


# --- a MIG-like GPU: eight memory slices -----------------------------------------------------

PROFILE = f'device.attributes["{GPU_DRIVER}"].profile'
ANY_GPU = device_class("mig", f'device.driver == "{GPU_DRIVER}"')
WHOLE = device_class("whole", f'{PROFILE} == "8g"')
HALF = device_class("half", f'{PROFILE} == "4g"')
SMALL = device_class("small", f'{PROFILE} == "1g"')
CLASSES = [ANY_GPU, WHOLE, HALF, SMALL]


def partition(name: str, profile: str, slices: range) -> dict[str, Any]:
    device = consuming(name, "gpu-0", **{f"memory-slice-{i}": 1 for i in slices})
    device["attributes"] = {"profile": {"string": profile}}
    return device


def mig(order: tuple[str, ...] = ("whole", "halves", "smalls")) -> list[ResourceSlice]:
    groups = {
        "whole": [partition("gpu-0", "8g", range(8))],
        "halves": [
            partition("gpu-0-4g-0", "4g", range(4)),
            partition("gpu-0-4g-1", "4g", range(4, 8)),
        ],
        "smalls": [partition(f"gpu-0-1g-{i}", "1g", range(i, i + 1)) for i in range(8)],
    }
    devices = [d for group in order for d in groups[group]]
    counters = {f"memory-slice-{i}": "1" for i in range(8)}
    return [
        counter_slice(
            "node-a-counters",
            {"gpu-0": counters},
            driver=GPU_DRIVER,
            pool="node-a",
            nodeName="node-a",
        ),
        device_slice(
            "node-a-devices", devices, driver=GPU_DRIVER, pool="node-a", nodeName="node-a"
        ),
    ]


def on_node_a(claims: list[Any], busy: set[DeviceKey] | None = None, order: Any = None) -> Any:
    alloc = allocator(mig(order) if order else mig(), CLASSES)
    prepared = alloc.prepare(claims)
    nodes = snapshot([node("node-a")])
    mask = alloc.feasible(prepared, nodes, everywhere(nodes), busy or set())
    found = alloc.allocate(prepared, "node-a", {}, busy or set())
    assert mask.tolist() == [found is not None]
    return found


def gpu(name: str) -> DeviceKey:
    return DeviceKey(GPU_DRIVER, "node-a", name)


def test_the_whole_device_and_a_part_of_it_are_never_both_allocated() -> None:
    whole_and_part = [claim("w", exactly("gpu", "whole")), claim("p", exactly("gpu", "small"))]
    assert on_node_a(whole_and_part) is None
    assert on_node_a([claim("p", exactly("gpu", "small"))], busy={gpu("gpu-0")}) is None
    assert on_node_a([claim("w", exactly("gpu", "whole"))], busy={gpu("gpu-0-1g-5")}) is None
    assert on_node_a([claim("w", exactly("gpu", "whole"))], busy={gpu("gpu-0-4g-1")}) is None


def test_two_halves_fit_and_a_third_does_not() -> None:
    two = on_node_a([claim("h", exactly("gpu", "half", count=2))])
    assert results(first(two)) == [("gpu", "gpu-0-4g-0"), ("gpu", "gpu-0-4g-1")]
    assert (
        on_node_a(
            [claim("h", exactly("gpu", "half", count=2)), claim("s", exactly("gpu", "small"))]
        )
        is None
    )


def test_small_slices_take_what_a_half_in_use_leaves() -> None:
    busy = {gpu("gpu-0-4g-0")}
    four = on_node_a([claim("s", exactly("gpu", "small", count=4))], busy=busy)
    assert [d for _, d in results(first(four))] == [f"gpu-0-1g-{i}" for i in range(4, 8)]
    assert on_node_a([claim("s", exactly("gpu", "small", count=5))], busy=busy) is None


def test_backtracking_gives_back_the_counters_of_a_device_it_undoes() -> None:
    # r0 may take any partition and first tries the whole GPU; r1 then finds no half left,
    # so the search backs up: r0's next choice (the first 1g slice) must find all eight
    # counters free again, and r1 takes the half that slice leaves.
    found = on_node_a(
        [claim("c", exactly("r0", "mig"), exactly("r1", "half"))],
        order=("whole", "smalls", "halves"),
    )
    assert results(first(found)) == [("r0", "gpu-0-1g-0"), ("r1", "gpu-0-4g-1")]


def test_all_takes_every_small_slice_only_when_their_counters_allow() -> None:
    every = on_node_a([claim("s", exactly("gpu", "small", allocationMode="All"))])
    assert len(results(first(every))) == 8
    assert (
        on_node_a(
            [claim("s", exactly("gpu", "small", allocationMode="All"))], busy={gpu("gpu-0-4g-1")}
        )
        is None
    )


def test_a_device_refused_for_a_taint_keeps_its_counters_for_the_rest_of_the_search() -> None:
    # kube-scheduler checks a device's counters before its taints and does not give the
    # counters of a device a taint refuses back: the untainted half behind it then finds
    # the counters of the tainted whole device in use, on this node, for this search
    # (the real kube-scheduler v1.36.2 leaves such a pod pending: cannot allocate all claims).
    whole = partition("gpu-0", "8g", range(8))
    whole["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    devices = [whole, partition("gpu-0-4g-0", "4g", range(4))]
    counters = {"gpu-0": {f"memory-slice-{i}": "1" for i in range(8)}}
    slices = [
        counter_slice("c", counters, driver=GPU_DRIVER, pool="p", nodeName="node-a"),
        device_slice("d", devices, driver=GPU_DRIVER, pool="p", nodeName="node-a"),
    ]
    alloc = allocator(slices, CLASSES)
    nodes = snapshot([node("node-a")])
    any_partition = alloc.prepare([claim("c", exactly("gpu", "mig"))])
    assert alloc.allocate(any_partition, "node-a", {}, set()) is None
    assert alloc.feasible(any_partition, nodes, everywhere(nodes), set()).tolist() == [False]
    half = alloc.prepare([claim("c", exactly("gpu", "half"))])
    assert results(first(alloc.allocate(half, "node-a", {}, set()))) == [("gpu", "gpu-0-4g-0")]


# --- counters shared across the nodes of a pool ---------------------------------------------


def fabric(busy_on: str | None = None) -> tuple[Any, Any, set[DeviceKey]]:
    """One pool over three nodes: an `allNodes` counter set of 2 links, a device on each
    node of worker-1 and worker-2 using one link each, and one on worker-3 using two."""
    sets = {"links": {"link": "2"}}
    slices = [
        counter_slice("fabric-counters", sets, pool="fabric", count=4, allNodes=True),
        device_slice(
            "fabric-1",
            [consuming("port-1", "links", link=1)],
            pool="fabric",
            count=4,
            nodeName="worker-1",
        ),
        device_slice(
            "fabric-2",
            [consuming("port-2", "links", link=1)],
            pool="fabric",
            count=4,
            nodeName="worker-2",
        ),
        device_slice(
            "fabric-3",
            [consuming("port-3", "links", link=2)],
            pool="fabric",
            count=4,
            nodeName="worker-3",
        ),
    ]
    alloc = allocator(slices, [DOC_CLASS])
    busy = {DeviceKey(DOC_DRIVER, "fabric", busy_on)} if busy_on else set()
    return alloc, snapshot([node("worker-1"), node("worker-2"), node("worker-3")]), busy


def test_a_device_in_use_on_another_node_of_the_pool_uses_its_counters() -> None:
    alloc, nodes, busy = fabric("port-1")
    prepared = alloc.prepare([claim("c", exactly("port", "example"))])
    # One link left: port-2 (one link) fits, port-3 (two) does not.
    assert alloc.feasible(prepared, nodes, everywhere(nodes), busy).tolist() == [False, True, False]
    assert alloc.allocate(prepared, "worker-3", {}, busy) is None
    assert results(first(alloc.allocate(prepared, "worker-2", {}, busy))) == [("port", "port-2")]
    alloc, nodes, free = fabric()
    prepared = alloc.prepare([claim("c", exactly("port", "example"))])
    assert alloc.feasible(prepared, nodes, everywhere(nodes), free).tolist() == [True, True, True]


def test_counter_sets_published_for_another_node_still_count() -> None:
    # kube gathers a pool's counter sets whatever node their slice names.
    slices = [
        counter_slice("counters", {"gpu-1-counters": {"memory": "8Gi"}}, nodeName="elsewhere"),
        documented()[1],
    ]
    alloc = allocator(slices, [DOC_CLASS])
    prepared = alloc.prepare([claim("one", exactly("gpu", "example"))])
    assert results(first(alloc.allocate(prepared, "worker-1", {}, set()))) == [("gpu", "device-1")]
    both = alloc.prepare([claim("both", exactly("gpu", "example", count=2))])
    assert alloc.allocate(both, "worker-1", {}, set()) is None


# --- pools kube's allocator refuses ------------------------------------------------------------


@pytest.mark.parametrize(
    ("devices", "sets"),
    [
        (
            [consuming("device-1", "no-such-set", memory="1Gi")],
            [{"gpu-1-counters": {"memory": "8Gi"}}],
        ),
        (
            [consuming("device-1", "gpu-1-counters", cores="1")],
            [{"gpu-1-counters": {"memory": "8Gi"}}],
        ),
        (
            [consuming("device-1", "gpu-1-counters", memory="1Gi")],
            [{"gpu-1-counters": {"memory": "8Gi"}}, {"gpu-1-counters": {"memory": "4Gi"}}],
        ),
    ],
    ids=["unknown-counter-set", "unknown-counter", "duplicate-counter-set"],
)
def test_an_invalid_pool_is_not_used_and_the_node_says_so(
    devices: list[dict[str, Any]], sets: list[dict[str, dict[str, str]]]
) -> None:
    slices = [device_slice("devices", devices, count=len(sets) + 1)]
    slices += [counter_slice(f"counters-{i}", s, count=len(sets) + 1) for i, s in enumerate(sets)]
    alloc = allocator(slices, [DOC_CLASS])
    prepared = alloc.prepare([claim("one", exactly("gpu", "example"))])
    with pytest.raises(AllocationError) as caught:
        alloc.allocate(prepared, "worker-1", {}, set())
    assert caught.value.kind == "node"
    assert caught.value.message == "invalid resource pools were encountered"
    nodes = snapshot([node("worker-1"), node("worker-2")])
    reasons: dict[int, str] = {}
    assert alloc.feasible(prepared, nodes, everywhere(nodes), set(), reasons).tolist() == [
        False,
        False,
    ]
    # The counter sets bring the pool to worker-2 as well, with its verdict.
    assert reasons == {
        0: "invalid resource pools were encountered",
        1: "invalid resource pools were encountered",
    }


def test_a_pool_without_its_counter_slice_is_incomplete() -> None:
    alloc = allocator([documented()[1]], [DOC_CLASS])
    prepared = alloc.prepare([claim("one", exactly("gpu", "example"))])
    assert alloc.allocate(prepared, "worker-1", {}, set()) is None
    every = alloc.prepare([claim("all", exactly("gpu", "example", allocationMode="All"))])
    with pytest.raises(
        AllocationError, match=r"resource pool dra\.example\.com/pool is currently being updated"
    ):
        alloc.allocate(every, "worker-1", {}, set())


def test_an_incomplete_counter_pool_fails_all_requests_on_every_node() -> None:
    # Its counter slice reaches every node, so a node without its devices meets it too.
    slices = [counter_slice("c", {"gpu-1-counters": {"memory": "8Gi"}}, count=3), documented()[1]]
    alloc = allocator(slices, [DOC_CLASS])
    every = alloc.prepare([claim("all", exactly("gpu", "example", allocationMode="All"))])
    nodes = snapshot([node("worker-2")])
    with pytest.raises(AllocationError, match="is currently being updated"):
        alloc.feasible(every, nodes, everywhere(nodes), set())


def test_pools_of_two_drivers_with_one_name_keep_their_own_counters() -> None:
    # kube-scheduler v1.36.2 keys a search's counters by pool name alone: with a GPU pool and
    # a NIC pool both named after the node, it gave one claim a0, b0 and b1 although b0 and b1
    # each use the NIC's only link (checked on the real binary). We keep each driver's pool
    # apart and refuse that claim: the driver could not prepare such an allocation.
    slices = []
    for driver, counter_set in (("gpu.example.com", "a"), ("nic.example.com", "b")):
        sets = {counter_set: {"c": "1"}}
        devices = [consuming(f"{counter_set}{i}", counter_set, c=1) for i in range(2)]
        slices.append(counter_slice(f"{driver}-c", sets, driver=driver, pool="x", nodeName="x"))
        slices.append(device_slice(f"{driver}-d", devices, driver=driver, pool="x", nodeName="x"))
    classes = [
        device_class("gpu", 'device.driver == "gpu.example.com"'),
        device_class("nic", 'device.driver == "nic.example.com"'),
    ]
    alloc = allocator(slices, classes)
    mixed = alloc.prepare([claim("m", exactly("r0", "gpu"), exactly("r1", "nic", count=2))])
    assert alloc.allocate(mixed, "x", {}, set()) is None
    one_each = alloc.prepare([claim("m", exactly("r0", "gpu"), exactly("r1", "nic"))])
    assert results(first(alloc.allocate(one_each, "x", {}, set()))) == [("r0", "a0"), ("r1", "b0")]
