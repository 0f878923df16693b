"""CEL expressions the snapshot's columns answer, recognised so that they run as column
operations.

A selector's first evaluation on a fleet used to inflate every candidate cluster's object and
run the interpreter on it. The commonest expressions read a label, the name or a resource and
compare it with literals, which the snapshot's columns answer for all clusters at once
(`placement.cel.snapshot_columns`). `column_plan(expressions)` recognises, token by token, `&&`,
`||`,
`!` and parentheses over these tests:

    managedCluster.metadata.labels["K"] == "V"       (also != , and .labels.K)
    managedCluster.metadata.labels["K"] in ["V1", "V2"]
    managedCluster.metadata.name == "N"               (also != and in [...])
    quantity(managedCluster.status.allocatable.cpu).isGreaterThan(quantity("2"))
        (also isLessThan, `.compareTo(quantity("2")) >= 0` with any comparison and integer,
        capacity for allocatable, memory for cpu, ["cpu"] for .cpu)

and gives None as soon as one expression is anything else (the interpreter then runs them
all). What the interpreter decides on such an expression, the columns decide alike, errors
included: a cluster without the label fails a test with `no such key: K`, one without any label
with `no such key: labels` (the typed document drops an empty `labels`), and `&&`/`||` are
commutative on errors as in CEL (`false && error` is false, `error || true` is true, of two
errors the left one). A resource column holds an approximate float: a cluster whose value is
missing or too close to the literal to be sure is left to the interpreter, alone (but for cpu
values equal to the literal, which the float tells: `TIE`).
`tests/placement/test_cel_columns.py` checks all of it against the interpreter on random fleets.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

from apis.quantity_amount import AmountError, approximate, parse_amount
from placement.cel.source import Token, string_value, tokenize

__all__ = [
    "Both",
    "ColumnNode",
    "Either",
    "LabelTest",
    "Not",
    "QuantityTest",
    "column_plan",
    "label_tests",
]

_CLUSTER = "managedCluster"
_LABELS = (_CLUSTER, ".", "metadata", ".", "labels")
_NAME = (_CLUSTER, ".", "metadata", ".", "name")
_STATUS = (_CLUSTER, ".", "status", ".")
TIE = 5e-10
TIE_RANGE = 1e5
"""Quantities are whole multiples of 1n (ParseQuantity rounds up to it), and up to 1e5 their
approximate floats are within 1e-10 of them: two equal ones are within 5e-10 of each other,
two different ones further apart."""
_COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class LabelTest:
    """`labels[key] <operator> values` (`metadata.name` when `key` is None): operator `==`,
    `!=` or `in`."""

    key: str | None
    operator: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class QuantityTest:
    """`quantity(status.<field>.<resource>)` compared with the quantity `threshold` (its
    approximate value): true when the comparison's outcome (-1, 0, 1) is in `passes`."""

    field: str
    resource: str
    threshold: float
    passes: frozenset[int]
    ties: bool = False
    """Whether a column value within `TIE` of the threshold is exactly equal to it (and one
    further off is not): cpu thresholds of whole millicores up to `TIE_RANGE` cores."""


@dataclass(frozen=True)
class Not:
    operand: ColumnNode


@dataclass(frozen=True)
class Both:
    """`left && right`."""

    left: ColumnNode
    right: ColumnNode


@dataclass(frozen=True)
class Either:
    """`left || right`."""

    left: ColumnNode
    right: ColumnNode


ColumnNode = LabelTest | QuantityTest | Not | Both | Either


def column_plan(expressions: tuple[str, ...]) -> tuple[ColumnNode, ...] | None:
    """Every expression as a tree of column tests, or None when one is not."""
    plan = []
    for source in expressions:
        tokens = tokenize(source)
        if any(t.kind == "other" for t in tokens):
            return None
        parser = _Parser([t for t in tokens if t.kind != "space"])
        node = parser.expression()
        if node is None or parser.at != len(parser.tokens):
            return None
        plan.append(node)
    return tuple(plan)


def label_tests(expressions: tuple[str, ...]) -> tuple[LabelTest, ...] | None:
    """Every expression as a single label test, or None when one is not."""
    plan = column_plan(expressions)
    if plan is None or not all(isinstance(node, LabelTest) for node in plan):
        return None
    return tuple(node for node in plan if isinstance(node, LabelTest))


def _literal(token: Token) -> str | None:
    return string_value(token.text) if token.kind == "string" else None


class _Parser:
    """Recursive descent over the tokens from `at`; every method gives None (and the
    expression is not recognised) on anything it does not know."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.at = 0

    def _peek(self, offset: int = 0) -> str:
        at = self.at + offset
        return self.tokens[at].text if at < len(self.tokens) else ""

    def _take(self, *texts: str) -> bool:
        """Consume `texts` if the next tokens are they."""
        if all(self._peek(i) == text for i, text in enumerate(texts)):
            self.at += len(texts)
            return True
        return False

    def _string(self) -> str | None:
        if self.at >= len(self.tokens):
            return None
        value = _literal(self.tokens[self.at])
        if value is not None:
            self.at += 1
        return value

    def expression(self) -> ColumnNode | None:
        left = self._conjunction()
        while left is not None and self._take("||"):
            right = self._conjunction()
            left = None if right is None else Either(left, right)
        return left

    def _conjunction(self) -> ColumnNode | None:
        left = self._unary()
        while left is not None and self._take("&&"):
            right = self._unary()
            left = None if right is None else Both(left, right)
        return left

    def _unary(self) -> ColumnNode | None:
        if self._take("!"):
            # `!` binds tighter than a comparison: only `!(...)` and `!!...` negate a test
            if self._peek() not in ("(", "!"):
                return None
            operand = self._unary()
            return None if operand is None else Not(operand)
        if self._take("("):
            inner = self.expression()
            return inner if inner is not None and self._take(")") else None
        if self._peek() == "quantity":
            return self._quantity_test()
        return self._label_test()

    def _label_test(self) -> LabelTest | None:
        key: str | None
        if self._take(*_NAME):
            key = None
        elif self._take(*_LABELS):
            key = self._key()
            if key is None:
                return None
        else:
            return None
        operator_token = self.tokens[self.at] if self.at < len(self.tokens) else None
        if operator_token is None:
            return None
        self.at += 1
        if operator_token.kind == "punct" and operator_token.text in ("==", "!="):
            value = self._string()
            return None if value is None else LabelTest(key, operator_token.text, (value,))
        if operator_token.kind != "ident" or operator_token.text != "in" or not self._take("["):
            return None
        values: list[str] = []
        while not self._take("]"):
            value = self._string()
            if value is None:
                return None
            values.append(value)
            if not self._take(",") and self._peek() != "]":
                return None
        return LabelTest(key, "in", tuple(values))

    def _key(self) -> str | None:
        """`["K"]` or `.K`."""
        if self._take("["):
            key = self._string()
            return key if key is not None and self._take("]") else None
        if self._peek() == "." and self.at + 1 < len(self.tokens):
            token = self.tokens[self.at + 1]
            if token.kind == "ident":
                self.at += 2
                return token.text
        return None

    def _quantity_test(self) -> QuantityTest | None:
        if not self._take("quantity", "(", *_STATUS):
            return None
        field = self._peek()
        if field not in ("allocatable", "capacity"):
            return None
        self.at += 1
        resource = self._key()
        if resource not in ("cpu", "memory") or not self._take(")", "."):
            return None
        method = self._peek()
        if method not in ("isGreaterThan", "isLessThan", "compareTo"):
            return None
        self.at += 1
        if not self._take("(", "quantity", "("):
            return None
        text = self._string()
        if text is None or not self._take(")", ")"):
            return None
        try:
            amount = parse_amount(text)
        except AmountError:
            return None  # the interpreter reports it
        threshold = approximate(amount)
        if not math.isfinite(threshold):
            return None
        # the index's row-made document holds cpu in whole millicores: a tie with a threshold
        # between two of them is not one there
        millis = amount.scale >= -3 or amount.unscaled % 10 ** (-3 - amount.scale) == 0
        ties = resource == "cpu" and abs(threshold) <= TIE_RANGE and millis
        if method != "compareTo":
            return QuantityTest(field, resource, threshold, frozenset({_SIGN[method]}), ties)
        compare = _COMPARISONS.get(self._peek())
        if compare is None:
            return None
        self.at += 1
        negative = self._take("-")
        number = self.tokens[self.at] if self.at < len(self.tokens) else None
        if number is None or number.kind != "number" or not number.text.isdigit():
            return None  # a uint, a double or hex: not worked out here
        self.at += 1
        value = -int(number.text) if negative else int(number.text)
        passes = frozenset(c for c in (-1, 0, 1) if compare(c, value))
        return QuantityTest(field, resource, threshold, passes, ties)


_SIGN = {"isGreaterThan": 1, "isLessThan": -1}
