"""Kubernetes quantities: exact values, and the float AsApproximateFloat64 would return."""

from __future__ import annotations

from fractions import Fraction

import pytest
from pydantic import ValidationError

from apis.cluster import ManagedClusterStatus
from apis.quantity import Quantity, QuantityError


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        pytest.param("500m", Fraction(1, 2), id="milli"),
        pytest.param("1Gi", 2**30, id="binary"),
        pytest.param("1e3", 1000, id="exponent"),
        pytest.param("2", 2, id="plain"),
        pytest.param(2, 2, id="json-integer"),
        pytest.param(1.5, Fraction(3, 2), id="json-float"),
        pytest.param("15500m", Fraction(31, 2), id="milli-cpu"),
        pytest.param("60000Mi", 60000 * 2**20, id="mebibytes"),
        pytest.param("128G", 128 * 10**9, id="decimal-si"),
        pytest.param("1.5Gi", 3 * 2**29, id="fractional-binary"),
        pytest.param("-1.5", Fraction(-3, 2), id="negative"),
        pytest.param(".5", Fraction(1, 2), id="leading-dot"),
        pytest.param("1.", 1, id="trailing-dot"),
        pytest.param("+7k", 7000, id="plus-sign"),
        pytest.param("1E-3", Fraction(1, 1000), id="negative-exponent"),
        pytest.param("100u", Fraction(1, 10**4), id="micro"),
        pytest.param("9223372036854775807", 2**63 - 1, id="max-int64-exact"),
        pytest.param("123456789012345678901", 123456789012345678901, id="beyond-int64"),
    ],
)
def test_quantity_parses_to_the_exact_value(text: str | int | float, exact: Fraction) -> None:
    assert Quantity.parse(text).value == exact


def test_quantity_rounds_sub_nano_amounts_up_as_kubernetes_does() -> None:
    assert Quantity.parse("0.1n").value == Fraction(1, 10**9)
    assert Quantity.parse("-0.1n").value == Fraction(-1, 10**9)


def test_quantity_caps_binary_amounts_at_max_int64() -> None:
    assert Quantity.parse("8Ei").value == 2**63 - 1


@pytest.mark.parametrize(
    ("text", "approx"),
    [
        pytest.param("500m", 500 * (1 / 1000), id="milli-is-value-times-pow10"),
        # 3 × 0.1 in binary floating point, not the nearest double to 0.3
        pytest.param("0.3", 3 * 0.1, id="decimal-fraction"),
        pytest.param("64Gi", 68719476736.0, id="binary-is-exact"),
        pytest.param("128G", 128 * 1e9, id="decimal-si"),
        pytest.param("1.5Gi", float(1610612736 * 10**9) * (1 / 1e9), id="big-decimal-path"),
        pytest.param("3", 3.0, id="integer"),
    ],
)
def test_quantity_approximates_like_as_approximate_float64(text: str, approx: float) -> None:
    assert Quantity.parse(text).approximate() == approx


def test_approximation_follows_go_not_the_nearest_double() -> None:
    # The exact value 0.3 rounds to a different double than Go's 3 × Pow10(-1).
    q = Quantity.parse("0.3")
    assert q.approximate() != float(q.value)


def test_quantity_keeps_the_way_it_was_written() -> None:
    assert str(Quantity.parse("64Gi")) == "64Gi"
    assert Quantity.parse(4).raw == 4


def test_quantities_compare_by_value() -> None:
    assert Quantity.parse("1000m") == Quantity.parse("1")
    assert Quantity.parse("1Ki") == Quantity.parse(1024)
    assert Quantity.parse("1k") != Quantity.parse("1Ki")


def test_milli_and_ceil_round_up() -> None:
    q = Quantity.parse("1500u")
    assert q.milli() == 2
    assert Quantity.parse("2.1").ceil() == 3


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("12xyz", id="letters"),
        pytest.param("1.5.5", id="two-dots"),
        pytest.param("--1", id="two-signs"),
        pytest.param("", id="empty"),
        pytest.param(".", id="dot-only"),
        pytest.param("1Gii", id="bad-suffix"),
        pytest.param("e3", id="no-digits"),
        pytest.param("1 Gi", id="space"),
        pytest.param(True, id="boolean"),
        pytest.param(float("inf"), id="infinity"),
        pytest.param([1], id="list"),
    ],
)
def test_quantity_rejects_malformed_input(bad: object) -> None:
    with pytest.raises(QuantityError, match="is not a valid quantity"):
        Quantity.parse(bad)


def test_quantity_in_a_model_reports_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        ManagedClusterStatus.model_validate({"allocatable": {"cpu": "12xyz"}})
    error = info.value.errors()[0]
    assert error["loc"] == ("allocatable", "cpu")
    assert error["msg"] == "is not a valid quantity (got '12xyz')"
