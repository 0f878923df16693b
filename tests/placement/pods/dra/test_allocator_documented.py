"""The DRA allocator on the examples of kubernetes.io's DRA concept page and kube's allocator
behaviour: one device of a class, ExactCount 2, All, firstAvailable, matchAttribute across two
requests, adminAccess, taints, pools being updated, the allocation's nodeSelector."""

from __future__ import annotations

import pytest

from apis.resource import ResourceClaim
from placement.pods.dra import AllocationError, allocated_devices
from tests.placement.pods.dra.world import (
    DRIVER,
    allocator,
    claim,
    device,
    device_class,
    everywhere,
    exactly,
    first,
    key,
    local_slice,
    node,
    results,
    shared_slice,
    snapshot,
)

GPU = device_class("gpu", f'device.driver == "{DRIVER}"')
BIG = device_class(
    "big-gpu", f'device.driver == "{DRIVER}"', 'device.attributes["gpu.example.com"].model == "big"'
)
SMALL = device_class(
    "small-gpu",
    f'device.driver == "{DRIVER}"',
    'device.attributes["gpu.example.com"].model == "small"',
)


def gpus(n: int, model: str = "big", **more: object) -> list[dict[str, object]]:
    return [device(f"gpu-{i}", model=model, **more) for i in range(n)]


def test_one_device_of_a_class_is_the_first_of_the_slice_and_ties_the_claim_to_its_node() -> None:
    alloc = allocator([local_slice("n1", gpus(2)), local_slice("n2", gpus(2))], [GPU])
    prepared = alloc.prepare([claim("c", exactly("gpu"))])
    allocation = alloc.allocate(prepared, "n2", {}, set())
    assert allocation == [
        {
            "devices": {
                "results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
                ]
            },
        }
    ]


def test_devices_in_use_are_skipped_and_a_full_node_fails() -> None:
    alloc = allocator([local_slice("n1", gpus(2)), local_slice("n2", gpus(1))], [GPU])
    prepared = alloc.prepare([claim("c", exactly("gpu"))])
    busy = {key("n1", "gpu-0"), key("n2", "gpu-0")}
    assert results(first(alloc.allocate(prepared, "n1", {}, busy))) == [("gpu", "gpu-1")]
    assert alloc.allocate(prepared, "n2", {}, busy) is None
    nodes = snapshot([node("n1"), node("n2"), node("n3")])
    assert alloc.feasible(prepared, nodes, everywhere(nodes), busy).tolist() == [True, False, False]


def test_exact_count_two() -> None:
    alloc = allocator([local_slice("n1", gpus(1)), local_slice("n2", gpus(3))], [GPU])
    prepared = alloc.prepare([claim("c", exactly("gpu", count=2))])
    nodes = snapshot([node("n1"), node("n2")])
    assert alloc.feasible(prepared, nodes, everywhere(nodes), set()).tolist() == [False, True]
    allocation = alloc.allocate(prepared, "n2", {}, set())
    assert results(first(allocation)) == [("gpu", "gpu-0"), ("gpu", "gpu-1")]


def test_all_takes_every_matching_device_and_fails_when_one_is_in_use() -> None:
    devices = [*gpus(2, "big"), device("gpu-9", model="small")]
    alloc = allocator([local_slice("n1", devices)], [BIG])
    prepared = alloc.prepare([claim("c", exactly("gpu", "big-gpu", allocationMode="All"))])
    assert results(first(alloc.allocate(prepared, "n1", {}, set()))) == [
        ("gpu", "gpu-0"),
        ("gpu", "gpu-1"),
    ]
    assert alloc.allocate(prepared, "n1", {}, {key("n1", "gpu-1")}) is None
    nodes = snapshot([node("n1"), node("n2")])
    assert alloc.feasible(prepared, nodes, everywhere(nodes), set()).tolist() == [True, False]


def test_all_with_no_matching_device_fails() -> None:
    alloc = allocator([local_slice("n1", gpus(2, "small"))], [BIG])
    prepared = alloc.prepare([claim("c", exactly("gpu", "big-gpu", allocationMode="All"))])
    assert alloc.allocate(prepared, "n1", {}, set()) is None


def test_first_available_tries_subrequests_in_order() -> None:
    alloc = allocator(
        [local_slice("n1", gpus(1, "small")), local_slice("n2", gpus(1, "big"))], [BIG, SMALL]
    )
    request = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "big-gpu"},
            {"name": "small", "deviceClassName": "small-gpu", "count": 1},
        ],
    }
    prepared = alloc.prepare([claim("c", request)])
    assert results(first(alloc.allocate(prepared, "n2", {}, set()))) == [("gpu/big", "gpu-0")]
    assert results(first(alloc.allocate(prepared, "n1", {}, set()))) == [("gpu/small", "gpu-0")]
    nodes = snapshot([node("n1"), node("n2"), node("n3")])
    assert alloc.feasible(prepared, nodes, everywhere(nodes), set()).tolist() == [True, True, False]


def test_match_attribute_across_two_requests_backtracks_to_a_shared_value() -> None:
    numa = [device("gpu-0", numa=0), device("gpu-1", numa=1)]
    nics = [device("nic-0", numa=1)]
    alloc = allocator(
        [
            local_slice("n1", numa, name="a"),
            local_slice("n1", nics, name="b", driver="nic.example.com", pool="n1-nic"),
        ],
        [
            device_class("gpu", f'device.driver == "{DRIVER}"'),
            device_class("nic", 'device.driver == "nic.example.com"'),
        ],
    )
    constraint = {"requests": ["gpu", "nic"], "matchAttribute": f"{DRIVER}/numa"}
    prepared = alloc.prepare(
        [claim("c", exactly("gpu"), exactly("nic", "nic"), constraints=[constraint])]
    )
    # gpu-0 comes first, but no NIC shares its NUMA node: the search takes gpu-1 instead.
    # (The NIC's own attribute is `numa` of its driver, so the fully qualified name misses it.)
    assert alloc.allocate(prepared, "n1", {}, set()) is None
    constraint["matchAttribute"] = "numa.example.com/node"
    tagged = [
        device("gpu-0", **{"numa.example.com/node": 0}),
        device("gpu-1", **{"numa.example.com/node": 1}),
    ]
    tagged_nics = [device("nic-0", **{"numa.example.com/node": 1})]
    alloc = allocator(
        [
            local_slice("n1", tagged, name="a"),
            local_slice("n1", tagged_nics, name="b", driver="nic.example.com", pool="n1-nic"),
        ],
        [
            device_class("gpu", f'device.driver == "{DRIVER}"'),
            device_class("nic", 'device.driver == "nic.example.com"'),
        ],
    )
    prepared = alloc.prepare(
        [claim("c", exactly("gpu"), exactly("nic", "nic"), constraints=[constraint])]
    )
    assert results(first(alloc.allocate(prepared, "n1", {}, set()))) == [
        ("gpu", "gpu-1"),
        ("nic", "nic-0"),
    ]
    nodes = snapshot([node("n1")])
    assert alloc.feasible(prepared, nodes, everywhere(nodes), set()).tolist() == [True]


def test_admin_access_takes_a_device_in_use_and_does_not_hold_it() -> None:
    alloc = allocator([local_slice("n1", gpus(1))], [GPU])
    prepared = alloc.prepare([claim("c", exactly("gpu", adminAccess=True))])
    busy = {key("n1", "gpu-0")}
    allocation = alloc.allocate(prepared, "n1", {}, busy)
    assert allocation is not None
    assert allocation[0]["devices"]["results"][0]["adminAccess"] is True
    done = ResourceClaim.model_validate(
        {**claim("c").to_wire(), "status": {"allocation": allocation[0]}}
    )
    assert allocated_devices(done) == set()


def test_tainted_devices_need_a_toleration() -> None:
    tainted = [{"name": "gpu-0", "taints": [{"key": "broken", "effect": "NoSchedule"}]}]
    alloc = allocator([local_slice("n1", tainted)], [GPU])
    assert alloc.allocate(alloc.prepare([claim("c", exactly("gpu"))]), "n1", {}, set()) is None
    tolerating = exactly("gpu", tolerations=[{"key": "broken", "operator": "Exists"}])
    allocation = alloc.allocate(alloc.prepare([claim("c", tolerating)]), "n1", {}, set())
    assert allocation is not None
    assert allocation[0]["devices"]["results"][0]["tolerations"] == [
        {"key": "broken", "operator": "Exists"}
    ]


def test_two_claims_of_one_pod_get_different_devices() -> None:
    alloc = allocator([local_slice("n1", gpus(2))], [GPU])
    prepared = alloc.prepare([claim("a", exactly("gpu")), claim("b", exactly("gpu"))])
    first, second = alloc.allocate(prepared, "n1", {}, set()) or []
    assert results(first) == [("gpu", "gpu-0")] and results(second) == [("gpu", "gpu-1")]


def test_a_missing_class_makes_the_pod_wait_with_kube_words() -> None:
    alloc = allocator([], [GPU])
    with pytest.raises(AllocationError) as caught:
        alloc.prepare([claim("c", exactly("gpu", "nope"))])
    assert caught.value.kind == "unschedulable"
    assert str(caught.value) == "request gpu: device class nope does not exist"


def test_too_many_devices_for_one_claim() -> None:
    alloc = allocator([], [GPU])
    with pytest.raises(
        AllocationError,
        match=r"^claim default/c: number of requested devices 33 exceeds the claim limit of 32$",
    ):
        alloc.prepare([claim("c", exactly("gpu", count=33))])


def test_a_cel_runtime_error_names_the_class_selector_and_device() -> None:
    alloc = allocator(
        [local_slice("n1", gpus(1))],
        [device_class("gpu", 'device.attributes["gpu.example.com"].nope == 1')],
    )
    prepared = alloc.prepare([claim("c", exactly("gpu"))])
    with pytest.raises(
        AllocationError,
        match=r"^class gpu: selector #0 on device gpu.example.com/n1/gpu-0: CEL runtime error: ",
    ):
        alloc.allocate(prepared, "n1", {}, set())
    nodes = snapshot([node("n1")])
    with pytest.raises(AllocationError):
        alloc.feasible(prepared, nodes, everywhere(nodes), set())


def test_all_against_a_pool_being_updated_is_an_error() -> None:
    partial = local_slice("n1", gpus(1), count=2)  # one of two slices published
    alloc = allocator([partial], [GPU])
    one = alloc.prepare([claim("c", exactly("gpu"))])
    assert alloc.allocate(one, "n1", {}, set()) is None  # an incomplete pool is not used
    every = alloc.prepare([claim("c", exactly("gpu", allocationMode="All"))])
    with pytest.raises(
        AllocationError,
        match=r"asks for all devices, but resource pool gpu\.example\.com/n1 is currently "
        "being updated$",
    ):
        alloc.allocate(every, "n1", {}, set())


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old = local_slice("n1", [device("old")], name="s-old", generation=1)
    new = local_slice("n1", [device("new")], name="s-new", generation=2)
    alloc = allocator([old, new], [GPU])
    prepared = alloc.prepare([claim("c", exactly("gpu"))])
    assert results(first(alloc.allocate(prepared, "n1", {}, set()))) == [("gpu", "new")]


def test_duplicate_device_names_make_a_pool_invalid_for_the_node() -> None:
    a = local_slice("n1", [device("gpu-0")], name="a", count=2)
    b = local_slice("n1", [device("gpu-0")], name="b", count=2)
    alloc = allocator([a, b], [GPU])
    prepared = alloc.prepare([claim("c", exactly("gpu"))])
    with pytest.raises(AllocationError) as caught:
        alloc.allocate(prepared, "n1", {}, set())
    assert caught.value.kind == "node"
    assert str(caught.value) == "invalid resource pools were encountered"
    nodes = snapshot([node("n1")])
    reasons: dict[int, str] = {}
    assert alloc.feasible(prepared, nodes, everywhere(nodes), set(), reasons).tolist() == [False]
    assert reasons == {0: "invalid resource pools were encountered"}


def test_network_attached_devices_reach_nodes_by_selector_and_say_so_in_the_allocation() -> None:
    selector = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
        ]
    }
    alloc = allocator([shared_slice("fabric", gpus(1), nodeSelector=selector)], [GPU])
    prepared = alloc.prepare([claim("c", exactly("gpu"))])
    nodes = snapshot([node("n1", rack="r1"), node("n2", rack="r2")])
    assert alloc.feasible(prepared, nodes, everywhere(nodes), set()).tolist() == [True, False]
    allocation = alloc.allocate(prepared, "n1", {"rack": "r1"}, set())
    assert allocation is not None
    assert allocation[0]["nodeSelector"] == selector


def test_all_nodes_devices_give_no_node_selector() -> None:
    alloc = allocator([shared_slice("cluster", gpus(1), allNodes=True)], [GPU])
    prepared = alloc.prepare([claim("c", exactly("gpu"))])
    allocation = alloc.allocate(prepared, "anywhere", {}, set())
    assert allocation is not None and "nodeSelector" not in allocation[0]
