"""What the device selectors (`placement.cel.devices`) read from an expression's text: the
attribute and capacity domains it looks up by a literal, and kube's words where the C++
checker's differ because `device` is declared as one variable per field.

* `device.foo`: the C++ checker finds no variable `device.foo` ("undeclared reference to
  'device.foo'" at the chain's last dot); cel-go selects the undeclared field of
  `kubernetes.DRADevice` ("undefined field 'foo'" at the dot after `device`).
* `has(device.driver)`: the C++ checker types the macro on a variable as the variable itself;
  a field of `kubernetes.DRADevice` is always present, so the test reads as `true`.
* A field selected on a scalar: C++ "expression of type 'string' cannot be the operand of a
  select operation", cel-go "type 'string' does not support field selection".
* `estimated_cost`: a floor of cel-go's cost estimate, enough to refuse the selectors whose
  nested comprehensions over the attribute maps kube-apiserver finds "too complex".
* A result of the wrong type: the engine's type name (`MAP<STRING, DYN>`) in cel-go's spelling,
  with kube's declared types (`google.protobuf.Any` for an attribute value, `kubernetes.Quantity`
  for a capacity).
"""

from __future__ import annotations

import re

from placement.cel.source import (
    COMPREHENSIONS,
    Token,
    chain_start,
    closing,
    node_count,
    string_value,
    tokenize,
)

__all__ = [
    "estimated_cost",
    "kube_words",
    "literal_domains",
    "presence_tests",
    "result_type_name",
]

_HEADER = re.compile(r"^ERROR: <input>:(\d+):(\d+): undeclared reference to 'device\.([^']*)'")
_MAPS = ("attributes", "capacity")


def _is(token: Token, text: str) -> bool:
    return token.kind == ("ident" if text[0].isalpha() else "punct") and token.text == text


def literal_domains(source: str) -> frozenset[str]:
    """The domains read as `device.attributes["<domain>"]` or `device.capacity[...]` (also
    `[?...]`), except those the expression tests with `"<domain>" in device.attributes`: a
    missing one reads as an empty map there, as kube's lookup default does."""
    tokens = tokenize(source)
    read: set[str] = set()
    tested: set[str] = set()
    for i, token in enumerate(tokens):
        if not _is(token, "device"):
            continue
        after = tokens[i + 1 : i + 6]
        if len(after) < 3 or not _is(after[0], ".") or after[1].text not in _MAPS:
            continue
        if i >= 2 and tokens[i - 1].text == "in" and tokens[i - 2].kind == "string":
            domain = string_value(tokens[i - 2].text)
            if domain is not None:
                tested.add(domain)
        indexed = len(after) >= 5 and after[2].text in ("[", "[?") and after[4].text == "]"
        if indexed and after[3].kind == "string":
            domain = string_value(after[3].text)
            if domain is not None:
                read.add(domain)
    return frozenset(read - tested)


def presence_tests(source: str, fields: frozenset[str]) -> str:
    """`source` with each `has(device.<field>)` as `(true ...)`, blank-padded to the same
    length so that every error's column stays where it was."""
    tokens = tokenize(source)
    out = source
    for i in range(len(tokens) - 5):
        run = tokens[i : i + 6]
        if not (_is(run[0], "has") and _is(run[1], "(") and _is(run[2], "device")):
            continue
        if _is(run[3], ".") and run[4].text in fields and _is(run[5], ")"):
            start, end = run[0].start, run[5].start + 1
            out = out[:start] + "(true" + " " * (end - start - 6) + ")" + out[end:]
    return out


_SELECT_OPERAND = re.compile(
    r"expression of type '([^']*)' cannot be the operand of a select operation"
)


def kube_words(source: str, message: str, fields: frozenset[str]) -> str:
    """`message` (the C++ checker's) with an undeclared `device.<field>` chain as cel-go's
    "undefined field" at the dot after `device`, and cel-go's words for a select on a scalar."""
    message = _SELECT_OPERAND.sub(r"type '\1' does not support field selection", message)
    tokens = tokenize(source)
    lines = source.split("\n")
    out: list[str] = []
    for line in message.split("\n"):
        found = _HEADER.match(line)
        if found is not None:
            field = found[3].split(".")[0]
            offset = _offset(lines, int(found[1]), int(found[2]))
            dot = _device_dot(tokens, offset)
            if dot is not None and field not in fields:
                row, column = _position(source, dot)
                line = f"ERROR: <input>:{row}:{column}: undefined field '{field}'"
        out.append(line)
    return "\n".join(out)


def _offset(lines: list[str], row: int, column: int) -> int:
    return sum(len(text) + 1 for text in lines[: row - 1]) + column - 1


def _position(source: str, offset: int) -> tuple[int, int]:
    before = source[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _device_dot(tokens: list[Token], offset: int) -> int | None:
    """The offset of the dot after `device` in the select chain whose dot is at `offset`."""
    at = next((i for i, t in enumerate(tokens) if t.start == offset), None)
    while at is not None and at >= 1 and _is(tokens[at], "."):
        if _is(tokens[at - 1], "device") and (at < 2 or not _is(tokens[at - 2], ".")):
            return tokens[at].start
        if tokens[at - 1].kind != "ident":
            return None
        at -= 2
    return None


def result_type_name(source: str, engine: str) -> str:
    """cel-go's name of the result type `engine` (the C++ name) of `source`."""
    reads_attributes = "attributes" in source
    if engine == "MAP<STRING, DYN>":
        tokens = tokenize(source)
        last = tokens[-1] if tokens else None
        if reads_attributes and last is not None and last.text == "]":
            return "map(string, google.protobuf.Any)"
        if "semver" in source and "quantity" not in source and "capacity" not in source:
            return "kubernetes.Semver"
        return "kubernetes.Quantity"
    return _name(engine, "google.protobuf.Any" if reads_attributes else "dyn")


def _name(engine: str, dyn: str) -> str:
    head, _, rest = engine.partition("<")
    simple = {"NULL": "null_type", "DYN": dyn}
    if not rest:
        return simple.get(head, head.lower())
    inner = rest[:-1]
    parts, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    parts.append(inner[start:].strip())
    args = ", ".join(_name(p, dyn) for p in parts)
    return f"{head.lower()}({args})"


_MAP_ELEMENTS = 32  # kube: at most 32 attributes and capacities per device, so per map level


def estimated_cost(source: str) -> int:
    """A floor of cel-go's worst-case cost estimate for the comprehensions of `source`: each
    runs its body once per element of its range (32 for a map of `device.attributes` or
    `device.capacity` at any level, the element count of a list literal, 1 when unknown),
    nested ones multiplied; the estimate is the largest such product times the body's size."""
    tokens = tokenize(source)
    spans: list[tuple[int, int, int, int]] = []  # (open, close, range size, body nodes)
    for i in range(1, len(tokens) - 2):
        dot, name, paren = tokens[i], tokens[i + 1], tokens[i + 2]
        if not (_is(dot, ".") and name.text in COMPREHENSIONS and _is(paren, "(")):
            continue
        close = closing(tokens, i + 2)
        begin = chain_start(tokens, i)
        if begin is None:
            continue
        spans.append(
            (i + 2, close, _range_size(tokens, begin, i), node_count(tokens[i + 3 : close]))
        )
    worst = 0
    for open_at, close, size, body in spans:
        outer = 1
        for other_open, other_close, other_size, _ in spans:
            if other_open < open_at and close <= other_close:
                outer *= other_size
        worst = max(worst, outer * size * (body + 1))
    return worst


def _range_size(tokens: list[Token], begin: int, end: int) -> int:
    head = [t.text for t in tokens[begin : begin + 3]]
    if head[:2] == ["device", "."] and len(head) == 3 and head[2] in _MAPS:
        return _MAP_ELEMENTS
    if _is(tokens[begin], "[") and closing(tokens, begin) == end - 1:
        inner = tokens[begin + 1 : end - 1]
        depth, count = 0, 1 if inner else 0
        for token in inner:
            if token.kind == "punct" and token.text in ("(", "[", "{", "[?"):
                depth += 1
            elif token.kind == "punct" and token.text in (")", "]", "}"):
                depth -= 1
            elif _is(token, ",") and depth == 0:
                count += 1
        return max(count, 1)
    return 1
