"""Device selectors (`placement.cel.devices`): the selectors of kube's DRA documentation on
devices of a ResourceSlice, kube's runtime words, and the vectorised `DeviceSelectors.mask`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from apis.resource import DeviceAttribute, DeviceCapacity
from placement.cel import (
    DeviceSelectorError,
    DeviceSelectors,
    compile_device_selector,
)

DRIVER = "dra.example.com"


def _attributes(**values: Any) -> dict[str, DeviceAttribute]:
    out = {}
    for name, value in values.items():
        kind = (
            "bool"
            if isinstance(value, bool)
            else "int"
            if isinstance(value, int)
            else "version"
            if name.endswith("Version")
            else "string"
        )
        out[name.replace("__", "/").replace("_", ".")] = DeviceAttribute.model_validate(
            {kind: value}
        )
    return out


def _capacity(**values: str) -> dict[str, DeviceCapacity]:
    return {name: DeviceCapacity.model_validate({"value": v}) for name, v in values.items()}


# A GPU as kube's DRA documentation shows one (dra-example-driver's ResourceSlice)
GPU_ATTRIBUTES = _attributes(
    model="A100", driverVersion="1.2.3", index=0, mig=True, other_example_com__numa=1
)
GPU_CAPACITY = _capacity(memory="80Gi")


def _matches(expression: str, **overrides: Any) -> bool:
    program = compile_device_selector(expression)
    return program.matches(
        overrides.get("driver", DRIVER),
        overrides.get("attributes", GPU_ATTRIBUTES),
        overrides.get("capacity", GPU_CAPACITY),
        overrides.get("multiple", False),
    )


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "dra.example.com"', True),
        ('device.driver == "gpu.example.com"', False),
        ('device.attributes["dra.example.com"].model == "A100"', True),
        ('device.attributes["dra.example.com"].model == "H100"', False),
        ('device.capacity["dra.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["dra.example.com"].memory.compareTo(quantity("100Gi")) >= 0', False),
        ('device.capacity["dra.example.com"].memory.isGreaterThan(quantity("79Gi"))', True),
        (
            'device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))',
            True,
        ),
        (
            'device.attributes["dra.example.com"].driverVersion.compareTo(semver("1.2.3")) == 0',
            True,
        ),
        ('device.attributes["dra.example.com"].driverVersion.major() == 1', True),
        ('device.attributes["dra.example.com"].driverVersion.isLessThan(semver("1.2.3"))', False),
        ('device.attributes["dra.example.com"].driverVersion == semver("1.2.3")', True),
        ('device.attributes["dra.example.com"].index < 1', True),
        ('device.attributes["dra.example.com"].mig', True),
        # a qualified name keeps its own domain
        ('device.attributes["other.example.com"].numa == 1', True),
        ('"numa" in device.attributes["dra.example.com"]', False),
        # cel.bind, as kube's compile.go suggests for one domain read several times
        ('cel.bind(dra, device.attributes["dra.example.com"], dra.mig && dra.index == 0)', True),
        # optional types: a domain the device lacks reads as empty
        ('device.attributes["x.example.com"].?y.orValue(true)', True),
        ('device.attributes["dra.example.com"].?model.orValue("") == "A100"', True),
        ('"x.example.com" in device.attributes && device.attributes["x.example.com"].y', False),
        ("!device.allowMultipleAllocations", True),
        ('device.attributes["dra.example.com"].model.matches("^A[0-9]+$")', True),
        ('isSemver("1.2.3") && semver("2.0.0").isGreaterThan(semver("1.9.9"))', True),
        # kube's base environment: semver's normalizing form, the sets extension
        ('semver("v1.02", true) == semver("1.2.0") && isSemver("v1", true)', True),
        ('isSemver("v1.0")', False),
        ("sets.contains([1, 2, 3], [1, 2.0]) && sets.intersects([1], [3, 1])", True),
        ("sets.contains([1], [true]) || sets.equivalent([1, 2], [1])", False),
        # has() of a field of the device: always there
        ("has(device.driver) && has(device.allowMultipleAllocations)", True),
    ],
)
def test_documented_selectors(expression: str, expected: bool) -> None:
    assert _matches(expression) is expected


def test_allow_multiple_allocations_is_read() -> None:
    assert _matches("device.allowMultipleAllocations", multiple=True) is True


def test_a_bare_name_belongs_to_the_driver_domain() -> None:
    expression = 'device.attributes["gpu.example.com"].model == "A100"'
    assert _matches(expression, driver="gpu.example.com") is True
    with pytest.raises(DeviceSelectorError, match="no such key: model"):
        _matches(expression, driver="dra.example.com", attributes={})


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # cel-go's words for a missing key, as kube's allocator passes them on
        ('device.attributes["dra.example.com"].cores > 2', "no such key: cores"),
        ('device.attributes["x.example.com"].y', "no such key: y"),
        ('device.capacity["dra.example.com"].cpu.isInteger()', "no such key: cpu"),
        # a non-bool attribute as the result
        (
            'device.attributes["dra.example.com"].model',
            "CEL result of type string could not be converted to bool: "
            "type conversion error from 'string' to 'bool'",
        ),
    ],
)
def test_runtime_errors(expression: str, message: str) -> None:
    with pytest.raises(DeviceSelectorError) as caught:
        _matches(expression)
    assert caught.value.runtime
    assert str(caught.value) == message


def test_runtime_error_in_the_allocators_words() -> None:
    with pytest.raises(DeviceSelectorError) as caught:
        _matches('device.attributes["dra.example.com"].cores > 2')
    assert (
        caught.value.describe("class gpu.example.com", 0)
        == "class gpu.example.com: selector #0: CEL runtime error: no such key: cores"
    )


def test_runaway_loop_stops_at_the_cost_limit() -> None:
    ten = "[1,2,3,4,5,6,7,8,9,10]"
    expression = "true"
    for name in "abcdef":
        expression = f"{ten}.all({name}, {expression})"
    with pytest.raises(DeviceSelectorError, match="actual cost limit exceeded"):
        _matches(expression)


def test_compile_error_is_not_runtime() -> None:
    with pytest.raises(DeviceSelectorError) as caught:
        compile_device_selector("device.foo == 1")
    assert not caught.value.runtime
    assert caught.value.describe("claim ns/c", 1).startswith(
        "claim ns/c: selector #1: CEL compile error: compilation failed: ERROR: <input>:1:7:"
    )


@dataclass(frozen=True)
class _Device:
    driver: str
    pool: str
    name: str
    attributes: dict[str, DeviceAttribute] = field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = field(default_factory=dict)


def _fleet(devices: int, kinds: int) -> list[_Device]:
    out = []
    for i in range(devices):
        kind = i % kinds
        attributes = _attributes(model=f"M{kind % 5}", index=kind, driverVersion=f"1.{kind}.0")
        capacity = _capacity(memory=f"{(kind % 8 + 1) * 10}Gi")
        out.append(_Device(DRIVER, f"pool-{i // 100}", f"gpu-{i}", attributes, capacity))
    return out


def test_mask_agrees_with_one_evaluation_per_device() -> None:
    devices = _fleet(200, 7)
    expression = (
        'device.attributes["dra.example.com"].model in ["M1", "M3"] && '
        'device.capacity["dra.example.com"].memory.compareTo(quantity("30Gi")) >= 0'
    )
    mask = DeviceSelectors().mask(expression, devices)
    program = compile_device_selector(expression)
    expected = [program.matches(d.driver, d.attributes, d.capacity) for d in devices]
    assert mask.dtype == np.bool_
    assert mask.tolist() == expected
    assert 0 < mask.sum() < len(devices)


def test_mask_evaluates_once_per_distinct_device(monkeypatch: pytest.MonkeyPatch) -> None:
    selectors = DeviceSelectors()
    expression = 'device.attributes["dra.example.com"].index >= 3'
    program = selectors.program(expression)
    calls: list[Any] = []
    real = type(program).evaluate

    def counting(self: Any, data: Any) -> bool:
        calls.append(data)
        return real(self, data)

    monkeypatch.setattr(type(program), "evaluate", counting)
    mask = selectors.mask(expression, _fleet(500, 10))
    assert len(calls) == 10
    assert mask.sum() == 350


def test_mask_tells_apart_values_of_different_types() -> None:
    devices = [
        _Device(DRIVER, "p", "a", _attributes(flag=True)),
        _Device(DRIVER, "p", "b", _attributes(flag=1)),
    ]
    mask = DeviceSelectors().mask('device.attributes["dra.example.com"].flag == true', devices)
    assert mask.tolist() == [True, False]


def test_mask_raises_the_runtime_error() -> None:
    devices = _fleet(20, 2)
    with pytest.raises(DeviceSelectorError, match="no such key: cores"):
        DeviceSelectors().mask('device.attributes["dra.example.com"].cores > 1', devices)


def test_program_cache_keeps_compile_errors() -> None:
    selectors = DeviceSelectors()
    assert selectors.program("true") is selectors.program("true")
    for _ in range(2):
        with pytest.raises(DeviceSelectorError, match="compilation failed"):
            selectors.program("1 +")
