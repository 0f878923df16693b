"""Kubernetes' CEL quantity library as OCM's selectors see it: vectors of expression ×
clusters × the clusters selected, written from `k8s.io/apiserver/pkg/cel/library/quantity.go`
over apimachinery's Quantity, and the canonical quantities of the `managedCluster` document."""

from __future__ import annotations

from typing import Any

import pytest

from apis.cluster import ManagedCluster
from placement.cel import CelCompileError, compile_selector
from placement.snapshot.fleet_snapshot import unstructured


def _cluster(name: str, cpu: Any, memory: Any = "8Gi") -> dict[str, Any]:
    return unstructured(
        ManagedCluster.model_validate(
            {
                "metadata": {"name": name},
                "status": {
                    "allocatable": {"cpu": cpu, "memory": memory},
                    "capacity": {"cpu": cpu, "memory": memory},
                },
            }
        )
    )


FLEET = [
    _cluster("half", "500m"),
    _cluster("one-and-half", "1.5"),
    _cluster("milli-1500", "1500m"),
    _cluster("json-four", 4, "1024Mi"),
    _cluster("two", "2", "1536Mi"),
    _cluster("big", "1234567890123456789", "9Ei"),
]


def selected(expression: str) -> list[str]:
    selector = compile_selector([expression])
    return [c["metadata"]["name"] for c in FLEET if selector.evaluate(c).matched]


CPU = "quantity(managedCluster.status.allocatable.cpu)"
MEMORY = "quantity(managedCluster.status.allocatable.memory)"


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        # exact decimal comparisons: non-integer amounts compare, they do not drop out
        (
            f'{CPU}.isGreaterThan(quantity("1"))',
            ["one-and-half", "milli-1500", "json-four", "two", "big"],
        ),
        (f'{CPU}.isLessThan(quantity("1"))', ["half"]),
        (f'{CPU}.compareTo(quantity("1.5")) == 0', ["one-and-half", "milli-1500"]),
        (
            f'{CPU}.compareTo(quantity("1500m")) >= 0',
            ["one-and-half", "milli-1500", "json-four", "two", "big"],
        ),
        (
            f'{CPU}.add(quantity("500m")).isLessThan(quantity("2.5"))',
            ["half", "one-and-half", "milli-1500"],
        ),
        (f'{CPU}.add(1).compareTo(quantity("2500m")) == 0', ["one-and-half", "milli-1500"]),
        (
            f'{CPU}.sub(quantity("0.5")).compareTo(quantity("1")) == 0',
            ["one-and-half", "milli-1500"],
        ),
        (f'{CPU}.sub(2).compareTo(quantity("0")) == 0', ["two"]),
        (f"{CPU}.asApproximateFloat() < 1.0", ["half"]),
        (f'sign({CPU}.sub(quantity("1.5"))) == 0', ["one-and-half", "milli-1500"]),
        (f"sign({CPU}.sub(2)) == -1", ["half", "one-and-half", "milli-1500"]),
        # == is Kubernetes' Equal: the values, whatever the forms
        (f'{CPU} == quantity("1500m")', ["one-and-half", "milli-1500"]),
        (f'{CPU}.add(quantity("500m")) == quantity("1")', ["half"]),
        (f'{MEMORY} == quantity("1Gi")', ["json-four"]),
        # isInteger / asInteger: only a small amount at a non-negative scale
        (f"{CPU}.isInteger()", ["json-four", "two"]),
        (f"{CPU}.asInteger() >= 2", ["json-four", "two"]),
        (f'{CPU}.add(quantity("500m")).isInteger()', []),  # 2000m is no integer
        (f"{CPU}.add(1).isInteger()", ["json-four", "two"]),
        (f"{MEMORY}.isInteger()", ["half", "one-and-half", "milli-1500", "json-four", "two"]),
        # the document's canonical forms (OCM converts the typed cluster)
        ('managedCluster.status.allocatable.cpu == "1500m"', ["one-and-half", "milli-1500"]),
        ('managedCluster.status.allocatable.cpu == "4"', ["json-four"]),
        ('managedCluster.status.allocatable.memory == "1Gi"', ["json-four"]),
        ('managedCluster.status.allocatable.memory == "1536Mi"', ["two"]),
        (
            'managedCluster.status.allocatable.memory == "9223372036854775807"',
            ["big"],
        ),
    ],
)
def test_quantity_vectors(expression: str, names: list[str]) -> None:
    assert selected(expression) == names


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('quantity("1000m").isInteger()', False),
        ('quantity("1").isInteger()', True),
        ('quantity("1k").asInteger() == 1000', True),
        ('quantity("123456789012345678").isInteger()', True),
        ('quantity("1234567890123456789").isInteger()', False),  # 19 digits: the big path
        ('quantity("9Ei").isInteger()', False),
        ('quantity("1Ei").isInteger()', False),
        ('quantity("1Ti").isInteger()', True),
        ('quantity("5e18").add(quantity("5e18")).isInteger()', False),
        ('quantity("0m").add(quantity("1")).isInteger()', True),
        ('quantity("1").sub(quantity("1")).isInteger()', True),
        ('quantity("1Ei").sub(quantity("1Ei")).isInteger()', False),
        ('quantity("1.5").asApproximateFloat() == 1.5', True),
        ('quantity("0.3").asApproximateFloat() == 3.0 * 0.1', True),
        ('quantity("1e-10") == quantity("1n")', True),
        ('quantity("1Ei") == quantity("1152921504606846976")', True),
        ('isQuantity("Mi") && quantity("Mi") == quantity("0")', True),  # apimachinery#165
        ('isQuantity("1.5.5")', False),
        ('isQuantity("1K")', False),
        ('quantity("1.2G").add(quantity("0.8G")) == quantity("2G")', True),
        ('quantity("50k").add(-50000) == quantity("0")', True),
    ],
)
def test_quantity_function_vectors(expression: str, expected: bool) -> None:
    result = compile_selector([expression]).evaluate(FLEET[0])
    assert (result.matched, result.error) == (expected, None), result


def test_as_integer_beyond_int64_is_an_error_and_not_a_match() -> None:
    result = compile_selector(['quantity("9Ei").asInteger() > 0']).evaluate(FLEET[0])
    assert not result.matched
    assert result.error is not None and "cannot convert value to integer" in result.error


def test_sign_is_global_as_kubernetes_declares_it() -> None:
    with pytest.raises(CelCompileError):
        compile_selector(['quantity("1").sign() == 1'])
    assert compile_selector(['sign(quantity("-1")) == -1']).evaluate(FLEET[0]).matched
