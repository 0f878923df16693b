"""Kubernetes' CEL quantity library (`k8s.io/apiserver/pkg/cel/library/quantity.go`) on
`apis.quantity_amount`, which holds a quantity as apimachinery does.

A quantity travels through the engine as a tagged map (`placement.cel.overloads`) that must
satisfy two rules at once: `==` between two quantities is Kubernetes' `Equal` (the values
compare equal: `quantity("1") == quantity("1000m")`), yet the functions must see how each was
held, since `quantity("1").isInteger()` is true and `quantity("1000m").isInteger()` false. So
the map carries the exact value as normalized text, and the representation (small or big form,
scale) in the *types* of a list of zeros: int `0` for a 0 bit, double `0.0` for a 1 bit. CEL's
heterogeneous equality finds `0 == 0.0`, so equal values stay equal whatever their forms.
Scales outside [-9, 54] (exponents nobody writes) take a longer list, and such a quantity is
not `==` to an equal one held at a common scale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apis.quantity_amount import (
    Amount,
    AmountError,
    add,
    approximate,
    as_int64,
    compare,
    from_int,
    parse_amount,
    sub,
)
from placement.cel.overloads import OPAQUE, Function, Meter, NoOverloadError

__all__ = ["KIND", "amount_of", "compare_quantities", "functions", "is_quantity_value"]

KIND = "Quantity"
_SCALE_BITS = 6
_SCALE_BASE = -9
_WIDE_BITS = 33


def _value_text(a: Amount) -> str:
    """The exact value as `<digits>e<exponent>` with no trailing zero in the digits."""
    if a.unscaled == 0:
        return "0"
    digits, exponent = a.unscaled, a.scale
    while digits % 10 == 0:
        digits //= 10
        exponent += 1
    return f"{digits}e{exponent}"


def _bits(value: int, width: int) -> list[float | int]:
    return [0.0 if value >> i & 1 else 0 for i in range(width)]


def encode(a: Amount) -> dict[str, Any]:
    """The tagged map of a quantity."""
    offset = a.scale - _SCALE_BASE
    if 0 <= offset < 1 << _SCALE_BITS:
        form = _bits(offset, _SCALE_BITS)
    else:
        form = _bits(a.scale % (1 << _WIDE_BITS), _WIDE_BITS)
    return {OPAQUE: KIND, "value": _value_text(a), "form": [0.0 if a.big else 0, *form]}


def decode(value: Any, function: str) -> Amount:
    """The amount inside a tagged quantity; cel-go's "no such overload" for anything else."""
    if not is_quantity_value(value):
        raise NoOverloadError(function)
    form = value["form"]
    flags = [isinstance(bit, float) for bit in form[1:]]
    scale = sum(1 << i for i, bit in enumerate(flags) if bit)
    if len(flags) == _SCALE_BITS:
        scale += _SCALE_BASE
    elif scale >= 1 << (_WIDE_BITS - 1):
        scale -= 1 << _WIDE_BITS
    text = value["value"]
    if text == "0":
        return Amount(0, scale, isinstance(form[0], float))
    digits, _, exponent = text.partition("e")
    unscaled = int(digits) * 10 ** (int(exponent) - scale)
    return Amount(unscaled, scale, isinstance(form[0], float))


def is_quantity_value(value: Any) -> bool:
    return isinstance(value, dict) and value.get(OPAQUE) == KIND


def amount_of(value: Any, function: str) -> Amount:
    """A quantity argument, or an int one (the `_int` overloads), as an amount."""
    if isinstance(value, int) and not isinstance(value, bool):
        return from_int(value)
    return decode(value, function)


def compare_quantities(a: Any, b: Any, function: str) -> int:
    return compare(decode(a, function), decode(b, function))


def functions(meter: Meter) -> list[Function]:
    """The library's overloads, as Kubernetes declares them (`sign` global, the rest members
    but `quantity`/`isQuantity`), bound to `meter`."""

    def parse(text: str) -> Amount:
        meter.charge(len(text) * 0.1)
        try:
            return parse_amount(text)
        except AmountError as exc:
            raise ValueError(str(exc)) from exc

    def quantity(text: str) -> dict[str, Any]:
        return encode(parse(text))

    def is_quantity(text: str) -> bool:
        try:
            parse(text)
        except ValueError:
            return False
        return True

    def sign(value: Any) -> int:
        return decode(value, "sign").sign

    def is_integer(value: Any) -> bool:
        return as_int64(decode(value, "isInteger")) is not None

    def as_integer(value: Any) -> int:
        found = as_int64(decode(value, "asInteger"))
        if found is None:
            raise ValueError("cannot convert value to integer")
        return found

    def as_float(value: Any) -> float:
        return approximate(decode(value, "asApproximateFloat"))

    def arithmetic(
        operation: Callable[[Amount, Amount], Amount], function: str
    ) -> Callable[[Any, Any], dict[str, Any]]:
        def apply(a: Any, b: Any) -> dict[str, Any]:
            try:
                return encode(operation(decode(a, function), amount_of(b, function)))
            except AmountError as exc:
                raise ValueError(str(exc)) from exc

        return apply

    return [
        Function("quantity", "string_to_quantity", ("string",), "opaque", quantity),
        Function("isQuantity", "is_quantity_string", ("string",), "bool", is_quantity),
        Function("sign", "quantity_sign", ("opaque",), "int", sign),
        Function("isInteger", "quantity_is_integer", ("opaque",), "bool", is_integer, True),
        Function("asInteger", "quantity_get_int", ("opaque",), "int", as_integer, True),
        Function("asApproximateFloat", "quantity_get_float", ("opaque",), "double", as_float, True),
        Function("add", "quantity_add", ("opaque", "dyn"), "opaque", arithmetic(add, "add"), True),
        Function("sub", "quantity_sub", ("opaque", "dyn"), "opaque", arithmetic(sub, "sub"), True),
    ]
