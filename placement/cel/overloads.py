"""What the CEL libraries of `placement.cel.k8s` are made of: one overload (`Function`), the cost
meter every function charges (`Meter`), and the tagged maps that carry the values of the
Kubernetes types (Quantity, URL, IP, CIDR, Semver, Format) through the engine.

The engine cannot carry an opaque Python object between calls, so such a value travels as a
small map tagged with `OPAQUE`; a member function checks the tag (`unwrap`) and fails with
cel-go's "no such overload" when it is handed something else.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["OPAQUE", "Function", "Meter", "NoOverloadError", "kind_of", "opaque", "unwrap"]

OPAQUE = "@kubernetes"
"""The tag key of a Kubernetes-typed value (its type name is the tag's value)."""


class Meter:
    """The cost an evaluation has spent; `charge` raises once `limit` is passed, which makes
    the call an error inside the engine and stops the work (see `source.instrument`)."""

    __slots__ = ("cost", "limit")

    def __init__(self) -> None:
        self.cost = 0
        self.limit = 0

    def reset(self, limit: int, base: int) -> None:
        self.cost = base
        self.limit = limit

    def charge(self, amount: float) -> None:
        self.cost += math.ceil(amount)
        if self.cost > self.limit:
            raise OverflowError("operation cancelled: actual cost limit exceeded")


@dataclass(frozen=True)
class Function:
    """One overload: name, id, parameter kinds (`receiver` first for member functions),
    result kind and implementation; kinds are 'string', 'int', 'bool', 'double', 'list', 'map',
    'dyn' and 'opaque' (a Kubernetes-typed value: to the checker a map, so that an int or a
    string where one is expected is a compile error, as in cel-go)."""

    name: str
    overload: str
    params: tuple[str, ...]
    result: str
    impl: Callable[..., Any]
    member: bool = False


class NoOverloadError(TypeError):
    """cel-go's words for a function applied to a value of the wrong type."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no such overload: {name}")


def opaque(kind: str, value: Any) -> dict[str, Any]:
    """A value of Kubernetes type `kind`, tagged."""
    return {OPAQUE: kind, "value": value}


def unwrap(value: Any, kind: str, function: str) -> Any:
    """The value inside a tagged `kind`; cel-go's "no such overload" for anything else."""
    if isinstance(value, dict) and value.get(OPAQUE) == kind:
        return value["value"]
    raise NoOverloadError(function)


def kind_of(value: Any) -> str | None:
    """The Kubernetes type of a tagged value, None for any other value."""
    return value.get(OPAQUE) if isinstance(value, dict) else None
