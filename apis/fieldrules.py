"""The five kinds of `field.Error` kube-apiserver's validation returns, built as FieldProblems
whose message is the error body (`Required value`, `Invalid value: 0: must be greater than
zero`...), and two readers of a decoded document that treat a wrong type as absent (the model
reports the type).

Shared by the validation modules of the pod-level kinds (`apis.kubevalidation`,
`apis.podspecvalidation`, `apis.storagevalidation`)."""

from __future__ import annotations

from typing import Any

from apis.errors import FieldProblem
from apis.fielderrors import go_quote, go_value

__all__ = [
    "as_dict",
    "as_int",
    "as_list",
    "duplicate",
    "forbidden",
    "invalid",
    "not_supported",
    "required",
]


def invalid(path: str, value: object, detail: str) -> FieldProblem:
    return FieldProblem(path, f"Invalid value: {go_value(value)}: {detail}")


def required(path: str, detail: str = "") -> FieldProblem:
    return FieldProblem(path, f"Required value: {detail}" if detail else "Required value")


def forbidden(path: str, detail: str) -> FieldProblem:
    return FieldProblem(path, f"Forbidden: {detail}")


def duplicate(path: str, value: object) -> FieldProblem:
    return FieldProblem(path, f"Duplicate value: {go_value(value)}")


def not_supported(path: str, value: object, allowed: tuple[str, ...]) -> FieldProblem:
    listed = ", ".join(go_quote(v) for v in allowed)
    return FieldProblem(path, f"Unsupported value: {go_value(value)}: supported values: {listed}")


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int | None:
    """An integer field's value; None when absent or not an integer (bool is no integer)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
