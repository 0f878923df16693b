"""Errors of the `apis` layer, and the translation of pydantic's errors into messages that
name the object, the field path on the wire and the rule, for example
`Placement ns1/web: spec.prioritizerPolicy.configurations[0].weight: must be between -10 and 10
(got 11)`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

__all__ = [
    "FieldProblem",
    "ModelError",
    "ObjectValidationError",
    "UnknownKindError",
    "field_path",
    "problems_from",
]


class ModelError(Exception):
    """Base of every error raised by the `apis` layer."""


@dataclass(frozen=True)
class FieldProblem:
    """One rule one field breaks. `path` is empty for a problem with the whole document."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ObjectValidationError(ModelError):
    """An object that breaks its kind's validation rules; one line per problem."""

    def __init__(self, object_id: str, problems: Sequence[FieldProblem]) -> None:
        self.object_id = object_id
        self.problems = list(problems)
        super().__init__(str(self))

    def lines(self) -> list[str]:
        prefix = f"{self.object_id}: " if self.object_id else ""
        return [f"{prefix}{problem}" for problem in self.problems]

    def __str__(self) -> str:
        return "\n".join(self.lines())


class UnknownKindError(ModelError):
    """A document whose apiVersion and kind name no model of this project."""

    def __init__(self, api_version: Any, kind: Any) -> None:
        self.api_version = api_version
        self.kind = kind
        super().__init__(f"unknown kind {kind!r} (apiVersion {api_version!r})")


def field_path(loc: Sequence[int | str]) -> str:
    """`('spec', 'predicates', 0, 'labelSelector')` -> `spec.predicates[0].labelSelector`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


_ENUM_VALUE = re.compile(r"'((?:[^'\\]|\\.)*)'")

_TYPE_NAMES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "string_type": "a string",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dict_type": "an object",
    "list_type": "a list",
    "float_type": "a number",
}


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    got = error.get("input")
    if kind == "missing":
        return "is required"
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]} (got {got!r})"
    if kind == "literal_error":
        allowed = _ENUM_VALUE.findall(str(ctx.get("expected", "")))
        return f"must be one of {', '.join(allowed)} (got {got!r})"
    if kind == "string_pattern_mismatch":
        return f"must match the pattern {ctx.get('pattern')} (got {got!r})"
    if kind == "too_long":
        size = len(got) if hasattr(got, "__len__") else got
        return f"must have at most {ctx.get('max_length')} items (got {size})"
    if kind == "too_short":
        size = len(got) if hasattr(got, "__len__") else got
        return f"must have at least {ctx.get('min_length')} items (got {size})"
    if kind == "string_too_long":
        size = len(got) if isinstance(got, str) else got
        return f"must be at most {ctx.get('max_length')} characters (got {size})"
    if kind == "string_too_short":
        if ctx.get("min_length") == 1:
            return "must not be empty"
        return f"must be at least {ctx.get('min_length')} characters (got {got!r})"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')} (got {got!r})"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le')} (got {got!r})"
    # Our own error types (ranges, quantities, times, labels) already carry the full message.
    return error["msg"]


def problems_from(error: ValidationError, prefix: Sequence[int | str] = ()) -> list[FieldProblem]:
    """The problems of a pydantic ValidationError, with wire paths and our wording."""
    return [
        FieldProblem(field_path([*prefix, *item["loc"]]), _message(item))
        for item in error.errors(include_url=False)
    ]
