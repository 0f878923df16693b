"""What we read from a CEL expression's text before the engine compiles it.

The engine (cel-expr-python, Google's C++ runtime) neither meters cost nor shows its syntax
tree, so two things are done here on the tokens of the source:

* `instrument` wraps the body of every comprehension macro (`all`, `exists`, `exists_one`,
  `map`, `filter`) in a call of the metering function, so that each iteration is charged what
  cel-go charges for it (roughly one unit per node of the body) and a runaway nesting of
  comprehensions stops at the budget instead of running for minutes;
* `score_names` lists the AddOnPlacementScore names an expression reads through
  `managedCluster.scores("<name>")`, so that the controller can re-queue exactly the placements a
  score object's change concerns (`None`: some call has a computed argument, any score counts).

The tokenizer knows CEL's lexical grammar (string, bytes and raw literals, triple quotes,
comments); anything it does not understand is left for the engine to reject with its own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "COMPREHENSIONS",
    "METER",
    "Token",
    "chain_start",
    "closing",
    "instrument",
    "node_count",
    "score_names",
    "string_value",
    "tokenize",
]

METER = "ocmCostMeter_"
"""The metering function's name: an identifier no Kubernetes or OCM library declares."""

COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "map", "filter"})

# The Kubernetes calls whose result is an optional in cel-go, which ours give as a value that
# is empty for none: each runs as `optional.ofNonZeroValue(call)`. Value: the name that must
# qualify the call ("" for a member function).
_OPTIONAL_RESULTS = {"validate": "", "named": "format"}

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"
        |'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<punct>\.\?|\[\?|&&|\|\||==|!=|<=|>=|[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Token:
    """One token: its kind (string, number, ident, punct, other), text and offset."""

    kind: str
    text: str
    start: int


def tokenize(source: str) -> list[Token]:
    """The tokens of `source` without blanks and comments; an unknown character is an
    `other` token (the engine reports it)."""
    out: list[Token] = []
    at = 0
    while at < len(source):
        match = _TOKEN.match(source, at)
        if match is None:
            out.append(Token("other", source[at], at))
            at += 1
            continue
        kind = match.lastgroup or "other"
        if kind != "space":
            out.append(Token(kind, match.group(), at))
        at = match.end()
    return out


def node_count(tokens: list[Token]) -> int:
    """About the number of syntax-tree nodes of a token run: what cel-go charges to evaluate
    it once (one unit per identifier, literal, selection, operator and call)."""
    return sum(1 for t in tokens if t.kind != "punct" or t.text not in "(),:[]{}") or 1


def closing(tokens: list[Token], open_at: int) -> int:
    """Index of the bracket closing the one at `open_at` (len(tokens) if unbalanced)."""
    depth = 0
    for i in range(open_at, len(tokens)):
        text = tokens[i].text if tokens[i].kind == "punct" else ""
        if text in ("(", "[", "{", "[?"):
            depth += 1
        elif text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return i
    return len(tokens)


def _arguments(tokens: list[Token], open_at: int, close_at: int) -> list[tuple[int, int]]:
    """The [start, end) token ranges of the arguments between two brackets."""
    ranges: list[tuple[int, int]] = []
    depth = 0
    start = open_at + 1
    for i in range(open_at + 1, close_at):
        text = tokens[i].text if tokens[i].kind == "punct" else ""
        if text in ("(", "[", "{", "[?"):
            depth += 1
        elif text in (")", "]", "}"):
            depth -= 1
        elif text == "," and depth == 0:
            ranges.append((start, i))
            start = i + 1
    if start < close_at:
        ranges.append((start, close_at))
    return ranges


def instrument(source: str) -> str:
    """`source` with the body of every comprehension wrapped as `METER(cost) ? (body) : ...`:
    the meter returns true, so the value is unchanged, and raises once the budget is spent; a
    conditional whose condition is an error evaluates neither branch, so the loop stops doing
    work. Predicates get `false` as the other branch, a `map` transform its own copy (the
    types must agree). Kubernetes' `<format>.validate(s)` and `format.named(n)` become the
    optionals they are in cel-go."""
    tokens = tokenize(source)
    for i in range(len(tokens) - 2):
        dot, name, paren = tokens[i], tokens[i + 1], tokens[i + 2]
        if not (dot.text == "." and dot.kind == "punct" and name.kind == "ident"):
            continue
        if paren.text != "(" or paren.kind != "punct":
            continue
        close = closing(tokens, i + 2)
        if close >= len(tokens):
            return source  # unbalanced: the engine says what is wrong
        end_at = tokens[close].start + 1
        args = _arguments(tokens, i + 2, close)
        if name.text in _OPTIONAL_RESULTS:
            begin = chain_start(tokens, i)
            qualifier = _OPTIONAL_RESULTS[name.text]
            if begin is None or (qualifier and (begin != i - 1 or tokens[begin].text != qualifier)):
                continue
            if _optional_later_in_chain(tokens, close):
                continue  # the later call wraps this one with its receiver
            head = source[: tokens[begin].start]
            receiver = instrument(source[tokens[begin].start : dot.start])
            inner = instrument(source[paren.start + 1 : tokens[close].start])
            call = f"{receiver}.{name.text}({inner})"
            return f"{head}optional.ofNonZeroValue({call}){instrument(source[end_at:])}"
        if name.text not in COMPREHENSIONS or len(args) < 2:
            continue
        start, end = args[1]
        if start >= end:
            continue
        cost = node_count(tokens[start:end]) + 1
        first = tokens[start].start
        after = tokens[end - 1].start + len(tokens[end - 1].text)
        body = instrument(source[first:after])
        other = f"({body})" if name.text == "map" and len(args) == 2 else "false"
        return f"{source[:first]}{METER}({cost}) ? ({body}) : {other}{instrument(source[after:])}"
    return source


def _optional_later_in_chain(tokens: list[Token], close: int) -> bool:
    """Whether the member chain going on after `tokens[close]` calls another function of
    `_OPTIONAL_RESULTS` (`format.named(n).value().validate(s)`)."""
    at = close + 1
    while at + 1 < len(tokens) and tokens[at].kind == "punct" and tokens[at].text in (".", ".?"):
        if tokens[at + 1].kind != "ident":
            return False
        after = at + 2
        if after < len(tokens) and tokens[after].text == "(" and tokens[after].kind == "punct":
            if tokens[at + 1].text in _OPTIONAL_RESULTS:
                return True
            after = closing(tokens, after) + 1
        while after < len(tokens) and tokens[after].text in ("[", "[?"):
            after = closing(tokens, after) + 1
        at = after
    return False


def chain_start(tokens: list[Token], dot: int) -> int | None:
    """The first token of the member chain ending just before `tokens[dot]` (`a.b(c).d`)."""
    at = dot - 1
    while at >= 0:
        token = tokens[at]
        if token.kind == "punct" and token.text in (")", "]"):
            depth = 0
            while at >= 0:
                text = tokens[at].text if tokens[at].kind == "punct" else ""
                if text in (")", "]"):
                    depth += 1
                elif text in ("(", "[", "[?"):
                    depth -= 1
                    if depth == 0:
                        break
                at -= 1
            at -= 1
            if at < 0 or tokens[at].kind != "ident":
                return at + 1 if at >= -1 else None
        if tokens[at].kind not in ("ident", "string", "number"):
            return None
        if at > 0 and tokens[at - 1].text in (".", ".?") and tokens[at - 1].kind == "punct":
            at -= 2
            continue
        return at
    return None


_STRING_PREFIX = re.compile(r"^[rRbB]*")


def string_value(literal: str) -> str | None:
    """The value of a plain string literal (no bytes; only the simple escapes), else None."""
    prefix = _STRING_PREFIX.match(literal)
    flags = prefix.group().lower() if prefix else ""
    if "b" in flags:
        return None
    body = literal[len(flags) :]
    quote = body[:3] if body[:3] in ("'''", '"""') else body[:1]
    inner = body[len(quote) : len(body) - len(quote)]
    if "r" in flags or "\\" not in inner:
        return inner
    simple = {"\\\\": "\\", '\\"': '"', "\\'": "'", "\\n": "\n", "\\t": "\t"}
    parts = re.split(r"(\\.)", inner, flags=re.DOTALL)
    out = []
    for part in parts:
        if part.startswith("\\"):
            if part not in simple:
                return None  # \u, \x, octal...: not worked out here
            out.append(simple[part])
        else:
            out.append(part)
    return "".join(out)


def score_names(source: str) -> frozenset[str] | None:
    """The names passed as a literal to `.scores(...)`; None when some call's argument is
    computed (then any score of the cluster may matter)."""
    tokens = tokenize(source)
    names: set[str] = set()
    for i in range(len(tokens) - 2):
        if not (
            tokens[i].text == "."
            and tokens[i + 1].kind == "ident"
            and tokens[i + 1].text == "scores"
            and tokens[i + 2].text == "("
        ):
            continue
        close = closing(tokens, i + 2)
        args = _arguments(tokens, i + 2, close)
        literal = args[0][1] - args[0][0] == 1 and tokens[args[0][0]].kind == "string"
        value = string_value(tokens[args[0][0]].text) if args and literal else None
        if value is None:
            return None
        names.add(value)
    return frozenset(names)
