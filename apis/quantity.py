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
from functools import lru_cache
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from apis.quantity_amount import AmountError, approximate, parse_amount, to_string

__all__ = [
    "MAX_QUANTITY_LENGTH",
    "QUANTITY_PATTERN",
    "BoundedQuantityField",
    "BoundedResourceList",
    "Quantity",
    "QuantityError",
    "QuantityField",
    "ResourceList",
]

# The pattern Kubernetes puts on quantity fields of CRDs.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

_SYNTAX = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]*)(?:\.(?P<denom>[0-9]*))?"
    r"(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_MAX_EXACT_EXPONENT = 4000  # beyond this a Fraction of the value is not worth building
_PARSED_CACHE_SIZE = 4096  # distinct quantities remembered by `Quantity.parse`
_CACHED_LENGTH = 64  # longer strings are parsed each time (a cache of them would hold much)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


class Quantity:
    """An exact Kubernetes quantity that remembers how it was written."""

    __slots__ = ("amount", "raw", "value")

    def __init__(self, raw: str | int | float) -> None:
        self.raw: str | int | float = raw
        text = raw if isinstance(raw, str) else _number_text(raw)
        match = _SYNTAX.match(text)
        if not match or not (match["num"] or match["denom"]):
            raise QuantityError(f"is not a valid quantity (got {text!r})")
        try:
            self.amount = parse_amount(text)
        except AmountError as exc:
            raise QuantityError(f"is not a valid quantity (got {text!r})") from exc
        if abs(self.amount.scale) > _MAX_EXACT_EXPONENT:
            raise QuantityError(f"is not a valid quantity (got {text!r}): exponent out of range")
        self.value = Fraction(self.amount.unscaled) * Fraction(10) ** self.amount.scale

    @classmethod
    def parse(cls, raw: Any) -> Quantity:
        """Parse a wire value (string or JSON number); raises QuantityError."""
        if isinstance(raw, Quantity):
            return raw
        kind = type(raw)
        if cls is Quantity and ((kind is str and len(raw) <= _CACHED_LENGTH) or kind is int):
            return _parsed(raw)
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise QuantityError(f"is not a valid quantity (got {raw!r})")
        return cls(raw)

    def approximate(self) -> float:
        """The float `AsApproximateFloat64` returns for this quantity."""
        return approximate(self.amount)

    def canonical(self) -> str:
        """`String()` of the quantity Go decodes from this value: what the API machinery
        writes back (`1.5` -> `1500m`, `1024Mi` -> `1Gi`, the JSON number 4 -> `4`)."""
        return to_string(self.amount)

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


@lru_cache(maxsize=_PARSED_CACHE_SIZE, typed=True)
def _parsed(raw: str | int) -> Quantity:
    """`Quantity(raw)`, shared: a quantity is never changed once built, and a server parses the
    same few strings (`100m`, `500Mi`) on every object it admits, twice (the model, then kube's
    rules). Only exact `str` and `int` values come here: `typed` keeps `1` apart from `"1"`,
    and floats stay out (`-0.0 == 0.0` would share one `raw`). A value that does not parse
    raises, and is not remembered."""
    return Quantity(raw)


def _number_text(number: int | float) -> str:
    if isinstance(number, float):
        if not math.isfinite(number):
            raise QuantityError(f"is not a valid quantity (got {number!r})")
        return repr(number).replace("e+", "e")
    return str(number)


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

MAX_QUANTITY_LENGTH = 64
"""The longest quantity string a CRD field walked by a CEL rule takes: kube-apiserver estimates
a rule's cost from the longest string it may see, and refuses a CRD whose rule parses unbounded
strings (`estimated rule cost exceeds budget`)."""


def _validate_bounded(value: Any) -> Quantity:
    if isinstance(value, str) and len(value) > MAX_QUANTITY_LENGTH:
        raise PydanticCustomError(
            "quantity_length",
            "Too long: may not be longer than {limit}",
            {"limit": MAX_QUANTITY_LENGTH},
        )
    return _validate(value)


BoundedQuantityField = Annotated[
    Quantity,
    PlainValidator(_validate_bounded),
    PlainSerializer(_serialize),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "maxLength": MAX_QUANTITY_LENGTH,
            "x-kubernetes-int-or-string": True,
        }
    ),
]
BoundedResourceList = dict[str, BoundedQuantityField]
"""A ResourceList whose quantities are at most `MAX_QUANTITY_LENGTH` characters (ElasticQuota's
min and max, which its CRD's CEL rule parses)."""
