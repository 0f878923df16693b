"""A DRA device selector of two attributes over 10,000 devices in 50 distinct attribute sets
(the GPUs of 50 node pools): `DeviceSelectors.mask` evaluates the program once per distinct
(driver, attributes, capacity), so the cost is grouping the devices plus 50 evaluations.

* `test_mask_shared_sets`: the devices of one set share their attribute and capacity maps (as
  an inventory that interns them would);
* `test_mask_own_maps`: every device has maps of its own with equal contents (as decoded
  from ResourceSlices), so each is grouped by content.

Run: `pytest perf/test_dra_cel_bench.py --benchmark-enable`. With `--benchmark-disable` (CI)
each case runs once. Measured on a shared 2-core machine: shared sets 3.4 ms, own maps 35 ms
(the fastest of >= 20 rounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from apis.resource import DeviceAttribute, DeviceCapacity
from placement.cel import DeviceSelectors

DEVICES = 10_000
SETS = 50
DRIVER = "gpu.example.com"
SELECTOR = (
    'device.attributes["gpu.example.com"].model == "A100" && '
    'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))'
)


@dataclass(frozen=True)
class _Device:
    driver: str
    pool: str
    name: str
    attributes: dict[str, DeviceAttribute] = field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = field(default_factory=dict)


def _set(kind: int) -> tuple[dict[str, DeviceAttribute], dict[str, DeviceCapacity]]:
    attributes = {
        "model": DeviceAttribute.model_validate({"string": ["A100", "H100", "L4"][kind % 3]}),
        "driverVersion": DeviceAttribute.model_validate({"version": f"1.{kind % 5}.0"}),
        "index": DeviceAttribute.model_validate({"int": kind}),
        "uuid": DeviceAttribute.model_validate({"string": f"pool-{kind}"}),
    }
    capacity = {"memory": DeviceCapacity.model_validate({"value": f"{40 + kind % 2 * 40}Gi"})}
    return attributes, capacity


def _devices(shared: bool) -> list[_Device]:
    sets = [_set(kind) for kind in range(SETS)]
    out = []
    for i in range(DEVICES):
        kind = i % SETS
        attributes, capacity = sets[kind] if shared else _set(kind)
        out.append(_Device(DRIVER, f"pool-{kind}", f"gpu-{i}", attributes, capacity))
    return out


def _expected(devices: list[_Device]) -> int:
    return sum(
        1
        for d in devices
        if d.attributes["model"].string_value == "A100"
        and int((d.attributes["driverVersion"].version_value or "").split(".")[1]) > 2
    )


@pytest.mark.parametrize("shared", [True, False], ids=["shared_sets", "own_maps"])
def test_mask(benchmark: BenchmarkFixture, shared: bool) -> None:
    devices = _devices(shared)
    selectors = DeviceSelectors()
    selectors.program(SELECTOR)  # compiled once, as the allocator's cache keeps it
    mask = benchmark(selectors.mask, SELECTOR, devices)
    assert len(mask) == DEVICES
    assert int(mask.sum()) == _expected(devices)
