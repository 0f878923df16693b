"""The Kubernetes CEL libraries OCM enables, and OCM's own, written on top of the engine.

The engine brings CEL's standard library, the strings extension and optional types. What
Kubernetes adds (`k8s.io/apiserver/pkg/cel/library`: lists, regex, URLs, quantity, IP, CIDR,
format, semver) and what OCM adds (`parseJSON`) is written here in Python, following the
Kubernetes CEL documentation's semantics; `build(meter)` returns every overload.

The values of the Kubernetes types travel as tagged maps (`placement.cel.overloads`); the rules
behind them are in `placement.cel.k8s_values` and the format validators in
`placement.cel.formats`. Every function also charges the evaluation's meter with cel-go's cost
for it (string traversals at 0.1 per character, list walks per element).
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from placement.cel import quantity
from placement.cel.formats import FORMATS
from placement.cel.k8s_values import (
    SEMVER,
    link_local_multicast,
    regex,
    semver_key,
    structure_cost,
)
from placement.cel.overloads import Function, Meter, NoOverloadError, kind_of, opaque, unwrap
from placement.cel.quantity import compare_quantities

__all__ = ["FUNCTIONS", "build"]

_TRAVERSAL = 0.1  # cel-go's StringTraversalCostFactor


def build(meter: Meter) -> list[Function]:
    """Every overload, bound to `meter`."""

    def traverse(text: str | bytes) -> None:
        meter.charge(len(text) * _TRAVERSAL)

    # --- lists ------------------------------------------------------------------------------

    def comparable(items: Sequence[Any], function: str) -> list[Any]:
        meter.charge(len(items) + 1)
        if any(isinstance(i, bool) for i in items) and not all(isinstance(i, bool) for i in items):
            raise NoOverloadError(function)
        return list(items)

    def is_sorted(items: list[Any]) -> bool:
        values = comparable(items, "isSorted")
        try:
            return all(a <= b for a, b in itertools.pairwise(values))
        except TypeError as exc:
            raise NoOverloadError("isSorted") from exc

    def list_sum(items: list[Any]) -> Any:
        values = comparable(items, "sum")
        if not all(isinstance(v, int | float) for v in values):
            raise NoOverloadError("sum")
        return sum(values) if values else 0

    def list_min(items: list[Any]) -> Any:
        values = comparable(items, "min")
        if not values:
            raise ValueError("min called on empty list")
        return min(values)

    def list_max(items: list[Any]) -> Any:
        values = comparable(items, "max")
        if not values:
            raise ValueError("max called on empty list")
        return max(values)

    def index_of(items: list[Any], item: Any) -> int:
        meter.charge(len(items) + 1)
        for i, value in enumerate(items):
            if value == item and type(value) is type(item):
                return i
        return -1

    def last_index_of(items: list[Any], item: Any) -> int:
        meter.charge(len(items) + 1)
        for i in range(len(items) - 1, -1, -1):
            if items[i] == item and type(items[i]) is type(item):
                return i
        return -1

    # --- regex ------------------------------------------------------------------------------

    def compiled(pattern: str) -> re.Pattern[str]:
        traverse(pattern)
        try:
            return regex(pattern)
        except re.error as exc:
            raise ValueError(f"error parsing regexp: {exc}") from exc

    def find(text: str, pattern: str) -> str:
        traverse(text)
        match = compiled(pattern).search(text)
        return match.group() if match else ""

    def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
        traverse(text)
        found = [m.group() for m in compiled(pattern).finditer(text)]
        return found if limit < 0 else found[:limit]

    # --- URLs -------------------------------------------------------------------------------

    def parse_url(text: str) -> Any:
        traverse(text)
        parts = urlsplit(text)
        # Go's url.ParseRequestURI: an absolute URI or an absolute path, no fragment.
        opaque = parts.scheme and not text[len(parts.scheme) + 1 :].startswith("/")
        if not (parts.scheme or text.startswith("/")) or opaque or "#" in text or " " in text:
            raise ValueError(f"URL parse error during conversion from string: {text}")
        return parts

    def url(text: str) -> dict[str, Any]:
        parse_url(text)
        return opaque("URL", text)

    def is_url(text: str) -> bool:
        try:
            parse_url(text)
        except ValueError:
            return False
        return True

    def url_part(function: str) -> Callable[[Any], Any]:
        def part(value: Any) -> Any:
            parts = urlsplit(unwrap(value, "URL", function))
            if function == "getScheme":
                return parts.scheme
            if function == "getHost":
                return parts.netloc.rpartition("@")[2]
            if function == "getHostname":
                host = parts.netloc.rpartition("@")[2]
                if host.startswith("["):
                    return host[1 : host.find("]")]
                return host.rpartition(":")[0] if ":" in host else host
            if function == "getPort":
                host = parts.netloc.rpartition("@")[2]
                tail = host[host.find("]") + 1 :] if host.startswith("[") else host
                return tail.rpartition(":")[2] if ":" in tail else ""
            if function == "getEscapedPath":
                return parts.path
            query = parse_qs(parts.query, keep_blank_values=True)
            return {k: list(v) for k, v in query.items()}

        return part

    # --- comparisons shared by quantity and semver -------------------------------------------

    def compare(function: str) -> Callable[[Any, Any], int]:
        def order(a: Any, b: Any) -> int:
            kind = kind_of(a)
            if kind == "Quantity" and kind_of(b) == "Quantity":
                return compare_quantities(a, b, function)
            if kind == "Semver" and kind_of(b) == "Semver":
                x, y = semver_key(a["value"]), semver_key(b["value"])
                return (x > y) - (x < y)
            raise NoOverloadError(function)

        return order

    compare_to = compare("compareTo")
    less, greater = compare("isLessThan"), compare("isGreaterThan")

    # --- IP and CIDR ------------------------------------------------------------------------

    def parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        traverse(text)
        if "%" in text:
            raise ValueError(f"IP Address {text!r} with zone value is not allowed")
        try:
            address = ipaddress.ip_address(text)
        except ValueError as exc:
            raise ValueError(
                f"IP Address {text!r} parse error during conversion from string"
            ) from exc
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            raise ValueError(f"IPv4-mapped IPv6 address {text!r} is not allowed")
        return address

    def ip(text: str) -> dict[str, Any]:
        return opaque("IP", str(parse_ip(text)))

    def is_ip(text: str) -> bool:
        try:
            parse_ip(text)
        except ValueError:
            return False
        return True

    def ip_is_canonical(text: str) -> bool:
        return str(parse_ip(text)) == text

    def address(value: Any, function: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        return ipaddress.ip_address(unwrap(value, "IP", function))

    def ip_test(function: str, test: Callable[[Any], bool]) -> Callable[[Any], bool]:
        return lambda value: test(address(value, function))

    def global_unicast(a: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        if a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local:
            return False
        return not (isinstance(a, ipaddress.IPv4Address) and int(a) == 0xFFFFFFFF)

    def parse_cidr(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        traverse(text)
        try:
            network = ipaddress.ip_network(text, strict=False)
            parse_ip(text.partition("/")[0])
        except ValueError as exc:
            raise ValueError(
                f"network address parse error during conversion from string: {exc}"
            ) from exc
        if "/" not in text:
            raise ValueError("network address parse error during conversion from string")
        return network

    def cidr(text: str) -> dict[str, Any]:
        parse_cidr(text)
        return opaque("CIDR", text)

    def is_cidr(text: str) -> bool:
        try:
            parse_cidr(text)
        except ValueError:
            return False
        return True

    def network(value: Any, function: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(unwrap(value, "CIDR", function), strict=False)

    def contains_ip(value: Any, other: Any) -> bool:
        net = network(value, "containsIP")
        target = parse_ip(other) if isinstance(other, str) else address(other, "containsIP")
        return target.version == net.version and target in net

    def contains_cidr(value: Any, other: Any) -> bool:
        net = network(value, "containsCIDR")
        text = other if isinstance(other, str) else unwrap(other, "CIDR", "containsCIDR")
        inner = parse_cidr(text)
        return inner.version == net.version and inner.subnet_of(net)  # type: ignore[arg-type]

    def cidr_ip(value: Any) -> dict[str, Any]:
        text = unwrap(value, "CIDR", "ip").partition("/")[0]
        return opaque("IP", str(ipaddress.ip_address(text)))

    def to_string(value: Any) -> str:
        """`string(ip)` and `string(cidr)`: Go's netip forms (the CIDR's address unmasked)."""
        kind = kind_of(value)
        if kind == "IP":
            return str(value["value"])
        if kind == "CIDR":
            text, _, bits = str(value["value"]).partition("/")
            return f"{ipaddress.ip_address(text)}/{int(bits)}"
        raise NoOverloadError("string")

    def cidr_masked(value: Any) -> dict[str, Any]:
        return opaque("CIDR", str(network(value, "masked")))

    def prefix_length(value: Any) -> int:
        return network(value, "prefixLength").prefixlen

    # --- semver -----------------------------------------------------------------------------

    def valid_semver(text: str) -> bool:
        """blang/semver's Parse: SemVer 2.0.0 with uint64 version numbers."""
        traverse(text)
        match = SEMVER.fullmatch(text)
        return match is not None and all(int(match.group(i)) < 2**64 for i in (1, 2, 3))

    def semver(text: str) -> dict[str, Any]:
        if not valid_semver(text):
            raise ValueError(f"invalid semver: {text}")
        # Equality is semver.Version.EQ, which ignores build metadata: it is not kept.
        return opaque("Semver", text.partition("+")[0])

    def semver_part(index: int, function: str) -> Callable[[Any], int]:
        def part(value: Any) -> int:
            number = int(semver_key(unwrap(value, "Semver", function))[index])
            return number - 2**64 if number >= 2**63 else number  # Go's int64(uint64)

        return part

    # --- format -----------------------------------------------------------------------------

    def format_validate(value: Any, text: str) -> list[str]:
        traverse(text)
        return FORMATS[unwrap(value, "Format", "validate")](text)

    format_functions = [
        Function(f"format.{name}", f"format_{name}", (), "opaque", _format_of(name))
        for name in sorted(FORMATS)
    ]

    # --- OCM: parseJSON ---------------------------------------------------------------------

    def parse_json(text: str) -> Any:
        traverse(text)
        try:
            # Go's json.Unmarshal into interface{}: every number a float64, no NaN/Infinity
            result = json.loads(
                text,
                parse_int=_json_number,
                parse_float=_json_number,
                parse_constant=_json_constant,
            )
        except ValueError as exc:
            raise ValueError(f"failed to parse json: {exc}") from exc
        meter.charge(structure_cost(result))
        return result

    url_functions = [
        Function(name, f"url_{name}", ("opaque",), kind, url_part(name), True)
        for name, kind in (
            ("getScheme", "string"),
            ("getHost", "string"),
            ("getHostname", "string"),
            ("getPort", "string"),
            ("getEscapedPath", "string"),
            ("getQuery", "map"),
        )
    ]
    ip_tests = [
        Function(name, f"ip_{name}", ("opaque",), "bool", ip_test(name, test), True)
        for name, test in (
            ("isUnspecified", lambda a: a.is_unspecified),
            ("isLoopback", lambda a: a.is_loopback),
            ("isLinkLocalMulticast", link_local_multicast),
            ("isLinkLocalUnicast", lambda a: a.is_link_local),
            ("isGlobalUnicast", global_unicast),
        )
    ]
    return [
        Function("isSorted", "list_is_sorted", ("list",), "bool", is_sorted, True),
        Function("sum", "list_sum", ("list",), "dyn", list_sum, True),
        Function("min", "list_min", ("list",), "dyn", list_min, True),
        Function("max", "list_max", ("list",), "dyn", list_max, True),
        Function("indexOf", "list_index_of", ("list", "dyn"), "int", index_of, True),
        Function("lastIndexOf", "list_last_index_of", ("list", "dyn"), "int", last_index_of, True),
        Function("find", "string_find", ("string", "string"), "string", find, True),
        Function("findAll", "string_find_all", ("string", "string"), "list", find_all, True),
        Function(
            "findAll", "string_find_all_n", ("string", "string", "int"), "list", find_all, True
        ),
        Function("url", "string_to_url", ("string",), "opaque", url),
        Function("isURL", "is_url_string", ("string",), "bool", is_url),
        *url_functions,
        *quantity.functions(meter),
        Function("compareTo", "opaque_compare_to", ("opaque", "opaque"), "int", compare_to, True),
        Function(
            "isLessThan",
            "opaque_less",
            ("opaque", "opaque"),
            "bool",
            lambda a, b: less(a, b) < 0,
            True,
        ),
        Function(
            "isGreaterThan",
            "opaque_greater",
            ("opaque", "opaque"),
            "bool",
            lambda a, b: greater(a, b) > 0,
            True,
        ),
        Function("ip", "string_to_ip", ("string",), "opaque", ip),
        Function("isIP", "is_ip", ("string",), "bool", is_ip),
        Function("ip.isCanonical", "ip_is_canonical", ("string",), "bool", ip_is_canonical),
        Function(
            "family",
            "ip_family",
            ("opaque",),
            "int",
            lambda v: address(v, "family").version,
            True,
        ),
        *ip_tests,
        Function("cidr", "string_to_cidr", ("string",), "opaque", cidr),
        Function("isCIDR", "is_cidr", ("string",), "bool", is_cidr),
        Function("containsIP", "cidr_contains_ip", ("opaque", "dyn"), "bool", contains_ip, True),
        Function(
            "containsCIDR", "cidr_contains_cidr", ("opaque", "dyn"), "bool", contains_cidr, True
        ),
        Function("ip", "cidr_ip", ("opaque",), "opaque", cidr_ip, True),
        Function("masked", "cidr_masked", ("opaque",), "opaque", cidr_masked, True),
        Function("prefixLength", "cidr_prefix_length", ("opaque",), "int", prefix_length, True),
        Function("semver", "string_to_semver", ("string",), "opaque", semver),
        Function("isSemver", "is_semver_string", ("string",), "bool", valid_semver),
        Function("major", "semver_major", ("opaque",), "int", semver_part(0, "major"), True),
        Function("minor", "semver_minor", ("opaque",), "int", semver_part(1, "minor"), True),
        Function("patch", "semver_patch", ("opaque",), "int", semver_part(2, "patch"), True),
        *format_functions,
        Function("validate", "format_validate", ("opaque", "string"), "dyn", format_validate, True),
        Function("parseJSON", "parse_json_string", ("string",), "dyn", parse_json, True),
        Function("string", "ip_to_string", ("opaque",), "string", to_string),
        # cel-go's result is an optional: `source.instrument` wraps the call in
        # optional.ofNonZeroValue, and an unknown name gives {} (none)
        Function("format.named", "format-named", ("string",), "dyn", _format_named),
    ]


FUNCTIONS = build
"""`build(meter)`: the overloads the environment declares."""


def _json_number(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"cannot unmarshal number {text} into Go value of type float64")
    return number


def _json_constant(text: str) -> Any:
    raise ValueError(f"invalid character {text[0]!r} looking for beginning of value")


def _format_named(name: str) -> dict[str, Any]:
    return opaque("Format", name) if name in FORMATS else {}


def _format_of(name: str) -> Callable[[], dict[str, Any]]:
    return lambda: opaque("Format", name)
