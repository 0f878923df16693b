"""The base of our configuration models (kube-scheduler's file, the plugins' args): strict
camelCase fields, an unknown field refused with the closest known name, integer bounds that
name themselves, Go durations, and `field_problems`, which words a validation error as one
`path: problem` line per problem, the paths as the user wrote them
(`profiles[0].pluginConfig[1].args.podGroupBackoffSeconds: must be >= 0 (got -5)`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

__all__ = [
    "MAX_DURATION_SECONDS",
    "Bounds",
    "ConfigModel",
    "Duration",
    "duration_seconds",
    "field_problems",
    "go_duration_seconds",
    "located",
    "shown",
    "suggest",
]


def suggest(name: str, known: Sequence[str]) -> str:
    """` (did you mean "X"?)` when a known name is close, else empty."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f' (did you mean "{close[0]}"?)' if close else ""


# --- the base model: camelCase, strict, unknown fields refused with a suggestion ---------------


class ConfigModel(BaseModel):
    """Base of the configuration models: camelCase on the wire, strict types, and an unknown
    field is an error naming it (with the closest known name)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
        extra="forbid",
        frozen=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        known = [f.alias or n for n, f in cls.model_fields.items()]
        for key in data:
            if key not in known and key not in cls.model_fields:
                hint = suggest(str(key), known) if isinstance(key, str) else ""
                raise located(key, "unknown_field", f"unknown field{hint}", data[key])
        return data


def located(
    key: str | int | tuple[str | int, ...], kind: str, message: str, value: Any
) -> ValidationError:
    """A validation error at `key` below the current model (raised inside a validator, the
    location joins the enclosing ones)."""
    return ValidationError.from_exception_data(
        "config",
        [
            InitErrorDetails(
                type=PydanticCustomError(kind, "{message}", {"message": message}),
                loc=key if isinstance(key, tuple) else (key,),
                input=value,
            )
        ],
    )


@dataclass(frozen=True)
class Bounds:
    """Annotated metadata: an integer in [lo, hi], with a message naming the bounds."""

    lo: int | None = None
    hi: int | None = None

    def _check(self, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            lo, hi = self.lo, self.hi
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                if lo is not None and hi is not None:
                    text = f"must be between {lo} and {hi} (got {value})"
                elif lo is not None:
                    text = f"must be >= {lo} (got {value})"
                else:
                    text = f"must be <= {hi} (got {value})"
                raise PydanticCustomError("int_bounds", text)
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))


# --- error messages ----------------------------------------------------------------------------

_MESSAGES = {
    "missing": "is required",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "float_type": "must be a number",
    "extra_forbidden": "unknown field",
}


def _path(loc: Sequence[int | str], prefix: str) -> str:
    text = prefix
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.startswith("function-") or part in ("list", "dict"):
            continue  # pydantic's names for a validator or union member, not a field
        else:
            text = f"{text}.{part}" if text else part
    return text


def shown(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


def field_problems(error: ValidationError, prefix: str = "") -> list[str]:
    """One `path: problem` line per problem of a validation error, the paths as written in the
    file under `prefix` (`profiles[0].pluginConfig[1].args`)."""
    lines: list[str] = []
    for problem in error.errors(include_url=False):
        kind = problem["type"]
        if kind == "literal_error":
            expected = problem.get("ctx", {}).get("expected", "")
            text = f"must be {expected} (got {shown(problem['input'])})"
        elif kind in _MESSAGES and kind not in ("missing", "extra_forbidden"):
            text = f"{_MESSAGES[kind]} (got {shown(problem['input'])})"
        else:
            text = _MESSAGES.get(kind, problem["msg"])
        line = f"{_path(problem['loc'], prefix) or prefix or 'configuration'}: {text}"
        if line not in lines:
            lines.append(line)
    return lines


# --- durations (metav1.Duration: Go's time.ParseDuration) ---------------------------------------

_UNIT_NANOSECONDS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9}
_UNIT_NANOSECONDS["h"] = 60 * _UNIT_NANOSECONDS["m"]
_DURATION_PART = re.compile(r"(\d+)(?:\.(\d*))?(ns|us|µs|ms|s|m|h)|\.(\d+)(ns|us|µs|ms|s|m|h)")
MAX_DURATION_NANOSECONDS = 2**63 - 1
"""Go's time.Duration is an int64 of nanoseconds: about 292 years."""
MAX_DURATION_SECONDS = MAX_DURATION_NANOSECONDS // 10**9


def go_duration_seconds(text: str) -> float:
    """`1m30s`, `500ms`, `15s` -> seconds, as Go's time.ParseDuration reads them (`0` alone is
    zero). ValueError on anything else, and (as Go) on a duration beyond its int64 of
    nanoseconds (`99999999999999h`)."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    problem = f'invalid duration "{text}" (e.g. "15s", "1m30s")'
    total, at = Fraction(0), 0
    while at < len(body):
        found = _DURATION_PART.match(body, at)
        if found is None:
            raise ValueError(problem)
        whole, fraction, unit = found.group(1) or "0", found.group(2) or "", found.group(3)
        if found.group(4) is not None:
            fraction, unit = found.group(4), found.group(5)
        if len(whole) + len(fraction) > 40:  # far beyond any int64 of nanoseconds
            raise ValueError(problem)
        value = int(whole) + (Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0)
        total += value * _UNIT_NANOSECONDS[unit]
        at = found.end()
    if not body or total > MAX_DURATION_NANOSECONDS + (1 if text.startswith("-") else 0):
        raise ValueError(problem)
    seconds = float(total / 10**9)
    return -seconds if text.startswith("-") else seconds


def duration_seconds(value: Any) -> Any:
    if isinstance(value, str):
        try:
            seconds = go_duration_seconds(value)
        except ValueError as exc:
            raise PydanticCustomError("duration", str(exc)) from None
        if seconds <= 0:
            raise PydanticCustomError("duration", f'must be positive (got "{value}")')
        return seconds
    raise PydanticCustomError("duration", f'must be a duration such as "15s" (got {value!r})')


Duration = Annotated[float, Field(json_schema_extra={"format": "duration"})]
