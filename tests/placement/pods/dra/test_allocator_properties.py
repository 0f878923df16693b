"""Properties of the DRA allocator over generated worlds: `feasible` agrees with `allocate`
on every row, no device is given twice or while in use, every device given passes its class
and is reachable from the node, and `All` takes every matching device."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.pods.dra import DeviceKey
from tests.placement.pods.dra.world import (
    DRIVER,
    allocator,
    claim,
    device,
    device_class,
    exactly,
    local_slice,
    node,
    shared_slice,
    snapshot,
)

MODELS = ("big", "small")
CLASSES = [device_class(m, f'device.attributes["{DRIVER}"].model == "{m}"') for m in MODELS]
NODES = ["n0", "n1", "n2", "n3"]

request = st.fixed_dictionaries(
    {
        "model": st.sampled_from(MODELS),
        "all": st.booleans(),
        "count": st.integers(1, 3),
    }
)
world = st.fixed_dictionaries(
    {
        "devices": st.lists(
            st.lists(st.sampled_from(MODELS), max_size=4), min_size=len(NODES), max_size=len(NODES)
        ),
        "shared": st.lists(st.sampled_from(MODELS), max_size=2),
        "claims": st.lists(st.lists(request, min_size=1, max_size=2), min_size=1, max_size=2),
        "busy": st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=4),
        "same_model": st.booleans(),
    }
)


def _mode(r: dict[str, Any], *, all_allowed: bool) -> dict[str, Any]:
    return {"allocationMode": "All"} if r["all"] and all_allowed else {"count": r["count"]}


def build(w: dict[str, Any]) -> tuple[Any, Any, set[DeviceKey], dict[DeviceKey, str]]:
    slices = []
    models: dict[DeviceKey, str] = {}
    for name, devices in zip(NODES, w["devices"], strict=True):
        slices.append(
            local_slice(name, [device(f"d{i}", model=m, slot=i) for i, m in enumerate(devices)])
        )
        for i, m in enumerate(devices):
            models[DeviceKey(DRIVER, name, f"d{i}")] = m
    if w["shared"]:
        shared = [device(f"s{i}", model=m, slot=9) for i, m in enumerate(w["shared"])]
        slices.append(shared_slice("fabric", shared, allNodes=True))
        for i, m in enumerate(w["shared"]):
            models[DeviceKey(DRIVER, "fabric", f"s{i}")] = m
    claims = []
    for c, requests in enumerate(w["claims"]):
        # A constraint an `All` request breaks is an error (kube's), not a verdict: no All then.
        specs = [
            exactly(f"r{i}", r["model"], **_mode(r, all_allowed=not w["same_model"]))
            for i, r in enumerate(requests)
        ]
        constraints = (
            [{"matchAttribute": f"{DRIVER}/model"}] if w["same_model"] and len(specs) > 1 else []
        )
        claims.append(claim(f"c{c}", *specs, constraints=constraints))
    busy = {DeviceKey(DRIVER, NODES[n], f"d{i}") for n, i in w["busy"]}
    return slices, claims, busy, models


@settings(max_examples=150, deadline=None)
@given(world)
def test_feasible_agrees_with_allocate_and_allocations_are_sound(w: dict[str, Any]) -> None:
    slices, claims, busy, models = build(w)
    alloc = allocator(slices, CLASSES)
    prepared = alloc.prepare(claims)
    nodes = snapshot([node(n) for n in NODES])
    mask = alloc.feasible(prepared, nodes, np.ones(len(NODES), dtype=bool), busy)
    for row, name in enumerate(NODES):
        allocations = alloc.allocate(prepared, name, {"kubernetes.io/hostname": name}, busy)
        assert bool(mask[row]) == (allocations is not None), name
        if allocations is None:
            continue
        given_out: list[DeviceKey] = []
        for c, allocation in enumerate(allocations):
            spec = claims[c].spec.devices
            assert spec is not None and spec.requests is not None
            wanted = {r.name: r.exactly for r in spec.requests}
            for result in allocation["devices"]["results"]:
                key = DeviceKey(result["driver"], result["pool"], result["device"])
                exact = wanted[result["request"]]
                assert exact is not None
                # Passes its class, reachable from the node, not in use.
                assert models[key] == exact.device_class_name
                assert key.pool in (name, "fabric")
                assert key not in busy
                given_out.append(key)
            for r in spec.requests:
                assert r.exactly is not None
                taken = [x for x in allocation["devices"]["results"] if x["request"] == r.name]
                if r.exactly.allocation_mode == "All":
                    # All: every device of the class the node reaches.
                    reachable = {
                        k
                        for k, m in models.items()
                        if m == r.exactly.device_class_name and k.pool in (name, "fabric")
                    }
                    assert {DeviceKey(DRIVER, x["pool"], x["device"]) for x in taken} == reachable
                else:
                    assert len(taken) == r.exactly.count
        assert len(given_out) == len(set(given_out))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(MODELS), max_size=6), min_size=4, max_size=4),
    st.integers(1, 4),
)
def test_the_count_shortcut_matches_the_search(devices: list[list[str]], count: int) -> None:
    slices = [
        local_slice(name, [device(f"d{i}", model=m) for i, m in enumerate(models)])
        for name, models in zip(NODES, devices, strict=True)
    ]
    alloc = allocator(slices, CLASSES)
    prepared = alloc.prepare([claim("c", exactly("r", "big", count=count))])
    nodes = snapshot([node(n) for n in NODES])
    mask = alloc.feasible(prepared, nodes, np.ones(len(NODES), dtype=bool), set())
    expected = [models.count("big") >= count for models in devices]
    assert mask.tolist() == expected
    for row, name in enumerate(NODES):
        assert (alloc.allocate(prepared, name, {}, set()) is not None) == expected[row]
