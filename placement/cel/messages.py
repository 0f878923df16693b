"""Compile errors in cel-go's words, from the C++ checker's.

OCM's Misconfigured message is cel-go's `issues.String()`: one `ERROR: <input>:L:C: message`
per problem with the source line and a caret under the column, sorted by position. The C++
checker writes the same format and mostly the same messages; where it differs, `celgo` rewrites:

* an unresolved name chain (`managedClusters.metadata.name`): C++ names the whole chain at its
  last dot, cel-go the root identifier where it starts (`undeclared reference to
  'managedClusters'`), since it checks the chain's operand after the qualified look-up fails;
* a function declared only as a member called globally (`parseJSON(s)`), or only global called
  as a member (`q.sign()`): C++ says `undeclared reference`, cel-go `found no matching overload
  for 'f' applied to '(string)'` / `'<receiver type>.()'`; rewritten when the receiver and
  argument types can be told from the text (literals, `managedCluster...`, the Kubernetes
  constructors), kept otherwise.
"""

from __future__ import annotations

import re

from placement.cel.source import Token, chain_start, closing, tokenize

__all__ = ["celgo"]

_HEADER = re.compile(r"^ERROR: <input>:(\d+):(\d+): (.*)$")
_UNDECLARED = re.compile(r"^undeclared reference to '([^']+)' \(in container '([^']*)'\)$")
_WIDE_DOT, _WIDE_CARET = "\uff0e", "\uff3e"

_MAX_SNIPPET = 16384  # bytes: cel-go leaves a longer line out
_ERROR_OPERAND = "expression of type '*error*'"
# What a method of a Kubernetes CEL type gives back (receiver type, method): the type of a
# chain `quantity(a).sub(quantity(b))` for cel-go's `applied to` text.
_RETURNS = {
    **{("kubernetes.Quantity", m): "kubernetes.Quantity" for m in ("add", "sub")},
    **{("kubernetes.Quantity", m): "bool" for m in ("isLessThan", "isGreaterThan", "isInteger")},
    ("kubernetes.Quantity", "compareTo"): "int",
    ("kubernetes.Quantity", "asInteger"): "int",
    ("kubernetes.Quantity", "asApproximateFloat"): "double",
    **{("kubernetes.Semver", m): "int" for m in ("major", "minor", "patch", "compareTo")},
    **{("kubernetes.Semver", m): "bool" for m in ("isLessThan", "isGreaterThan")},
}
_CONSTRUCTORS = {
    "quantity": "kubernetes.Quantity",
    "semver": "kubernetes.Semver",
    "url": "kubernetes.URL",
    "ip": "net.IP",
    "cidr": "net.CIDR",
}


def celgo(source: str, message: str, functions: frozenset[str] = frozenset()) -> str:
    """`message` (the C++ checker's errors for `source`) as cel-go would print them."""
    errors: list[tuple[int, int, str]] = []
    for line in message.split("\n"):
        header = _HEADER.match(line)
        if header is None:
            continue  # a snippet line: rebuilt below
        row, column, text = int(header[1]), int(header[2]), header[3]
        errors.append(_rewrite(source, row, column, text, functions))
    # cel-go reports nothing more about an expression whose operand already failed to check
    # (`parseJSON(s).gpu`: the call's error, not the select of an error-typed operand)
    errors = [e for e in errors if _ERROR_OPERAND not in e[2]] or errors
    if not errors:
        return message
    errors.sort(key=lambda e: (e[0], e[1]))
    return "\n".join(_display(source, *error) for error in errors)


def _offset(source: str, row: int, column: int) -> int:
    lines = source.split("\n")
    return sum(len(text) + 1 for text in lines[: row - 1]) + column - 1


def _position(source: str, offset: int) -> tuple[int, int]:
    before = source[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _rewrite(
    source: str, row: int, column: int, text: str, functions: frozenset[str]
) -> tuple[int, int, str]:
    found = _UNDECLARED.match(text)
    if found is None:
        return row, column, text
    name, container = found[1], found[2]
    offset = _offset(source, row, column)
    tokens = tokenize(source)
    at = next((i for i, t in enumerate(tokens) if t.start == offset), None)
    if at is None:
        return row, column, text
    if "." in name:
        root = _chain_root(tokens, at, name.count("."))
        if root is not None:
            new_row, new_column = _position(source, tokens[root].start)
            head = name.split(".")[0]
            return new_row, new_column, _undeclared(head, container)
    if name in functions and tokens[at].text == "(":
        applied = _applied(tokens, at)
        if applied is not None:
            return row, column, f"found no matching overload for '{name}' applied to '{applied}'"
    return row, column, text


def _undeclared(name: str, container: str) -> str:
    return f"undeclared reference to '{name}' (in container '{container}')"


def _applied(tokens: list[Token], paren: int) -> str | None:
    """cel-go's `applied to` text for the call whose parenthesis is `tokens[paren]`:
    `(T1, T2)`, or `R.(T1)` for a member call; None when a type cannot be told."""
    close = closing(tokens, paren)
    types: list[str] = []
    start = paren + 1
    depth = 0
    for i in range(paren + 1, close + 1):
        text = tokens[i].text if tokens[i].kind == "punct" else ""
        if text in ("(", "[", "{", "[?"):
            depth += 1
        elif text in (")", "]", "}") and i < close:
            depth -= 1
        if (text == "," and depth == 0) or i == close:
            if i > start:
                found = _span_type(tokens, start, i)
                if found is None:
                    return None
                types.append(found)
            start = i + 1
    arguments = f"({', '.join(types)})"
    dot = paren - 2
    if dot >= 0 and tokens[dot].text == "." and tokens[dot].kind == "punct":
        begin = chain_start(tokens, dot)
        receiver = None if begin is None else _span_type(tokens, begin, dot)
        return None if receiver is None else f"{receiver}.{arguments}"
    return arguments


def _span_type(tokens: list[Token], start: int, end: int) -> str | None:
    """The static type of `tokens[start:end]` when the text alone tells it."""
    first = tokens[start]
    if end - start == 1:
        if first.kind == "string":
            return "bytes" if first.text.lower().lstrip("r").startswith("b") else "string"
        if first.kind == "number":
            if first.text[-1] in "uU":
                return "uint"
            float_like = any(c in first.text for c in ".eE") and not first.text.startswith("0x")
            return "double" if float_like else "int"
        literals = {"true": "bool", "false": "bool", "null": "null_type"}
        if first.text in literals:
            return literals[first.text]
        if first.text == "managedCluster":
            return "map(string, dyn)"
        return None
    plain = ("ident", "string", "number")
    if first.text == "managedCluster" and all(
        t.kind in plain or t.text in (".", "[", "]") for t in tokens[start:end]
    ):
        return "dyn"
    constructor = first.text in _CONSTRUCTORS and tokens[start + 1].text == "("
    if not constructor:
        return None
    at = closing(tokens, start + 1)
    kind: str | None = _CONSTRUCTORS[first.text]
    while kind is not None and at < end - 1:  # `.method(...)` calls on the constructed value
        method = at + 2
        if not (
            tokens[at + 1].text == "."
            and method + 1 < end
            and tokens[method].kind == "ident"
            and tokens[method + 1].text == "("
        ):
            return None
        kind = _RETURNS.get((kind, tokens[method].text))
        at = closing(tokens, method + 1)
    return kind if at == end - 1 else None


def _chain_root(tokens: list[Token], dot: int, dots: int) -> int | None:
    """The first identifier of the chain `a.b.c` whose last dot is `tokens[dot]`, walking back
    over `dots` dots (parentheses around parts are no nodes of the chain)."""
    if tokens[dot].text != ".":
        return None
    at, seen, root = dot - 1, 1, None
    while at >= 0:
        token = tokens[at]
        if token.kind == "punct" and token.text in "()":
            at -= 1
            continue
        if token.kind != "ident":
            return None
        root = at
        if seen == dots:
            return root
        at -= 1
        while at >= 0 and tokens[at].kind == "punct" and tokens[at].text in "()":
            at -= 1
        if at < 0 or tokens[at].text != ".":
            return None
        seen += 1
        at -= 1
    return None


def _display(source: str, row: int, column: int, text: str) -> str:
    """cel-go's `Error.ToDisplayString`: the message, the line, dots up to a caret."""
    lines = source.split("\n")
    out = f"ERROR: <input>:{row}:{column}: {text}"
    if row - 1 >= len(lines):
        return out
    if len(lines[row - 1].encode()) > _MAX_SNIPPET:
        return out
    snippet = lines[row - 1].replace("\t", " ")
    marks = "".join(_WIDE_DOT if len(c.encode()) > 1 else "." for c in snippet[: column - 1])
    under = snippet[column - 1 : column]
    caret = _WIDE_CARET if under and len(under.encode()) > 1 else "^"
    return f"{out}\n | {snippet}\n | {marks}{caret}"
