"""Label selectors read as kube-apiserver reads them, token by token, with its refusals word
for word (a 400 whose message the differential test compares):

* terms: `key`, `!key`, `key=value` (`==`), `key!=value`, `key in (a,b)`, `key notin (a,b)`,
  `key>3`, `key<3`, separated by commas;
* `a b` -> `unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt`;
  `a=b=c` -> `found '=', expected: ',' or 'end of string'`; `a,` -> `found '', expected:
  identifier after ','`; a key or value that is no label key or value -> its field error
  (`values[0][key]: Invalid value: "...": must be no more than 63 bytes`).

An error inside one term is prefixed `unable to parse requirement: `; one between terms is not.
"""

from __future__ import annotations

from collections.abc import Callable

from apis.fielderrors import go_quote, label_key_problems, label_value_problems
from controllers.embedded.status import StatusError

__all__ = ["LabelTest", "parse_label_selector"]

LabelTest = Callable[[dict[str, str]], bool]

_SPECIAL = "!=(),<>"
_OPERATORS = {"in", "notin", "=", "==", "!=", ">", "<"}
_EXPECTED_OPERATOR = "in, notin, =, ==, !=, gt, lt"
_END = ""  # the text of the end-of-string token


class _RefusedError(Exception):
    """A parse error; `inside` when it happened within one term."""

    def __init__(self, message: str, inside: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.inside = inside


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is `id` for an identifier, else the symbol itself; the last is
    ("end", "")."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in _SPECIAL:
            two = text[i : i + 2]
            symbol = two if two in ("!=", "==") else char
            out.append((symbol, symbol))
            i += len(symbol)
        else:
            start = i
            while i < len(text) and not text[i].isspace() and text[i] not in _SPECIAL:
                i += 1
            word = text[start:i]
            out.append((word if word in ("in", "notin") else "id", word))
    out.append(("end", _END))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at]

    def take(self) -> tuple[str, str]:
        token = self.tokens[self.at]
        if token[0] != "end":
            self.at += 1
        return token

    def selector(self) -> list[LabelTest]:
        tests: list[LabelTest] = []
        if self.peek()[0] == "end":
            return tests
        while True:
            kind, text = self.peek()
            if kind not in ("id", "!"):
                message = f"found '{text}', expected: !, identifier, or 'end of string'"
                raise _RefusedError(message, inside=False)
            tests.append(self.requirement())
            kind, text = self.take()
            if kind == "end":
                return tests
            if kind != ",":
                raise _RefusedError(
                    f"found '{text}', expected: ',' or 'end of string'", inside=False
                )
            if self.peek()[0] not in ("id", "!"):
                found = self.peek()[1]
                raise _RefusedError(
                    f"found '{found}', expected: identifier after ','", inside=False
                )

    def requirement(self) -> LabelTest:
        negated = self.peek()[0] == "!"
        if negated:
            self.take()
        kind, key = self.take()
        if kind != "id":
            raise _RefusedError(f"found '{key}', expected: identifier")
        problems = label_key_problems(key)
        if problems:
            raise _RefusedError(f"<nil>: Invalid value: {go_quote(key)}: {'; '.join(problems)}")
        if negated:
            return lambda labels: key not in labels
        if self.peek()[0] in ("end", ","):
            return lambda labels: key in labels
        kind, op = self.take()
        if kind not in _OPERATORS:
            raise _RefusedError(f"found '{op}', expected: {_EXPECTED_OPERATOR}")
        values = self.values(op)
        for i, value in enumerate(values):
            problems = label_value_problems(value)
            if problems:
                why = "; ".join(problems)
                raise _RefusedError(f"values[{i}][{key}]: Invalid value: {go_quote(value)}: {why}")
        return _test(key, op, values)

    def values(self, op: str) -> list[str]:
        if op in ("in", "notin"):
            kind, text = self.take()
            if kind != "(":
                raise _RefusedError(f"found '{text}' expected: '('")
            return self.value_list()
        kind, text = self.peek()
        if kind in ("end", ","):
            return [""]
        self.take()
        if kind != "id":
            raise _RefusedError(f"found '{text}', expected: identifier")
        return [text]

    def value_list(self) -> list[str]:
        values: list[str] = []
        if self.peek()[0] == ")":
            self.take()
            return values
        if self.peek()[0] not in ("id", ","):
            raise _RefusedError(f"found '{self.peek()[1]}', expected: ',', ')' or identifier")
        while True:
            kind, text = self.peek()
            if kind == "id":
                self.take()
                values.append(text)
                kind, text = self.peek()
            else:
                values.append("")
            if kind == ")":
                self.take()
                return values
            if kind != ",":
                raise _RefusedError(f"found '{text}', expected: ',' or ')'")
            self.take()
            if self.peek()[0] in (")", "end"):
                values.append("")
                if self.peek()[0] == ")":
                    self.take()
                    return values


def _test(key: str, op: str, values: list[str]) -> LabelTest:
    chosen = frozenset(values)
    if op in ("=", "==", "in"):
        return lambda labels: key in labels and labels[key] in chosen
    if op in ("!=", "notin"):
        return lambda labels: labels.get(key) not in chosen
    try:
        bound = int(values[0])
    except ValueError:
        raise _RefusedError(
            f"values[0]: Invalid value: {go_quote(values[0])}: for 'Gt', 'Lt' operators, the "
            "value must be an integer"
        ) from None

    def compare(labels: dict[str, str]) -> bool:
        try:
            have = int(labels.get(key, ""))
        except ValueError:
            return False
        return have > bound if op == ">" else have < bound

    return compare


def parse_label_selector(text: str) -> list[LabelTest]:
    """The tests of a label selector (all must hold); 400 with kube's message when it does not
    parse."""
    try:
        return _Parser(text).selector()
    except _RefusedError as exc:
        prefix = "unable to parse requirement: " if exc.inside else ""
        raise StatusError(400, prefix + exc.message) from None
