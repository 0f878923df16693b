"""Kubernetes resource quantities (`500m`, `1Gi`, `1e3`, `2`), parsed exactly.

`Quantity.value` is an exact `Fraction` (no float drift on integers or milli-units);
`Quantity.approximate()` reproduces `resource.Quantity.AsApproximateFloat64()` bit for bit,
including the internal representation that decides how the float is computed, because the
resource prioritizers' integer scores depend on the last bit of that float.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

__all__ = ["QUANTITY_PATTERN", "Quantity", "QuantityError", "QuantityField", "ResourceList"]

# The pattern Kubernetes puts on quantity fields of CRDs.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

_SYNTAX = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]*)(?:\.(?P<denom>[0-9]*))?"
    r"(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_MAX_INT64 = 2**63 - 1
_NANO = -9
_MAX_INT64_DIGITS = 18


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def _pow10(n: int) -> float:
    """Go's math.Pow10: table lookups, so results match Go even where pow() would not."""
    if n >= 0:
        return float(f"1e{32 * (n // 32)}") * float(f"1e{n % 32}")
    m = -n
    return float(f"1e-{32 * (m // 32)}") / float(f"1e{m % 32}")


def _round_up_to_nano(value: Fraction) -> int:
    """Unscaled integer at scale 9, rounded away from zero (inf.RoundUp)."""
    scaled = value * 10**9
    magnitude = math.ceil(abs(scaled))
    return magnitude if scaled >= 0 else -magnitude


class Quantity:
    """An exact Kubernetes quantity that remembers how it was written."""

    __slots__ = ("_approx", "raw", "value")

    def __init__(self, raw: str | int | float) -> None:
        self.raw: str | int | float = raw
        text = raw if isinstance(raw, str) else _number_text(raw)
        self.value, self._approx = _parse(text)

    @classmethod
    def parse(cls, raw: Any) -> Quantity:
        """Parse a wire value (string or JSON number); raises QuantityError."""
        if isinstance(raw, Quantity):
            return raw
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise QuantityError(f"is not a valid quantity (got {raw!r})")
        return cls(raw)

    def approximate(self) -> float:
        """The float `AsApproximateFloat64` returns for this quantity."""
        return self._approx

    def ceil(self) -> int:
        """`Value()`: the integer value, rounded up."""
        return math.ceil(self.value)

    def milli(self) -> int:
        """`MilliValue()`: the value in thousandths, rounded up."""
        return math.ceil(self.value * 1000)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.raw!r})"

    def __str__(self) -> str:
        return self.raw if isinstance(self.raw, str) else _number_text(self.raw)


def _number_text(number: int | float) -> str:
    if isinstance(number, float):
        if not math.isfinite(number):
            raise QuantityError(f"is not a valid quantity (got {number!r})")
        return repr(number).replace("e+", "e")
    return str(number)


def _parse(text: str) -> tuple[Fraction, float]:
    match = _SYNTAX.match(text)
    if not match or not (match["num"] or match["denom"]):
        raise QuantityError(f"is not a valid quantity (got {text!r})")
    negative = match["sign"] == "-"
    num = match["num"].lstrip("0") or "0"
    denom = match["denom"] or ""
    suffix = match["suffix"] or ""
    digits = Fraction(int(num + denom), 10 ** len(denom))
    if suffix in _BINARY_SI:
        exponent, binary = _BINARY_SI[suffix], True
        exact = digits * 2**exponent
    else:
        exponent = _DECIMAL_SI[suffix] if suffix in _DECIMAL_SI else int(suffix[1:])
        binary = False
        exact = digits * Fraction(10) ** exponent
    if negative:
        exact = -exact

    fast = _int64_amount(num, denom, exponent, binary, negative)
    if fast is not None:
        unscaled, scale = fast
        return exact, _approx(unscaled, scale)

    # The big-decimal path: rounded up to nano units, binary values capped at MaxInt64.
    if binary and abs(exact) > _MAX_INT64:
        exact = Fraction(_MAX_INT64 if not negative else -_MAX_INT64)
    if exact == 0:
        return Fraction(0), 0.0
    unscaled = _round_up_to_nano(exact)
    return Fraction(unscaled, 10**9), _approx(unscaled, _NANO)


def _int64_amount(
    num: str, denom: str, exponent: int, binary: bool, negative: bool
) -> tuple[int, int] | None:
    """The (value, scale) pair of Kubernetes' int64 fast path, or None when it does not apply."""
    if binary:
        if denom:
            return None
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        mantissa, scale = 1 << exponent, 0
    else:
        precision = _MAX_INT64_DIGITS - (len(num) + len(denom))
        mantissa, scale = 1, exponent
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < _NANO:
        return None
    value = int(num + denom) * mantissa
    if value > _MAX_INT64:
        return None
    return (-value if negative else value), scale


def _approx(unscaled: int, scale: int) -> float:
    base = float(unscaled)
    return base if scale == 0 else base * _pow10(scale)


def _validate(value: Any) -> Quantity:
    try:
        return Quantity.parse(value)
    except QuantityError as exc:
        raise PydanticCustomError(
            "quantity", "is not a valid quantity (got {got})", {"got": repr(value)}
        ) from exc


def _serialize(value: Quantity) -> str | int | float:
    return value.raw


QuantityField = Annotated[
    Quantity,
    PlainValidator(_validate),
    PlainSerializer(_serialize),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    ),
]
ResourceList = dict[str, QuantityField]
