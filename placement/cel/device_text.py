"""What the device selectors (`placement.cel.devices`) read from an expression's text: the
attribute and capacity domains it looks up by a literal, and kube's words where the C++
checker's differ because `device` is declared as one variable per field.

* `device.foo`: the C++ checker finds no variable `device.foo` ("undeclared reference to
  'device.foo'" at the chain's last dot); cel-go selects the undeclared field of
  `kubernetes.DRADevice` ("undefined field 'foo'" at the dot after `device`).
* A result of the wrong type: the engine's type name (`MAP<STRING, DYN>`) in cel-go's spelling,
  with kube's declared types (`google.protobuf.Any` for an attribute value, `kubernetes.Quantity`
  for a capacity).
"""

from __future__ import annotations

import re

from placement.cel.source import Token, string_value, tokenize

__all__ = ["literal_domains", "result_type_name", "undefined_fields"]

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


def undefined_fields(source: str, message: str, fields: frozenset[str]) -> str:
    """`message` (the C++ checker's) with an undeclared `device.<field>` chain as cel-go's
    "undefined field" at the dot after `device`."""
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
