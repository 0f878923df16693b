"""CEL selectors: every library family with the Kubernetes CEL documentation's examples,
OCM's own helper and integration cases, compile and runtime errors, the cost budgets and
`scores()` with present, missing and expired score objects."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from placement.cel import PER_CALL_LIMIT, CelCompileError, compile_selector
from placement.cel.source import instrument, score_names
from placement.snapshot.fleet_snapshot import unstructured
from placement.testing import NOW, cluster, score, snapshot

CLUSTER = unstructured(
    cluster(
        "c1",
        labels={"env": "prod", "region": "us-east-1", "version": "1.30.2"},
        claims={"kubeversion.open-cluster-management.io": "v1.30.2", "id": "x"},
        cpu="16",
        memory="64Gi",
    )
)


def verdict(expression: str, document: dict[str, Any] | None = None) -> bool:
    """Whether one expression accepts the cluster (a runtime error is False)."""
    return compile_selector([expression]).evaluate(document or CLUSTER).matched


# The Kubernetes CEL documentation's examples (kubernetes.io, "CEL in Kubernetes"), each
# written so that it is true.
KUBERNETES_EXAMPLES = [
    # lists
    "[1, 2, 3].isSorted()",
    "!['b', 'a'].isSorted()",
    "[1, 2, 3].sum() == 6",
    "[1, 2, 3].min() == 1",
    "[1, 2, 3].max() == 3",
    "[1, 2, 2, 3].indexOf(2) == 1",
    "[1, 2, 2, 3].lastIndexOf(2) == 2",
    # regex
    "'abc 123'.find('[0-9]+') == '123'",
    "'123 abc 456'.findAll('[0-9]+') == ['123', '456']",
    "'123 abc 456'.findAll('[0-9]+', 1) == ['123']",
    "'abc'.find('[0-9]+') == ''",
    # URLs
    "isURL('https://example.com/path')",
    "!isURL('example.com:80')",
    "url('https://example.com:80/').getHost() == 'example.com:80'",
    "url('https://example.com/').getHostname() == 'example.com'",
    "url('https://[::1]:80/').getHostname() == '::1'",
    "url('https://example.com:80/').getPort() == '80'",
    "url('https://example.com/').getPort() == ''",
    "url('https://example.com/path').getScheme() == 'https'",
    "url('https://example.com/path with spaces/').getEscapedPath() == '/path with spaces/'"
    " || !isURL('https://example.com/path with spaces/')",
    "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
    # quantity
    "isQuantity('1.3G')",
    "!isQuantity('1.3Gi ')",
    "quantity('50Mi').isGreaterThan(quantity('100M')) == false",
    "quantity('50M').isLessThan(quantity('100M'))",
    "quantity('50M').compareTo(quantity('100M')) == -1",
    "quantity('1.2G').add(quantity('0.8G')).isGreaterThan(quantity('1.9G'))",
    "quantity('1.2G').add(1) == quantity('1200000001')",
    "quantity('1.2G').sub(quantity('0.2G')) == quantity('1G')",
    "quantity('50k').asInteger() == 50000",
    "quantity('50k').isInteger()",
    "!quantity('9999999999999999999999999999999999999G').isInteger()",
    "quantity('50.703k').asApproximateFloat() == 50703.0",
    "sign(quantity('-1')) == -1 && sign(quantity('0')) == 0",
    # IP and CIDR
    "isIP('127.0.0.1')",
    "!isIP('127.0.0.1:80')",
    "ip('127.0.0.1').family() == 4",
    "ip('::1').family() == 6",
    "ip.isCanonical('127.0.0.1')",
    "!ip.isCanonical('2001:db8:0:0:0:0:2:1')",
    "ip('127.0.0.1').isLoopback()",
    "ip('0.0.0.0').isUnspecified()",
    "ip('224.0.0.1').isLinkLocalMulticast()",
    "ip('fe80::1').isLinkLocalUnicast()",
    "ip('192.168.0.1').isGlobalUnicast()",
    "isCIDR('192.168.0.0/24')",
    "!isCIDR('192.168.0.0')",
    "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
    "cidr('192.168.0.0/24').containsIP('192.168.0.1')",
    "!cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))",
    "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))",
    "cidr('192.168.0.0/24').containsCIDR('192.168.0.128/25')",
    "cidr('192.168.0.0/16').prefixLength() == 16",
    "cidr('192.168.0.1/24').ip() == ip('192.168.0.1')",
    "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
    # format
    "!format.dns1123Label().validate('my-label-name').hasValue()",
    "format.dns1123Label().validate('MY_LABEL').hasValue()",
    "!format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()",
    "!format.qualifiedName().validate('apps.example.com/my-name').hasValue()",
    # semver
    "isSemver('1.0.0')",
    "!isSemver('v1.0')",
    "semver('1.0.0').isLessThan(semver('1.1.0'))",
    "semver('1.0.0').isGreaterThan(semver('1.0.0-alpha'))",
    "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
    "semver('2.0.0').compareTo(semver('1.0.0')) == 1",
    "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
    # strings extension and optional types (cel-go ext)
    "'hello'.charAt(1) == 'e'",
    "'hello mellow'.indexOf('ello') == 1",
    "'hello mellow'.lastIndexOf('ello') == 7",
    "'TacoCat'.lowerAscii() == 'tacocat'",
    "'TacoCat'.upperAscii() == 'TACOCAT'",
    "'hello hello'.replace('he', 'we') == 'wello wello'",
    "'hello hello hello'.split(' ') == ['hello', 'hello', 'hello']",
    "'tacocat'.substring(4) == 'cat'",
    "'  \\ttrim\\n    '.trim() == 'trim'",
    "['hello', 'mellow'].join(' ') == 'hello mellow'",
    "'%s is %d'.format(['x', 1]) == 'x is 1'",
    "optional.of(1).hasValue() && !optional.none().hasValue()",
    "{'a': 1}.?b.orValue(5) == 5",
    # OCM's parseJSON
    '\'{"a": {"b": [1, 2]}}\'.parseJSON().a.b[1] == 2',
]


@pytest.mark.parametrize("expression", KUBERNETES_EXAMPLES)
def test_library_examples_are_true(expression: str) -> None:
    result = compile_selector([expression]).evaluate(CLUSTER)
    assert result.matched, (expression, result)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # OCM's helpers/cel_test.go and test/integration/placement cases
        ('managedCluster.metadata.labels["env"] == "prod"', True),
        ('managedCluster.metadata.labels["env"] == "dev"', False),
        ('managedCluster.metadata.labels["region"] == "us-west-1"', False),
        (
            "managedCluster.status.clusterClaims.exists(c, c.name == "
            '"kubeversion.open-cluster-management.io" && c.value.startsWith("v1.3"))',
            True,
        ),
        (
            'semver(managedCluster.metadata.labels["version"]).isGreaterThan(semver("1.29.0"))',
            True,
        ),
        ('managedCluster.metadata.labels["version"].matches("^1\\\\.30\\\\.")', True),
        (
            'quantity(managedCluster.status.allocatable.memory).isGreaterThan(quantity("32Gi"))',
            True,
        ),
        ('quantity(managedCluster.status.allocatable.cpu).isLessThan(quantity("8"))', False),
        ('managedCluster.metadata.?annotations.?x.orValue("none") == "none"', True),
        ('managedCluster.metadata.name.startsWith("c")', True),
    ],
)
def test_ocm_cases(expression: str, expected: bool) -> None:
    assert verdict(expression) is expected


def test_expressions_are_anded_and_the_first_false_one_is_named() -> None:
    selector = compile_selector(
        [
            'managedCluster.metadata.labels["env"] == "prod"',
            'managedCluster.metadata.labels["region"] == "us-west-1"',
            "true",
        ]
    )
    result = selector.evaluate(CLUSTER)
    assert (result.failed, result.error) == (1, None)
    assert compile_selector([]).evaluate(CLUSTER).matched  # no expressions: all match


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("invalid.expression", "undeclared reference to 'invalid"),
        ("managedCluster.metadata.name ==", "Syntax error"),
        ('1 + "a"', "found no matching overload for '_+_' applied to '(int, string)'"),
        ("quantity(1)", "found no matching overload for 'quantity'"),
        ("nope()", "undeclared reference to 'nope'"),
    ],
)
def test_compile_errors_use_ocms_prefix_and_name_the_expression(
    expression: str, words: str
) -> None:
    with pytest.raises(CelCompileError) as caught:
        compile_selector(["true", expression])
    assert caught.value.index == 1
    message = str(caught.value)
    assert message.startswith("compilation failed: ERROR: <input>:1:")
    assert words in message
    assert expression in message  # the source line under the error, as cel-go prints it


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ('managedCluster.metadata.labels["missing"] == "x"', "no such key: missing"),
        ('quantity("abc").isInteger()', "quantities must match"),
        ('semver("v1").major() == 1', "invalid semver"),
        ('quantity("1").isLessThan(semver("1.0.0"))', "no such overload"),
        ('"{".parseJSON().a == 1', "failed to parse json"),
        ("[1, 2].min() == 1 && [].min() == 0", "empty list"),
        ("1", "int, not bool"),
    ],
)
def test_runtime_errors_reject_the_cluster_and_say_why(expression: str, words: str) -> None:
    result = compile_selector([expression]).evaluate(CLUSTER)
    assert result.failed == 0
    assert result.error is not None and words in result.error


def test_a_false_result_is_not_an_error() -> None:
    result = compile_selector(["false"]).evaluate(CLUSTER)
    assert (result.failed, result.error) == (0, None)


NUMBERS = "[" + ", ".join(str(i) for i in range(1, 101)) + "]"


def test_the_per_call_limit_stops_a_runaway_expression() -> None:
    body = "[" + ", ".join(["a", "b"] * 60) + "].size() > 0"
    ninety = "[" + ", ".join(str(i) for i in range(90)) + "]"
    nested = f"{ninety}.all(a, {ninety}.all(b, {body}))"
    result = compile_selector([nested]).evaluate(CLUSTER)
    assert result.failed == 0
    assert result.error == "operation cancelled: actual cost limit exceeded"
    assert result.cost > PER_CALL_LIMIT


def test_the_engine_caps_comprehension_iterations() -> None:
    # A difference from cel-go (docs/architecture.md): Google's C++ runtime stops nested loops
    # past its iteration budget even when their cost would fit.
    nested = f"{NUMBERS}.all(a, {NUMBERS}.all(b, {NUMBERS}.all(c, a + b + c > 0)))"
    result = compile_selector([nested]).evaluate(CLUSTER)
    assert result.failed == 0
    assert result.error is not None and "Iteration budget exceeded" in result.error


def test_the_total_budget_is_shared_by_the_expressions_of_a_selector() -> None:
    # Each expression costs under the per-call limit; together they pass 10,000,000.
    body = "[" + ", ".join(["a", "b"] * 15) + "].size() > 0"
    ninety = "[" + ", ".join(str(i) for i in range(90)) + "]"  # the engine's loop cap: 10,000
    heavy = f"{ninety}.all(a, {ninety}.all(b, {body}))"
    one = compile_selector([heavy]).evaluate(CLUSTER)
    assert one.matched and 200_000 < one.cost < PER_CALL_LIMIT
    count = 10_000_000 // one.cost + 2
    many = compile_selector([heavy] * count).evaluate(CLUSTER)
    assert many.failed is not None and many.failed < count
    assert many.error is not None and many.error.startswith("cost budget exceeded")


def test_instrumented_source_keeps_values() -> None:
    source = "[1, 2].map(x, x * 2) == [2, 4] && [[1], [2]].all(l, l.exists(y, y > 0))"
    assert "ocmCostMeter_" in instrument(source)
    assert verdict(source)
    assert verdict("[1, 2, 3].filter(x, x > 1).map(x, x > 2, x * 10) == [30]")
    assert verdict("[1, 2, 3].exists_one(x, x == 2)")


def scores_fleet(valid_until_past: bool) -> Any:
    until = NOW - timedelta(hours=1) if valid_until_past else None
    return snapshot(
        [
            cluster("a"),
            cluster("b"),
            score("a", "cpu-ratio", {"cpu": 80, "memory": 20}, valid_until=until),
        ]
    )


@pytest.mark.parametrize("expired", [False, True], ids=["present", "expired"])
def test_scores_reads_the_score_object_of_the_clusters_namespace(expired: bool) -> None:
    fleet = scores_fleet(expired)
    assert fleet.cel is not None
    selector = compile_selector(
        ['managedCluster.scores("cpu-ratio").exists(s, s.name == "cpu" && s.value > 50)']
    )
    a = selector.evaluate(fleet.cel.document("a")[1], fleet.cel.scores)
    assert a.matched  # validUntil is not looked at, as in OCM


def test_scores_of_a_missing_object_is_an_error_and_no_match() -> None:
    fleet = scores_fleet(False)
    assert fleet.cel is not None
    selector = compile_selector(['managedCluster.scores("cpu-ratio").size() >= 0'])
    b = selector.evaluate(fleet.cel.document("b")[1], fleet.cel.scores)
    assert b.failed == 0
    assert b.error is not None and '"cpu-ratio" not found' in b.error


def test_score_names_lists_literal_arguments_and_none_for_computed_ones() -> None:
    assert score_names('managedCluster.scores("a")[0].value > 1 && true') == frozenset({"a"})
    assert score_names(
        "managedCluster.scores('b').size() > managedCluster.scores(\"c\").size()"
    ) == frozenset({"b", "c"})
    assert score_names("managedCluster.metadata.name == 'x'") == frozenset()
    assert score_names("managedCluster.scores(managedCluster.metadata.name).size() > 0") is None
    selector = compile_selector(['managedCluster.scores("x").size() > 0', "true"])
    assert selector.score_names == frozenset({"x"})


def test_compiling_the_same_expressions_again_reuses_the_selector() -> None:
    first = compile_selector(["managedCluster.metadata.name == 'a'"])
    assert compile_selector(["managedCluster.metadata.name == 'a'"]) is first
