"""The JSONPath subset of CRD printer columns (`additionalPrinterColumns[].jsonPath`), evaluated
on wire objects as the API server does for `kubectl get`: field steps (`.spec.clusterSets`),
escaped dots in a key (`.metadata.labels.cluster\\.open-cluster-management\\.io/placement`),
indexes (`[0]`, `[*]`) and equality filters (`.status.conditions[?(@.type=="Ready")].status`).

`values` returns every match in document order (none when a step is missing), `cell` turns the
first into a Table cell of the column's type as the API server's CRD table converter does.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import cache
from typing import Any

from controllers.embedded.printers import since

__all__ = ["JsonPathError", "cell", "go_format", "values"]

_FILTER = re.compile(r'^\?\(@((?:\.[^=!]+?)+)\s*(==|!=)\s*(?:"([^"]*)"|\'([^\']*)\'|([^)\s]+))\)$')

Step = tuple[str, Any]  # ("field", name) | ("index", int | None) | ("filter", (path, op, value))


class JsonPathError(ValueError):
    """A printer column's path this subset does not read."""


def _split_fields(text: str) -> list[str]:
    """`a.b\\.c` -> ["a", "b.c"]: dots split fields unless escaped."""
    fields, current, i = [], "", 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            current += text[i + 1]
            i += 2
            continue
        if char == ".":
            fields.append(current)
            current = ""
        else:
            current += char
        i += 1
    fields.append(current)
    return fields


def _filter_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


@cache
def _compile(path: str) -> tuple[Step, ...]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    steps: list[Step] = []
    while text:
        if text.startswith("["):
            end = text.find("]")
            if end < 0:
                raise JsonPathError(f"unclosed [ in {path!r}")
            inner = text[1:end]
            while inner.count("(") > inner.count(")") or inner.count('"') % 2:
                more = text.find("]", end + 1)  # a ] inside the filter's quotes
                if more < 0:
                    raise JsonPathError(f"unclosed [ in {path!r}")
                end, inner = more, text[1:more]
            text = text[end + 1 :]
            if inner == "*":
                steps.append(("index", None))
            elif inner.lstrip("-").isdigit():
                steps.append(("index", int(inner)))
            elif match := _FILTER.match(inner):
                where, op, dq, sq, bare = match.groups()
                value = dq if dq is not None else sq if sq is not None else _filter_value(bare)
                steps.append(("filter", (tuple(_split_fields(where[1:])), op, value)))
            else:
                raise JsonPathError(f"unsupported [{inner}] in {path!r}")
        elif text.startswith("."):
            text = text[1:]
            match = re.match(r"(?:\\.|[^.\[\\])*", text)
            raw = match.group(0) if match else ""
            text = text[len(raw) :]
            if raw:
                steps.extend(("field", name) for name in _split_fields(raw))
        else:
            raise JsonPathError(f"unexpected {text[:1]!r} in {path!r}")
    return tuple(steps)


def _get(node: Any, fields: tuple[str, ...]) -> Any:
    for name in fields:
        if not isinstance(node, dict) or name not in node:
            return _MISSING
        node = node[name]
    return node


_MISSING = object()


def values(doc: Any, path: str) -> list[Any]:
    """Every value `path` selects in `doc`, in document order."""
    current = [doc]
    for kind, arg in _compile(path):
        found: list[Any] = []
        for node in current:
            if kind == "field":
                if isinstance(node, dict) and arg in node:
                    found.append(node[arg])
            elif kind == "index":
                if isinstance(node, list):
                    if arg is None:
                        found.extend(node)
                    elif -len(node) <= arg < len(node):
                        found.append(node[arg])
            else:
                fields, op, wanted = arg
                if isinstance(node, list):
                    for item in node:
                        value = _get(item, fields)
                        if value is not _MISSING and (value == wanted) == (op == "=="):
                            found.append(item)
        current = found
    return current


def go_format(value: Any) -> str:
    """`value` as Go's fmt `%v` prints decoded JSON (maps with sorted keys)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        inner = " ".join(f"{key}:{go_format(value[key])}" for key in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(item) for item in value) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is None:
        return "<nil>"
    return str(value)


def cell(doc: Any, path: str, column_type: str, now: datetime) -> Any:
    """The Table cell of a printer column, as the API server's CRD table converter makes it:
    None when the path selects nothing; a date as its age (`5m`); a string column prints any
    other value as JSON (as `kubectl -o jsonpath` does); a value of the wrong type for the
    column in Go's `%v` form."""
    found = values(doc, path)
    if not found or found[0] is None:
        return None
    value = found[0]
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if column_type == "string":
        if isinstance(value, str):
            return value
        return json.dumps(value, separators=(",", ":"))
    if column_type == "integer" and number:
        return int(value)
    if column_type == "number" and number:
        return float(value)
    if column_type == "boolean" and isinstance(value, bool):
        return value
    if column_type == "date" and isinstance(value, str):
        return since(value, now)
    return go_format(value)
