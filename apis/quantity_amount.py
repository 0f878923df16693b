"""A Kubernetes quantity as apimachinery's `resource.Quantity` holds it, not only its value.

Two quantities of equal value can behave differently in Kubernetes, because the Go type keeps
a representation: a small `int64Amount` (an int64 times a power of ten) or a big `inf.Dec`, a
`Format` (DecimalSI, BinarySI, DecimalExponent) and sometimes the text it was parsed from.
What depends on it, and so what `Amount` reproduces:

* `String()` (`text`): the canonical form the API machinery gives (`1.5` -> `1500m`, `1024Mi`
  -> `1Gi`, `+1` kept as written, because ParseQuantity keeps an input it deems canonical);
* `AsInt64()` (`as_int64`): only a small amount at a non-negative scale converts, so `1000m`,
  a 19-digit number or `1Ei` (parsed as big decimals) are not integers, even when the value is;
* `AsApproximateFloat64()` (`approximate`): the unscaled digits times a power of ten;
* `Add`/`Sub`: the small form when the sum fits, else the big one.

Comparison is exact (`compare`). Parsing follows `ParseQuantity` to its quirks (`-` and `.`
parse as zero; a value under 1n rounds up to 1n; binary values above MaxInt64 are capped).
Unlike Go, an exponent that would need more than `_MAX_DIGITS` digits is refused rather than
worked out (Go would allocate the number); no expression or object a person writes needs one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "Amount",
    "AmountError",
    "add",
    "approximate",
    "as_int64",
    "compare",
    "from_int",
    "parse_amount",
    "sub",
    "to_string",
]

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

ERR_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NANO = -9
_LOG10_2 = math.log10(2)
_MAX_DIGITS = 100_000
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_NAMES = {v: k for k, v in _DECIMAL.items()}
_BINARY_NAMES = {v // 10: k for k, v in _BINARY.items()}


class AmountError(ValueError):
    """Text ParseQuantity refuses; the message is apimachinery's."""


@dataclass(frozen=True, slots=True)
class Amount:
    """`unscaled × 10**scale`, held small (`big` False: Go's int64Amount, `unscaled` fits an
    int64) or big (`big` True: an inf.Dec), with its format and the text ParseQuantity kept
    (empty when String() must canonicalize)."""

    unscaled: int
    scale: int
    big: bool = False
    format: str = DECIMAL_SI
    text: str = ""

    @property
    def sign(self) -> int:
        return (self.unscaled > 0) - (self.unscaled < 0)


def from_int(value: int) -> Amount:
    """`resource.NewQuantity(value, DecimalExponent)`, what the CEL library adds for an int."""
    return Amount(value, 0, False, DECIMAL_EXPONENT)


def _fits(value: int) -> bool:
    return _INT64_MIN <= value <= _INT64_MAX


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """(positive, number text, integer digits, fraction digits, suffix), as Go splits them."""
    end = len(text)
    pos = 0
    positive = True
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, text, num, "", ""
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value, suffix_start = text[:pos], pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise AmountError(ERR_FORMAT)
    return positive, value, num, denom, text[suffix_start:]


def _suffix(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], DECIMAL_SI
    if suffix in _BINARY:
        return 2, _BINARY[suffix], BINARY_SI
    digits = suffix[1:].removeprefix("+").removeprefix("-")
    if len(suffix) > 1 and suffix[0] in "eE" and digits and set(digits) <= _DIGITS:
        exponent = int(suffix[1:])
        if _fits(exponent):  # strconv.ParseInt(..., 64), then int32(...)
            return 10, (exponent + 2**31) % 2**32 - 2**31, DECIMAL_EXPONENT
    raise AmountError(ERR_SUFFIX)


def parse_amount(text: str) -> Amount:
    """`resource.ParseQuantity(text)`."""
    if not text:
        raise AmountError(ERR_FORMAT)
    if text == "0":
        return Amount(0, 0, False, DECIMAL_SI, "0")
    positive, value, num, denom, suffix = _split(text)
    base, exponent, form = _suffix(suffix)
    if form == BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - exponent * 3 // 10 - 1
        else:
            mantissa, precision = 1, -1
    else:
        scale, mantissa = exponent, 1
        precision = 18 - (len(num) + len(denom))
    if precision >= 0 and scale - len(denom) >= _NANO:
        scale -= len(denom)
        shifted = num + denom
        result = int(shifted) * mantissa
        if _fits(result):
            if not positive:
                result = -result
            if form == BINARY_SI:
                kept = int(shifted) & 7 != 0
            else:
                kept = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
            return Amount(result, scale, False, form, text if kept else "")
    return _parse_big(value, base, exponent, form)


def _parse_big(value: str, base: int, exponent: int, form: str) -> Amount:
    """ParseQuantity's inf.Dec path: rounded up to nano units, binary capped at MaxInt64."""
    sign, digits = (value[0], value[1:]) if value[:1] in "+-" else ("+", value)
    whole, _, fraction = digits.partition(".")
    if not (whole + fraction) or not set(whole + fraction) <= _DIGITS or "." in fraction:
        raise AmountError(ERR_NUMERIC)
    try:
        unscaled, scale = int(whole + fraction), -len(fraction)
    except ValueError as exc:  # past Python's int-from-text limit (thousands of digits)
        raise AmountError(ERR_NUMERIC) from exc
    if base == 10:
        scale += exponent
    else:
        unscaled <<= exponent
    if unscaled:
        unscaled, scale = _round_up(unscaled, scale, _NANO), _NANO
    if form == BINARY_SI and unscaled > _INT64_MAX * _ten(-scale):
        unscaled, scale = _INT64_MAX, 0
    if form == BINARY_SI and 0 < unscaled < _ten(-scale):
        form = DECIMAL_SI
    return Amount(-unscaled if sign == "-" else unscaled, scale, True, form)


def _round_up(unscaled: int, scale: int, target: int) -> int:
    """`unscaled × 10**scale` at `target` scale, rounded away from zero (inf.RoundUp)."""
    if scale >= target:
        _check_digits(scale - target)
        return unscaled * _ten(scale - target)
    drop = target - scale
    if drop > abs(unscaled).bit_length():  # 10**drop > |unscaled|: the magnitude rounds to 1
        return (unscaled > 0) - (unscaled < 0)
    quotient, remainder = divmod(abs(unscaled), _ten(drop))
    rounded = quotient + (remainder > 0)
    return rounded if unscaled >= 0 else -rounded


def _ten(exponent: int) -> int:
    """10**exponent for exponent ≥ 0, typed as the int it is."""
    return int(10**exponent)


def _check_digits(count: int) -> None:
    if count > _MAX_DIGITS:
        raise AmountError(f"quantity exponent out of range (more than {_MAX_DIGITS} digits)")


def _scaled_int64(value: int, up: int) -> int | None:
    """`value × 10**up` (up ≥ 0) if it fits an int64 (positiveScaleInt64)."""
    if up > 19 and value:
        return None
    result = value * _ten(up)
    return result if _fits(result) else None


def _small_add(a: Amount, b: Amount) -> Amount | None:
    """int64Amount.Add: the sum at the finer scale, None on overflow."""
    if b.unscaled == 0:
        return a
    if a.unscaled == 0:
        return Amount(b.unscaled, b.scale)
    if a.scale == b.scale:
        total, scale = a.unscaled + b.unscaled, a.scale
    elif a.scale > b.scale:
        lifted = _scaled_int64(a.unscaled, a.scale - b.scale)
        if lifted is None:
            return None
        total, scale = lifted + b.unscaled, b.scale
    else:
        lifted = _scaled_int64(b.unscaled, b.scale - a.scale)
        if lifted is None:
            return None
        total, scale = a.unscaled + lifted, a.scale
    return Amount(total, scale) if _fits(total) else None


def add(a: Amount, b: Amount) -> Amount:
    """`a.Add(b)` on a copy of `a`."""
    form = b.format if a.unscaled == 0 else a.format
    if not a.big and not b.big:
        small = _small_add(a, b)
        if small is not None:
            return Amount(small.unscaled, small.scale, False, form)
    scale = min(a.scale, b.scale)
    _check_digits(max(a.scale, b.scale) - scale)
    total = a.unscaled * _ten(a.scale - scale) + b.unscaled * _ten(b.scale - scale)
    return Amount(total, scale, True, form)


def sub(a: Amount, b: Amount) -> Amount:
    """`a.Sub(b)` on a copy of `a` (int64 negation wraps as Go's does)."""
    negated = -b.unscaled if b.unscaled != _INT64_MIN or b.big else _INT64_MIN
    form = b.format if a.unscaled == 0 else a.format
    result = add(Amount(a.unscaled, a.scale, a.big, form), Amount(negated, b.scale, b.big, form))
    return Amount(result.unscaled, result.scale, result.big, form)


def compare(a: Amount, b: Amount) -> int:
    """`a.Cmp(b)`: -1, 0 or 1, exactly."""
    if a.sign != b.sign or a.sign == 0:
        return (a.sign > b.sign) - (a.sign < b.sign)
    # Same sign, both non-zero: orders of magnitude first (bit lengths estimate the digits to
    # within one), exact digits only when they are close.
    size_a = int(abs(a.unscaled).bit_length() * _LOG10_2) + a.scale
    size_b = int(abs(b.unscaled).bit_length() * _LOG10_2) + b.scale
    if abs(size_a - size_b) > 2:
        larger = 1 if size_a > size_b else -1
        return larger * a.sign
    scale = min(a.scale, b.scale)
    x = a.unscaled * _ten(a.scale - scale)
    y = b.unscaled * _ten(b.scale - scale)
    return (x > y) - (x < y)


def as_int64(a: Amount) -> int | None:
    """`AsInt64()`: the value when the small form holds it at a non-negative scale."""
    if a.big or a.scale < 0:
        return None
    return _scaled_int64(a.unscaled, a.scale)


def _pow10(n: int) -> float:
    """Go's math.Pow10: table products, +Inf above 308, 0 below -323."""
    if 0 <= n <= 308:
        return float(f"1e{32 * (n // 32)}") * float(f"1e{n % 32}")
    if -323 <= n < 0:
        return float(f"1e-{32 * (-n // 32)}") / float(f"1e{-n % 32}")
    return math.inf if n > 0 else 0.0


def approximate(a: Amount) -> float:
    """`AsApproximateFloat64()`: float(unscaled) × Pow10(scale)."""
    try:
        base = float(a.unscaled)
    except OverflowError:
        base = math.copysign(math.inf, a.unscaled)
    return base if a.scale == 0 else base * _pow10(a.scale)


def to_string(a: Amount) -> str:
    """`String()`: the kept text, else the canonical form."""
    if a.text:
        return a.text
    if a.unscaled == 0:
        return "0"
    form = a.format
    if form == BINARY_SI:
        # Below 1Ki in magnitude, or not a whole number: written in decimal instead.
        small = compare(a, Amount(-1024, 0)) > 0 and compare(a, Amount(1024, 0)) < 0
        integral = None if small else _integral(a)
        if integral is None:
            form = DECIMAL_SI
        else:
            number, times = _strip(integral, 1024)
            return f"{number}{_BINARY_NAMES.get(times, '')}"
    number, exponent = _strip(a.unscaled, 10)
    exponent += a.scale
    number *= _ten(exponent % 3)
    exponent -= exponent % 3
    if form == DECIMAL_EXPONENT:
        return f"{number}e{exponent}" if exponent else str(number)
    return f"{number}{_DECIMAL_NAMES.get(exponent, '')}"


def _integral(a: Amount) -> int | None:
    """The value as an integer when it is one (AsScale(0) exact), else None."""
    if a.scale >= 0:
        _check_digits(a.scale)
        return a.unscaled * _ten(a.scale)
    whole, rest = divmod(abs(a.unscaled), _ten(-a.scale))
    if rest:
        return None
    return whole if a.unscaled > 0 else -whole


def _strip(value: int, factor: int) -> tuple[int, int]:
    """`value` without its trailing factors of `factor`, and how many there were."""
    times = 0
    magnitude = abs(value)
    while magnitude >= factor and magnitude % factor == 0:
        magnitude //= factor
        times += 1
    return (magnitude if value > 0 else -magnitude), times
