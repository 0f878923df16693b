"""The DRA allocator's Filter (`ClaimAllocator.feasible`) at 5,000 nodes x 8 GPUs, one claim
of one device per pod: the shape of kube's scheduler_perf SchedulingWithResourceClaimTemplate.

Each round prepares the pod's claim anew (as each scheduling cycle does) with some devices in
use, and filters every node. `cold` is the first round after the slices changed (the device
catalog, the nodes' reach and the selector's evaluation are built), `warm` a later one (most
of it: looking up the 39,992 devices in use), `warm_frozen_in_use` a later one given the
devices in use as a frozenset, whose mask is remembered.

Run: `pytest perf/test_dra_allocator_bench.py --benchmark-enable -s`. With the default
`--benchmark-disable` (CI) it runs 200 nodes, only to prove it still works.
"""

from __future__ import annotations

import time

import numpy as np
from pytest_benchmark.fixture import BenchmarkFixture

from apis.core import Node
from apis.resource import DeviceClass, ResourceClaim, ResourceSlice
from placement.cel.devices import DeviceSelectors
from placement.pods.cluster.nodes import NodeTable
from placement.pods.dra import ClaimAllocator, DeviceInventory, DeviceKey

DRIVER = "gpu.example.com"
GPUS = 8


def _world(n: int) -> tuple[ClaimAllocator, NodeTable, ResourceClaim]:
    inventory = DeviceInventory()
    nodes = []
    for i in range(n):
        name = f"node-{i:05d}"
        nodes.append(Node.model_validate({"metadata": {"name": name}, "status": {}}))
        devices = [
            {"name": f"gpu-{g}", "attributes": {"model": {"string": "big"}, "index": {"int": g}}}
            for g in range(GPUS)
        ]
        slice_ = ResourceSlice.model_validate(
            {
                "metadata": {"name": f"{name}-gpu"},
                "spec": {
                    "driver": DRIVER,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "nodeName": name,
                    "devices": devices,
                },
            }
        )
        inventory.update_slice(slice_.name, slice_)
    cls = DeviceClass.model_validate(
        {
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    )
    inventory.update_class("gpu", cls)
    claim = ResourceClaim.model_validate(
        {
            "metadata": {"name": "pod-0-gpu", "namespace": "default"},
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}
            },
        }
    )
    return ClaimAllocator(inventory, DeviceSelectors()), NodeTable.build(nodes), claim


def measure(n: int) -> dict[str, float]:
    allocator, table, claim = _world(n)
    snapshot = table.snapshot()
    candidates = np.ones(snapshot.size, dtype=bool)
    # Every node but the last full: the filter has to find the one free GPU.
    in_use = {
        DeviceKey(DRIVER, f"node-{i:05d}", f"gpu-{g}") for i in range(n - 1) for g in range(GPUS)
    }
    start = time.perf_counter()
    mask = allocator.feasible(allocator.prepare([claim]), snapshot, candidates, in_use)
    cold = time.perf_counter() - start
    assert mask.tolist().count(True) == 1 and bool(mask[-1])
    rounds = 20
    start = time.perf_counter()
    for _ in range(rounds):
        mask = allocator.feasible(allocator.prepare([claim]), snapshot, candidates, in_use)
    warm = (time.perf_counter() - start) / rounds
    frozen = frozenset(in_use)  # the mask of devices in use is then remembered across pods
    allocator.feasible(allocator.prepare([claim]), snapshot, candidates, frozen)
    start = time.perf_counter()
    for _ in range(rounds):
        allocator.feasible(allocator.prepare([claim]), snapshot, candidates, frozen)
    warm_frozen = (time.perf_counter() - start) / rounds
    free = allocator.feasible(allocator.prepare([claim]), snapshot, candidates, set())
    assert bool(free.all())
    return {
        "nodes": n,
        "devices": n * GPUS,
        "cold_ms": cold * 1e3,
        "warm_ms": warm * 1e3,
        "warm_frozen_in_use_ms": warm_frozen * 1e3,
    }


def test_dra_feasible(benchmark: BenchmarkFixture, benchmarking: bool) -> None:
    n = 5000 if benchmarking else 200
    figures: dict[str, float] = {}

    def run() -> None:
        figures.update(measure(n))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print({k: round(v, 3) for k, v in figures.items()})
    assert figures["warm_ms"] > 0


if __name__ == "__main__":
    print(measure(5000))
