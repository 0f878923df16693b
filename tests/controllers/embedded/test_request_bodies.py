"""A request body's shape check (`read_body`): a JSON body with few brackets is taken without
walking it, and the answer is the walk's on both sides of the depth limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from controllers.embedded.requests import MAX_BODY_DEPTH, read_body
from controllers.embedded.status import StatusError


class _Content:
    def __init__(self, raw: bytes) -> None:
        self._raw = raw

    async def read(self, size: int) -> bytes:
        chunk, self._raw = self._raw[:size], self._raw[size:]
        return chunk


class _Request:
    def __init__(self, raw: bytes) -> None:
        self.content = _Content(raw)
        self.content_length = len(raw)
        self.content_type = "application/json"


def _read(raw: str) -> Any:
    return asyncio.run(read_body(_Request(raw.encode())))  # type: ignore[arg-type]


def _nested(lists: int, strings: int = 0) -> str:
    """A body whose deepest list sits at depth `lists` + 1 (root and spec above), with
    `strings` brackets inside a string value."""
    return '{"spec": {"s": "' + "[" * strings + '", "x": ' + "[" * lists + "]" * lists + "}}"


@pytest.mark.parametrize("strings", [0, 10])
def test_the_deepest_body_allowed_is_taken_with_or_without_the_walk(strings: int) -> None:
    # MAX_BODY_DEPTH - 2 lists: the deepest at depth MAX_BODY_DEPTH - 1, and MAX_BODY_DEPTH
    # brackets in all (taken unwalked); with brackets in a string too, walked.
    body = _read(_nested(MAX_BODY_DEPTH - 2, strings))
    deepest = body["spec"]["x"]
    for _ in range(MAX_BODY_DEPTH - 3):
        (deepest,) = deepest
    assert deepest == []


@pytest.mark.parametrize("strings", [0, 10])
def test_one_level_deeper_is_refused(strings: int) -> None:
    with pytest.raises(StatusError, match=f"nests deeper than {MAX_BODY_DEPTH} levels"):
        _read(_nested(MAX_BODY_DEPTH - 1, strings))


def test_brackets_in_strings_only_make_the_body_walked() -> None:
    body = _read(_nested(2, strings=5 * MAX_BODY_DEPTH))
    assert body["spec"]["x"] == [[]] and body["spec"]["s"] == "[" * 5 * MAX_BODY_DEPTH


def _read_bytes(raw: bytes) -> Any:
    return asyncio.run(read_body(_Request(raw)))  # type: ignore[arg-type]


def test_a_body_decodes_to_the_values_json_loads_gives() -> None:
    raw = (
        b'{"a": [1, 1.0, -0.0, 1e400, 0.1, 123456789012345678901234567890, null, true], '
        b'"s": "\\u00e9\\n\\u0000", "n": NaN, "a": "last wins"}'
    )
    body = _read_bytes(raw)
    assert body == {**json.loads(raw), "n": body["n"]} and body["n"] != body["n"]  # NaN
    assert body["a"] == "last wins"
    many = _read_bytes(b'{"v": [1, 1.0, -0.0, 5e-324, 2.5e10]}')["v"]
    assert [(type(v), repr(v)) for v in many] == [
        (int, "1"),
        (float, "1.0"),
        (float, "-0.0"),
        (float, "5e-324"),
        (float, "25000000000.0"),
    ]


def test_what_the_fast_parser_refuses_is_read_as_before() -> None:
    # A lone surrogate escape and a UTF-16 body: json.loads takes both.
    assert _read_bytes(b'{"s": "\\ud800"}') == {"s": "\ud800"}
    assert _read_bytes('{"s": "x"}'.encode("utf-16")) == {"s": "x"}
    # An integer of more digits than Python converts, invalid UTF-8, not JSON: 400 as before.
    for raw in (b"[" + b"1" * 5000 + b"]", b'"\xff"', b"{", b"[1,]"):
        with pytest.raises(StatusError, match="not valid JSON"):
            _read_bytes(raw)
