"""kube-scheduler's validation vocabulary for our configuration models: an integer bounded to its
Go type (`GoInt`, so that no value a Go decoder refuses reaches a timedelta or an allocation), a
range check worded as kube words it (`Range`: `Invalid value: 200: not in valid range [0, 100]`),
and the `field.Error` kinds (`invalid`, `required`, `forbidden`, `duplicate`, `not_supported`)
for checks spanning fields, raised together by `raise_all` so a file's every problem is one line
each (`apis.configmodel.field_problems` prefixes the path: the user reads
`profiles[0].pluginConfig[1].args.minCandidateNodesPercentage: Invalid value: 200: not in valid
range [0, 100]`, the line kube-scheduler prints).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from apis.configmodel import MAX_DURATION_SECONDS
from apis.fielderrors import go_value

__all__ = [
    "GO_DURATION_SECONDS",
    "MAX_INT32",
    "MAX_INT64",
    "GoInt",
    "Int32",
    "Int64",
    "Range",
    "duplicate",
    "forbidden",
    "invalid",
    "not_supported",
    "raise_all",
    "required",
    "shown_value",
    "worded",
]

MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1
Loc = tuple[str | int, ...]


def shown_value(value: object) -> str:
    """A value as kube's `Invalid value: X` shows it; an integer of hundreds of digits by its
    length (Python refuses to print one of over 4300)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"
    return go_value(value)


@dataclass(frozen=True)
class GoInt:
    """Annotated metadata: an integer that fits Go's `int<bits>` (a Go decoder refuses any
    other: `cannot unmarshal number ... of type int32`)."""

    bits: int

    def _check(self, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            top = 2 ** (self.bits - 1)
            if not -top <= value < top:
                raise PydanticCustomError(
                    "go_int",
                    f"Invalid value: {shown_value(value)}: does not fit an int{self.bits} "
                    f"(at most {top - 1})",
                )
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))


Int32 = Annotated[int, GoInt(32)]
Int64 = Annotated[int, GoInt(64)]


@dataclass(frozen=True)
class Range:
    """Annotated metadata: an integer in [lo, hi] (None: unbounded), refused with kube's
    wording `Invalid value: X: <detail>`."""

    lo: int | None
    hi: int | None
    detail: str

    def _check(self, value: Any) -> Any:
        below = self.lo is not None and value < self.lo
        above = self.hi is not None and value > self.hi
        if isinstance(value, int) and not isinstance(value, bool) and (below or above):
            raise PydanticCustomError(
                "range", f"Invalid value: {shown_value(value)}: {self.detail}"
            )
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))


GO_DURATION_SECONDS = Range(
    None, MAX_DURATION_SECONDS, f"must be at most {MAX_DURATION_SECONDS} seconds, a Go Duration"
)
"""Seconds kube multiplies into a Go Duration (an int64 of nanoseconds, ~292 years): beyond it
the value would wrap around; here it is refused."""


def _loc(loc: str | int | Loc) -> Loc:
    return loc if isinstance(loc, tuple) else (loc,)


def _error(loc: str | int | Loc, kind: str, text: str, value: Any) -> InitErrorDetails:
    return InitErrorDetails(
        type=PydanticCustomError(kind, "{message}", {"message": text}),
        loc=_loc(loc),
        input=value,
    )


def invalid(loc: str | int | Loc, value: Any, detail: str) -> InitErrorDetails:
    """`field.Invalid`: `Invalid value: X: detail`."""
    return _error(loc, "invalid", f"Invalid value: {shown_value(value)}: {detail}", value)


def required(loc: str | int | Loc, detail: str = "") -> InitErrorDetails:
    """`field.Required`: `Required value[: detail]`."""
    return _error(
        loc, "required", f"Required value: {detail}" if detail else "Required value", None
    )


def forbidden(loc: str | int | Loc, detail: str) -> InitErrorDetails:
    """`field.Forbidden`: `Forbidden: detail`."""
    return _error(loc, "forbidden", f"Forbidden: {detail}", None)


def duplicate(loc: str | int | Loc, value: Any) -> InitErrorDetails:
    """`field.Duplicate`: `Duplicate value: X`."""
    return _error(loc, "duplicate", f"Duplicate value: {shown_value(value)}", value)


def not_supported(loc: str | int | Loc, value: Any, supported: Sequence[str]) -> InitErrorDetails:
    """`field.NotSupported`: `Unsupported value: X: supported values: "A", "B"`."""
    options = ", ".join(go_value(option) for option in supported)
    text = f"Unsupported value: {shown_value(value)}: supported values: {options}"
    return _error(loc, "not_supported", text, value)


def worded(loc: str | int | Loc, message: str) -> InitErrorDetails:
    """An error whose message is already worded (a pod's rule from `apis.kubevalidation`)."""
    return _error(loc, "invalid", message, None)


def raise_all(errors: Iterable[InitErrorDetails]) -> None:
    """Raise every error at once (inside a validator, their locations join the enclosing
    ones); nothing when there is none."""
    found = list(errors)
    if found:
        raise ValidationError.from_exception_data("config", found)
