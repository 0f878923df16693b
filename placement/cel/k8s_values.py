"""The rules behind the Kubernetes CEL types, apart from the functions that expose them
(`placement.cel.k8s`): Semantic Versioning precedence, IP link-local multicast, the regex
cache, and OCM's cost for what `parseJSON` builds. Quantities: `placement.cel.quantity`."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

__all__ = [
    "SEMVER",
    "link_local_multicast",
    "regex",
    "semver_key",
    "structure_cost",
]

_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def regex(pattern: str) -> re.Pattern[str]:
    """A pattern compiled once (RE2's syntax is, for what selectors use, Python's)."""
    found = _REGEX_CACHE.get(pattern)
    if found is None:
        if len(_REGEX_CACHE) > 256:
            _REGEX_CACHE.clear()
        found = _REGEX_CACHE[pattern] = re.compile(pattern)
    return found


def link_local_multicast(a: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's `IsLinkLocalMulticast`: 224.0.0.0/24 or ff02::/16."""
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.ip_network("224.0.0.0/24")
    return a in ipaddress.ip_network("ff02::/16")


SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


def semver_key(text: str) -> tuple[Any, ...]:
    """Semantic Versioning 2.0.0 precedence: numbers, then a release above its pre-releases,
    pre-release identifiers numeric (lower) before alphanumeric; build metadata ignored."""
    match = SEMVER.fullmatch(text)
    if match is None:
        raise ValueError(f"invalid semver: {text}")
    major, minor, patch = (int(match.group(i)) for i in (1, 2, 3))
    pre = match.group(4)
    if pre is None:
        return (major, minor, patch, (1,))
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (major, minor, patch, (0, parts))


def structure_cost(value: Any) -> int:
    """OCM's parseJSON charge for its result: 1 per scalar, 30 + members per map, 10 +
    elements per list (cel-go's creation base costs)."""
    if isinstance(value, dict):
        return 30 + sum(structure_cost(v) for v in value.values())
    if isinstance(value, list):
        return 10 + sum(structure_cost(v) for v in value)
    return 1
