"""OCM's CEL environment, function by function, with the shape each overload is declared with
(member or global) in the code OCM vendors: cel-go's standard library, strings extension and
optional types (library v2), Kubernetes' lists, regex, URLs, quantity, IP, CIDR, format and
semver libraries (semver without its normalize overloads: OCM calls `SemverLib()` without a
version), and OCM's `parseJSON` and `scores` (both member functions)."""

from __future__ import annotations

import pytest

from placement.cel import CelCompileError, compile_selector
from placement.snapshot.fleet_snapshot import unstructured
from placement.testing import cluster

CLUSTER = unstructured(cluster("c1", labels={"v": "1.30.2"}, cpu="4", memory="8Gi"))


def matched(expression: str) -> bool:
    result = compile_selector([expression]).evaluate(CLUSTER)
    assert result.error is None, result
    return result.matched


# Each is true in OCM's environment.
ACCEPTED = [
    # OCM: parseJSON is a member function
    "'{\"a\": [1, 2]}'.parseJSON().a[1] == 2",
    "type('{\"n\": 2}'.parseJSON().n) == double",  # Go's json: every number a float64
    # Kubernetes quantity: sign is global, the rest members
    'sign(quantity("-1")) == -1',
    'quantity("1").add(1).isInteger() && quantity("2").sub(1).compareTo(quantity("1")) == 0',
    # IP and CIDR, with the string conversions
    'string(ip("2001:0db8::1")) == "2001:db8::1"',
    'string(ip("10.0.0.1")) == "10.0.0.1"',
    'string(cidr("10.0.0.1/8")) == "10.0.0.1/8"',
    'string(cidr("2001:0db8::/32")) == "2001:db8::/32"',
    'cidr("2001:0db8::1/64").ip() == ip("2001:db8::1")',
    'cidr("10.0.0.0/8").containsIP("10.1.2.3") && cidr("10.0.0.0/8").containsIP(ip("10.1.2.3"))',
    'cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")',
    'cidr("10.1.2.3/8").masked() == cidr("10.0.0.0/8") && cidr("10.0.0.0/8").prefixLength() == 8',
    'ip.isCanonical("10.0.0.1") && !ip.isCanonical("2001:0db8::1")',
    'ip("127.0.0.1").isLoopback() && ip("10.0.0.1").family() == 4',
    # format: format.named gives an optional Format
    'format.named("dns1123Label").hasValue()',
    '!format.named("nope").hasValue()',
    'format.named("dns1123Label").value().validate("my-name") == optional.none()',
    'format.named("dns1123Label").value().validate("My_Name").hasValue()',
    'format.named("nope").orValue(format.labelValue()).validate("ok") == optional.none()',
    'format.dns1123Subdomain().validate("a.b") == optional.none()',
    # semver: equality ignores build metadata, as semver.Version.EQ
    'semver("1.2.3+build.1") == semver("1.2.3+other")',
    'semver("1.2.3-rc.1").isLessThan(semver("1.2.3"))',
    'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
    'isSemver("1.2.3") && !isSemver("v1.2.3") && !isSemver("1.2")',
    '!isSemver("18446744073709551616.0.0")',  # past uint64
    # lists and regex (members)
    "[3, 1].max() == 3 && [1, 2].sum() == 3 && [1, 2].isSorted() && [1, 2].indexOf(2) == 1",
    "'a1b22'.findAll('[0-9]+') == ['1', '22'] && 'a1'.find('[0-9]') == '1'",
    # URLs
    'url("https://h:8/p?q=1").getPort() == "8" && isURL("https://h")',
    # cel-go optional library v2
    "[1, 2].first() == optional.of(1) && [1, 2].last() == optional.of(2)",
    "[].first() == optional.none()",
    "optional.unwrap([optional.of(1), optional.none()]) == [1]",
    "[optional.none(), optional.of(2)].unwrapOpt() == [2]",
    "optional.of(1).optFlatMap(x, optional.of(x + 1)) == optional.of(2)",
    # cel-go strings extension
    "'abc'.reverse() == 'cba' && strings.quote('a') == '\"a\"' && '%d'.format([1]) == '1'",
]


@pytest.mark.parametrize("expression", ACCEPTED)
def test_ocm_accepts(expression: str) -> None:
    assert matched(expression)


# Each is a compile error in OCM's environment (the placement is Misconfigured).
REFUSED = [
    pytest.param("parseJSON('1') == 1", id="parseJSON-is-member-only"),
    pytest.param('quantity("1").sign() == 1', id="sign-is-global-only"),
    pytest.param('semver("v1.0", true) == semver("1.0.0")', id="no-semver-normalize"),
    pytest.param('isSemver("v1.0", true)', id="no-isSemver-normalize"),
    pytest.param("scores(managedCluster, 'x').size() == 0", id="scores-is-member-only"),
    pytest.param("math.greatest(1, 2) == 2", id="no-math-extension"),
    pytest.param("sets.contains([1], [1])", id="no-sets-extension"),
    pytest.param("cel.bind(x, 1, x == 1)", id="no-bindings-extension"),
    pytest.param("[1].all(i, v, v == 1)", id="no-two-variable-comprehensions"),
    pytest.param("[2, 1].sort() == [1, 2]", id="no-cel-go-lists-extension"),
    pytest.param("1 < 1.5", id="no-cross-type-numeric-comparisons"),
    # Kubernetes-typed values are no ints or strings to the checker
    pytest.param("sign(1) == 1", id="sign-of-an-int"),
    pytest.param('quantity("1") == 1', id="quantity-equals-int"),
    pytest.param('quantity("1").compareTo(1) == 0', id="compare-to-an-int"),
    pytest.param('quantity("1").isGreaterThan("0")', id="greater-than-a-string"),
    pytest.param('"1.0.0".major() == 1', id="major-of-a-string"),
    pytest.param('ip("10.0.0.1") == "10.0.0.1"', id="ip-equals-string"),
]


@pytest.mark.parametrize("expression", REFUSED)
def test_ocm_refuses_at_compile_time(expression: str) -> None:
    with pytest.raises(CelCompileError, match="compilation failed"):
        compile_selector([expression])


@pytest.mark.parametrize("text", ["NaN", "Infinity", "1e400", "{"])
def test_parse_json_refuses_what_go_refuses(text: str) -> None:
    result = compile_selector([f"'{text}'.parseJSON() != null"]).evaluate(CLUSTER)
    assert not result.matched
    assert result.error is not None and result.error.startswith("failed to parse json: ")
