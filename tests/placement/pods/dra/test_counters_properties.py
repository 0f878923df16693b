"""Properties of partitionable devices in the DRA allocator over generated worlds: after any
sequence of allocations no counter set is ever over its value, `feasible` agrees with
`allocate` on every node at every step, and the allocator finds an allocation exactly when one
exists (a brute force over every choice of devices says so), with devices that consume no
counters beside them."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.resource import ResourceSlice
from placement.pods.dra import DeviceKey
from tests.placement.pods.dra.world import allocator, claim, device_class, exactly, node, snapshot

DRIVER = "gpu.example.com"
NODES = ("n0", "n1", "n2")
KINDS = ("small", "big", "port", "plain")
CLASSES = [device_class(k, f'device.attributes["{DRIVER}"].kind == "{k}"') for k in KINDS]

partition = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(("small", "big")),
        "start": st.integers(0, 3),
        "width": st.integers(1, 4),
        "mem": st.integers(1, 4),
    }
)
world = st.fixed_dictionaries(
    {
        "gpus": st.lists(st.lists(partition, max_size=5), min_size=3, max_size=3),
        "memory": st.integers(2, 8),
        "links": st.integers(1, 3),
        "ports": st.lists(st.lists(st.integers(1, 2), max_size=2), min_size=3, max_size=3),
        "plain": st.lists(st.integers(0, 2), min_size=3, max_size=3),
        "steps": st.lists(
            st.tuples(
                st.integers(0, 2),
                st.lists(
                    st.tuples(st.sampled_from(KINDS), st.integers(1, 2)), min_size=1, max_size=2
                ),
            ),
            min_size=1,
            max_size=5,
        ),
    }
)

Use = dict[tuple[str, str, str], Fraction]  # (pool, counter set, counter) -> amount


def _slice(name: str, pool: str, count: int, reach: dict[str, Any], **body: Any) -> ResourceSlice:
    return ResourceSlice.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": pool, "generation": 0, "resourceSliceCount": count},
                **reach,
                **body,
            },
        }
    )


def _device(name: str, kind: str, counter_set: str, counters: dict[str, int]) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"kind": {"string": kind}},
        "consumesCounters": [
            {"counterSet": counter_set, "counters": {c: {"value": v} for c, v in counters.items()}}
        ],
    }


def build(
    w: dict[str, Any],
) -> tuple[list[ResourceSlice], dict[DeviceKey, tuple[str, str, Use]], Use]:
    """The slices, per device (node reaching it, kind, consumption) and every counter's value."""
    slices: list[ResourceSlice] = []
    devices: dict[DeviceKey, tuple[str, str, Use]] = {}
    values: Use = {}
    for name, parts in zip(NODES, w["gpus"], strict=True):
        gpu = {f"s{i}": "1" for i in range(4)} | {"mem": str(w["memory"])}
        sets = [{"name": "gpu", "counters": {c: {"value": v} for c, v in gpu.items()}}]
        slices.append(_slice(f"{name}-counters", name, 2, {"nodeName": name}, sharedCounters=sets))
        listed = []
        for i, p in enumerate(parts):
            used = {f"s{s}": 1 for s in range(p["start"], min(4, p["start"] + p["width"]))}
            used["mem"] = p["mem"]
            listed.append(_device(f"p{i}", p["kind"], "gpu", used))
            use = {(name, "gpu", c): Fraction(v) for c, v in used.items()}
            devices[DeviceKey(DRIVER, name, f"p{i}")] = (name, p["kind"], use)
        slices.append(_slice(f"{name}-devices", name, 2, {"nodeName": name}, devices=listed))
        values |= {(name, "gpu", c): Fraction(v) for c, v in gpu.items()}
    # One pool over every node: a counter set of links (allNodes), ports on each node.
    count = 1 + len(NODES)
    links = [{"name": "links", "counters": {"link": {"value": str(w["links"])}}}]
    slices.append(
        _slice("fabric-counters", "fabric", count, {"allNodes": True}, sharedCounters=links)
    )
    values[("fabric", "links", "link")] = Fraction(w["links"])
    for name, ports in zip(NODES, w["ports"], strict=True):
        listed = []
        for i, amount in enumerate(ports):
            listed.append(_device(f"{name}-port-{i}", "port", "links", {"link": amount}))
            use = {("fabric", "links", "link"): Fraction(amount)}
            devices[DeviceKey(DRIVER, "fabric", f"{name}-port-{i}")] = (name, "port", use)
        slices.append(_slice(f"fabric-{name}", "fabric", count, {"nodeName": name}, devices=listed))
    # Devices without counters next to them, in a pool of their own per node.
    for name, plain in zip(NODES, w["plain"], strict=True):
        listed = [
            {"name": f"g{i}", "attributes": {"kind": {"string": "plain"}}} for i in range(plain)
        ]
        slices.append(
            _slice(f"{name}-plain", f"{name}-plain", 1, {"nodeName": name}, devices=listed)
        )
        for i in range(plain):
            devices[DeviceKey(DRIVER, f"{name}-plain", f"g{i}")] = (name, "plain", {})
    return slices, devices, values


def fits(keys: set[DeviceKey], devices: dict[DeviceKey, tuple[str, str, Use]], values: Use) -> bool:
    used: Use = {}
    for k in keys:
        for counter, amount in devices[k][2].items():
            used[counter] = used.get(counter, Fraction(0)) + amount
    return all(amount <= values[counter] for counter, amount in used.items())


def brute_force(
    requests: list[tuple[str, int]],
    where: str,
    in_use: set[DeviceKey],
    devices: dict[DeviceKey, tuple[str, str, Use]],
    values: Use,
) -> bool:
    """Is there any choice of distinct free devices on the node, `count` of the kind of each
    request, whose counters fit with those of the devices in use?"""

    def search(i: int, taken: set[DeviceKey]) -> bool:
        if i == len(requests):
            return fits(in_use | taken, devices, values)
        kind, count = requests[i]
        free = [
            k
            for k, (n, kd, _) in devices.items()
            if n == where and kd == kind and k not in in_use and k not in taken
        ]
        return any(search(i + 1, taken | set(c)) for c in combinations(sorted(free), count))

    return search(0, set())


@settings(max_examples=200, deadline=None)
@given(world)
def test_counters_never_overrun_feasible_agrees_and_nothing_that_fits_is_missed(
    w: dict[str, Any],
) -> None:
    slices, devices, values = build(w)
    alloc = allocator(slices, CLASSES)
    nodes = snapshot([node(n) for n in NODES])
    in_use: set[DeviceKey] = set()
    for step, (row, requests) in enumerate(w["steps"]):
        claims = [
            claim(f"c{step}", *(exactly(f"r{i}", k, count=n) for i, (k, n) in enumerate(requests)))
        ]
        prepared = alloc.prepare(claims)
        mask = alloc.feasible(prepared, nodes, np.ones(len(NODES), dtype=bool), frozenset(in_use))
        chosen = None
        for r, name in enumerate(NODES):
            found = alloc.allocate(prepared, name, {"kubernetes.io/hostname": name}, in_use)
            assert bool(mask[r]) == (found is not None), (step, name)
            assert (found is not None) == brute_force(requests, name, in_use, devices, values)
            if r == row:
                chosen = found
        if chosen is None:
            continue
        taken = {
            DeviceKey(x["driver"], x["pool"], x["device"]) for x in chosen[0]["devices"]["results"]
        }
        assert len(taken) == len(chosen[0]["devices"]["results"])
        assert not taken & in_use
        assert all(devices[k][0] == NODES[row] for k in taken)
        in_use |= taken
        # The property: no counter set is ever over its value.
        assert fits(in_use, devices, values)
