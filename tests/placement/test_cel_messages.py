"""Compile errors as cel-go prints them (OCM's `Predicate:compilation failed: ...` message):
vectors written from cel-go's checker (`checkSelect`, `checkCall`, `noMatchingOverload`) and
`Error.ToDisplayString` (position, snippet, caret, wide characters, order)."""

from __future__ import annotations

import pytest

from placement.cel import CelCompileError, compile_selector
from placement.cel.messages import celgo


def message(expression: str) -> str:
    with pytest.raises(CelCompileError) as caught:
        compile_selector([expression])
    text = str(caught.value)
    assert text.startswith("compilation failed: ")
    return text.removeprefix("compilation failed: ")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param(
            "managedClusters.metadata.name == 'x'",
            "ERROR: <input>:1:1: undeclared reference to 'managedClusters' (in container '')\n"
            " | managedClusters.metadata.name == 'x'\n"
            " | ^",
            id="unresolved-chain-names-its-root",
        ),
        pytest.param(
            "managedCluster.metadata.name == y.z",
            "ERROR: <input>:1:33: undeclared reference to 'y' (in container '')\n"
            " | managedCluster.metadata.name == y.z\n"
            " | ................................^",
            id="root-where-it-starts",
        ),
        pytest.param(
            "(a.b).c == 1",
            "ERROR: <input>:1:2: undeclared reference to 'a' (in container '')\n"
            " | (a.b).c == 1\n"
            " | .^",
            id="parentheses-are-no-nodes",
        ),
        pytest.param(
            "a.b.c()",
            "ERROR: <input>:1:1: undeclared reference to 'a' (in container '')\n"
            " | a.b.c()\n"
            " | ^\n"
            "ERROR: <input>:1:6: undeclared reference to 'c' (in container '')\n"
            " | a.b.c()\n"
            " | .....^",
            id="target-then-function-in-order",
        ),
        pytest.param(
            "parseJSON('{}')",
            "ERROR: <input>:1:10: found no matching overload for 'parseJSON' applied to "
            "'(string)'\n"
            " | parseJSON('{}')\n"
            " | .........^",
            id="member-only-called-globally",
        ),
        pytest.param(
            "quantity('1').sign() == 1",
            "ERROR: <input>:1:19: found no matching overload for 'sign' applied to "
            "'kubernetes.Quantity.()'\n"
            " | quantity('1').sign() == 1\n"
            " | ..................^",
            id="global-only-called-as-member",
        ),
        pytest.param(
            "scores(managedCluster, 'x').size() > 0",
            "ERROR: <input>:1:7: found no matching overload for 'scores' applied to "
            "'(map(string, dyn), string)'\n"
            " | scores(managedCluster, 'x').size() > 0\n"
            " | ......^",
            id="scores-called-globally",
        ),
        pytest.param(
            "semver('1.0.0', true).major() == 1",
            "ERROR: <input>:1:7: found no matching overload for 'semver' applied to "
            "'(string, bool)'\n"
            " | semver('1.0.0', true).major() == 1\n"
            " | ......^",
            id="semver-normalize-is-not-declared",
        ),
        pytest.param(
            "'é' == 1",
            "ERROR: <input>:1:5: found no matching overload for '_==_' applied to '(string, int)'\n"
            " | 'é' == 1\n"
            " | .\uff0e..^",
            id="wide-characters-are-wide-dots",
        ),
        pytest.param(
            "1 +",
            "ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', "
            "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
            "IDENTIFIER}\n"
            " | 1 +\n"
            " | ...^",
            id="syntax-error-unchanged",
        ),
    ],
)
def test_compile_errors_are_cel_go_words(expression: str, expected: str) -> None:
    assert message(expression) == expected


# OCM's placement controller (open-cluster-management-io/ocm 00f84c32b) on kube-apiserver v1.36.2
# printed these, after `Predicate:`, as the Placements' PlacementMisconfigured message.
OCM_PRINTED = {
    "quantity(managedCluster.metadata.name).sub(quantity('1')).sign() > 0": (
        "ERROR: <input>:1:63: found no matching overload for 'sign' applied to "
        "'kubernetes.Quantity.()'\n"
        " | quantity(managedCluster.metadata.name).sub(quantity('1')).sign() > 0\n"
        " | ..............................................................^"
    ),
    "quantity('2').add(1).isLessThan(quantity('3')).sign()": (
        "ERROR: <input>:1:52: found no matching overload for 'sign' applied to 'bool.()'\n"
        " | quantity('2').add(1).isLessThan(quantity('3')).sign()\n"
        " | ...................................................^"
    ),
    "quantity('2').sign() > 0": (
        "ERROR: <input>:1:19: found no matching overload for 'sign' applied to "
        "'kubernetes.Quantity.()'\n"
        " | quantity('2').sign() > 0\n"
        " | ..................^"
    ),
    # one error: cel-go says nothing of the select on the failed call
    "parseJSON(managedCluster.metadata.name).gpu > 1": (
        "ERROR: <input>:1:10: found no matching overload for 'parseJSON' applied to '(dyn)'\n"
        " | parseJSON(managedCluster.metadata.name).gpu > 1\n"
        " | .........^"
    ),
    "parseJSON('{}').gpu == 1": (
        "ERROR: <input>:1:10: found no matching overload for 'parseJSON' applied to "
        "'(string)'\n"
        " | parseJSON('{}').gpu == 1\n"
        " | .........^"
    ),
}


@pytest.mark.parametrize("expression", list(OCM_PRINTED))
def test_method_chains_and_failed_operands_as_ocm_prints_them(expression: str) -> None:
    """A member call on a chain of Kubernetes methods names the chain's type; a select on a
    call that failed to check adds no second error (we said `undeclared reference to 'sign'`,
    and `expression of type '*error*' cannot be the operand of a select operation`)."""
    assert message(expression) == OCM_PRINTED[expression]


def test_a_member_call_on_an_untold_receiver_keeps_the_engine_words() -> None:
    # The receiver's type cannot be told from the text: the message stays the checker's.
    text = message("[1].map(x, x)[0].parseJSONs()")
    assert "undeclared reference to 'parseJSONs'" in text


def test_errors_are_sorted_by_position_and_long_lines_have_no_snippet() -> None:
    engine = (
        "ERROR: <input>:1:9: undeclared reference to 'b' (in container '')\n | a == 1 || b\n"
        " | ........^\nERROR: <input>:1:1: undeclared reference to 'a' (in container '')\n"
        " | a == 1 || b\n | ^"
    )
    assert celgo("a == 1 || b", engine).splitlines()[0].startswith("ERROR: <input>:1:1:")
    long = "x" + " " * 16384 + "== 1"
    out = celgo(long, "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')")
    assert out == "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')"
