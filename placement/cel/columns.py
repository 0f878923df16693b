"""CEL expressions that are label tests, recognised so that they run as column operations.

A selector's first evaluation on a fleet used to inflate every candidate cluster's object and
run the interpreter on it. The commonest expressions read one label and compare it with
literals, which the snapshot's label columns answer for all clusters at once
(`placement._cel_columns`). `label_tests(expressions)` recognises them, token by token:

    managedCluster.metadata.labels["K"] == "V"       (also != , and .labels.K)
    managedCluster.metadata.labels["K"] in ["V1", "V2"]
    managedCluster.metadata.name == "N"               (also != and in [...])

and gives None as soon as one expression is anything else (the interpreter then runs them
all). What the interpreter decides on such an expression, the columns decide alike: a cluster
without the label fails it with `no such key: K`, one without any label with `no such key:
labels` (the typed document drops an empty `labels`); `tests/placement/test_cel_columns.py`
checks it against the interpreter on random fleets.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.cel.source import Token, string_value, tokenize

__all__ = ["LabelTest", "label_tests"]

_PREFIX = ("managedCluster", ".", "metadata", ".", "labels")
_NAME = ("managedCluster", ".", "metadata", ".", "name")


@dataclass(frozen=True)
class LabelTest:
    """`labels[key] <operator> values` (`metadata.name` when `key` is None): operator `==`,
    `!=` or `in`."""

    key: str | None
    operator: str
    values: tuple[str, ...]


def label_tests(expressions: tuple[str, ...]) -> tuple[LabelTest, ...] | None:
    """Every expression as a label test, or None when one is not."""
    tests = []
    for source in expressions:
        test = _label_test([t for t in tokenize(source) if t.kind != "space"])
        if test is None:
            return None
        tests.append(test)
    return tuple(tests)


def _literal(token: Token) -> str | None:
    return string_value(token.text) if token.kind == "string" else None


def _label_test(tokens: list[Token]) -> LabelTest | None:
    if any(t.kind == "other" for t in tokens) or len(tokens) < 7:
        return None
    key: str | None
    if tuple(t.text for t in tokens[:5]) == _NAME:
        key, at = None, 5
    elif len(tokens) >= 8 and tuple(t.text for t in tokens[:5]) == _PREFIX:
        at = 5
        if tokens[at].text == "[" and tokens[at + 2].text == "]":
            key = _literal(tokens[at + 1])
            at += 3
        elif tokens[at].text == "." and tokens[at + 1].kind == "ident":
            key = tokens[at + 1].text
            at += 2
        else:
            return None
        if key is None:
            return None
    else:
        return None
    if at >= len(tokens):
        return None
    operator, rest = tokens[at].text, tokens[at + 1 :]
    if operator in ("==", "!=") and tokens[at].kind == "punct" and len(rest) == 1:
        value = _literal(rest[0])
        return None if value is None else LabelTest(key, operator, (value,))
    if operator != "in" or tokens[at].kind != "ident" or len(rest) < 2:
        return None
    if rest[0].text != "[" or rest[-1].text != "]":
        return None
    items = rest[1:-1]
    if items and items[-1].text == ",":
        items = items[:-1]  # a trailing comma
    values = [_literal(t) for t in items[0::2]]
    separators = items[1::2]
    if any(v is None for v in values) or any(t.text != "," for t in separators):
        return None
    if len(values) != len(separators) + 1 and items:
        return None
    return LabelTest(key, "in", tuple(v for v in values if v is not None))
