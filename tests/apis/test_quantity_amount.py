"""Quantities as apimachinery holds them: vectors written from `resource.ParseQuantity`,
`String()`, `AsInt64()`, `AsApproximateFloat64()`, `Add`/`Sub` and `Cmp` (v0.36)."""

from __future__ import annotations

import pytest

from apis.quantity import Quantity
from apis.quantity_amount import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    AmountError,
    add,
    approximate,
    as_int64,
    compare,
    from_int,
    parse_amount,
    sub,
    to_string,
)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("1.5", "1500m", id="fraction-becomes-milli"),
        pytest.param("0.1", "100m", id="leading-zero-fraction"),
        pytest.param("1000m", "1", id="whole-milli"),
        pytest.param("1.0", "1", id="trailing-zero-fraction"),
        pytest.param("1.5k", "1500", id="exponent-not-multiple-of-three"),
        pytest.param("1200000", "1200k", id="trailing-thousands"),
        pytest.param("0.000001", "1u", id="micro"),
        pytest.param("-0.5", "-500m", id="negative"),
        pytest.param("4", "4", id="plain"),
        pytest.param("100m", "100m", id="kept-canonical-milli"),
        pytest.param("+1", "+1", id="plus-kept-as-written"),
        pytest.param("01", "01", id="leading-zero-kept-as-written"),
        pytest.param("1.", "1.", id="trailing-dot-kept-as-written"),
        pytest.param("1e3", "1e3", id="exponent-kept"),
        pytest.param("1E3", "1E3", id="capital-exponent-kept"),
        pytest.param("12e6", "12e6", id="exponent-multiple-of-three-kept"),
        pytest.param("1e100", "10e99", id="exponent-rewritten-to-multiple-of-three"),
        pytest.param("1e-10", "1e-9", id="sub-nano-exponent-rounds-up"),
        pytest.param("1.5n", "2n", id="sub-nano-rounds-up"),
        pytest.param("1024Mi", "1Gi", id="binary-carries"),
        pytest.param("8Ki", "8Ki", id="binary-multiple-of-eight"),
        pytest.param("1536Mi", "1536Mi", id="binary-not-a-larger-unit"),
        pytest.param("100Ki", "100Ki", id="binary-kept"),
        pytest.param("-1Ki", "-1Ki", id="negative-binary"),
        pytest.param("0.5Gi", "512Mi", id="fractional-binary"),
        pytest.param("0.5Ki", "512", id="binary-below-1Ki-is-decimal"),
        pytest.param("1Ei", "1Ei", id="exbibyte-big-path"),
        pytest.param("9Ei", "9223372036854775807", id="binary-capped-at-max-int64"),
        pytest.param("1000E", "1", id="beyond-E-loses-its-suffix-as-in-go"),
        pytest.param("0", "0", id="zero"),
        pytest.param("0m", "0", id="zero-milli"),
        pytest.param("Mi", "0", id="bare-suffix-is-zero"),
        pytest.param("-", "0", id="bare-sign-is-zero"),
        pytest.param(".", "0", id="bare-dot-is-zero"),
    ],
)
def test_string_is_apimachinery_canonical_form(text: str, canonical: str) -> None:
    assert to_string(parse_amount(text)) == canonical


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        pytest.param(4, "4", id="json-integer"),
        pytest.param(1.5, "1500m", id="json-float"),
        pytest.param("1024Mi", "1Gi", id="binary-string"),
    ],
)
def test_wire_values_decode_to_the_canonical_string(raw: str | int | float, canonical: str) -> None:
    assert Quantity.parse(raw).canonical() == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "quantities must match the regular expression"),
        (" 1", "quantities must match the regular expression"),
        ("1.5.5", "quantities must match the regular expression"),
        ("1K", "unable to parse quantity's suffix"),
        ("1e", "unable to parse quantity's suffix"),
        ("1i", "unable to parse quantity's suffix"),
        (".e-10", "unable to parse numeric part of quantity"),
    ],
)
def test_parse_refuses_with_apimachinery_words(text: str, message: str) -> None:
    with pytest.raises(AmountError, match=message):
        parse_amount(text)


@pytest.mark.parametrize(
    ("text", "integer"),
    [
        pytest.param("1", 1, id="plain"),
        pytest.param("1k", 1000, id="positive-scale"),
        pytest.param("1e18", 10**18, id="exponent-fits"),
        pytest.param("10e18", None, id="exponent-overflows"),
        pytest.param("123456789012345678", 123456789012345678, id="18-digits-fast-path"),
        pytest.param("1234567890123456789", None, id="19-digits-big-path"),
        pytest.param("9223372036854775807", None, id="max-int64-written-out-is-big"),
        pytest.param("1000m", None, id="negative-scale-even-when-whole"),
        pytest.param("1.0", None, id="fraction-digits"),
        pytest.param("0m", None, id="zero-at-milli-scale"),
        pytest.param("0", 0, id="zero"),
        pytest.param("1Ti", 2**40, id="tebibyte-fast-path"),
        pytest.param("100Ti", None, id="binary-precision-exhausted"),
        pytest.param("1Pi", None, id="pebibyte-big-path"),
        pytest.param("1Ei", None, id="exbibyte-big-path"),
        pytest.param("9Ei", None, id="capped-binary"),
    ],
)
def test_as_int64_holds_only_small_amounts_at_non_negative_scale(
    text: str, integer: int | None
) -> None:
    assert as_int64(parse_amount(text)) == integer


@pytest.mark.parametrize(
    ("text", "approx"),
    [
        ("500m", 500 * (1 / 1000)),
        ("1.5", 15 * 0.1),
        ("0.3", 3 * 0.1),
        ("1e100", 1 * float("1e96") * float("1e4")),
        ("1Ei", float(2**60 * 10**9) * (1 / 1e9)),
        ("9Ei", float(2**63 - 1)),
        ("1000E", 1000 * 1e18),
    ],
)
def test_approximate_float_is_digits_times_pow10(text: str, approx: float) -> None:
    assert approximate(parse_amount(text)) == approx


def test_add_stays_small_at_the_finer_scale() -> None:
    total = add(parse_amount("1"), parse_amount("500m"))
    assert (total.unscaled, total.scale, total.big) == (1500, -3, False)
    assert to_string(total) == "1500m"
    whole = add(parse_amount("500m"), parse_amount("500m"))
    assert compare(whole, parse_amount("1")) == 0
    assert as_int64(whole) is None  # 1000m is not an integer to Kubernetes


def test_add_to_zero_takes_the_other_amount_and_its_format() -> None:
    total = add(parse_amount("0m"), parse_amount("1Ki"))
    assert (total.unscaled, total.scale, total.format) == (1024, 0, BINARY_SI)
    assert as_int64(total) == 1024


def test_add_goes_big_on_overflow_or_with_a_big_operand() -> None:
    overflow = add(parse_amount("9e18"), from_int(9 * 10**18))
    assert overflow.big and compare(overflow, parse_amount("18e18")) == 0
    assert as_int64(overflow) is None
    big = add(parse_amount("1Ei"), from_int(1))
    assert big.big and as_int64(big) is None


def test_sub_and_int_operands() -> None:
    difference = sub(parse_amount("1.5"), from_int(1))
    assert compare(difference, parse_amount("500m")) == 0
    assert as_int64(sub(from_int(5), from_int(7))) == -2
    assert from_int(3).format == DECIMAL_EXPONENT
    assert parse_amount("3").format == DECIMAL_SI


@pytest.mark.parametrize(
    ("left", "right", "order"),
    [
        ("500m", "1", -1),
        ("1.5", "1500m", 0),
        ("1Gi", "1G", 1),
        ("1000Mi", "1Gi", -1),
        ("-1", "0", -1),
        ("1e100", "1e99", 1),
        ("1e-9", "0.1n", 0),
        ("1Ei", "1152921504606846976", 0),
        ("9Ei", "9223372036854775807", 0),
        ("-2", "-10", 1),
    ],
)
def test_compare_is_exact(left: str, right: str, order: int) -> None:
    assert compare(parse_amount(left), parse_amount(right)) == order
    assert compare(parse_amount(right), parse_amount(left)) == -order
