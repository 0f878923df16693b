"""What kube's DRA environment (kube's base CEL environment of v1.36) offers beyond the
libraries the cluster selectors share (`placement.cel.k8s`): the sets extension
(`sets.contains`, `sets.equivalent`, `sets.intersects`) and semver's normalizing forms
(`semver("v1.0", true)`, `isSemver("v1.0", true)`: a `v` prefix dropped, missing minor and patch
read as 0, leading zeros dropped)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from placement.cel.overloads import Function, Meter

__all__ = ["extras"]


def extras(functions: Sequence[Function], meter: Meter) -> list[Function]:
    """The overloads to add to `functions` (the shared libraries, bound to `meter`)."""
    by_overload = {f.overload: f.impl for f in functions}
    to_semver = by_overload["string_to_semver"]
    is_semver = by_overload["is_semver_string"]

    def normalized(call: Callable[[str], Any]) -> Callable[[str, bool], Any]:
        return lambda text, normalize: call(_normalize(text) if normalize else text)

    def members(items: Sequence[Any]) -> list[Any]:
        meter.charge(len(items))
        return [_key(item) for item in items]

    def contains(items: list[Any], wanted: list[Any]) -> bool:
        have = members(items)
        return all(key in have for key in members(wanted))

    def equivalent(a: list[Any], b: list[Any]) -> bool:
        x, y = members(a), members(b)
        return all(key in y for key in x) and all(key in x for key in y)

    def intersects(a: list[Any], b: list[Any]) -> bool:
        y = members(b)
        return any(key in y for key in members(a))

    pair, flagged = ("list", "list"), ("string", "bool")
    return [
        Function("semver", "string_bool_to_semver", flagged, "opaque", normalized(to_semver)),
        Function("isSemver", "is_semver_string_bool", flagged, "bool", normalized(is_semver)),
        Function("sets.contains", "list_sets_contains_list", pair, "bool", contains),
        Function("sets.equivalent", "list_sets_equivalent_list", pair, "bool", equivalent),
        Function("sets.intersects", "list_sets_intersects_list", pair, "bool", intersects),
    ]


def _key(value: Any) -> Any:
    """CEL's equality as Python's: numbers of any kind by value, a bool never a number."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    return (type(value).__name__, value)


def _normalize(text: str) -> str:
    """kube's normalization of a version before it is parsed."""
    text = text.removeprefix("v")
    cut = min((i for i in (text.find("-"), text.find("+")) if i >= 0), default=len(text))
    core, rest = text[:cut], text[cut:]
    parts = core.split(".")
    parts = [p.lstrip("0") or "0" if p.isdigit() else p for p in parts]
    while len(parts) < 3:
        parts.append("0")
    return ".".join(parts) + rest
