"""Structured logs: the text and JSON line formats, the reconcile context on every record, its
isolation between concurrent asyncio tasks, and an idempotent setup."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from controllers.runtime.logs import (
    current_key,
    current_reconcile_id,
    reconcile_context,
    setup_logging,
)

NOON = datetime(2026, 11, 22, 10, 0, 0, 123000, tzinfo=UTC)
log = logging.getLogger("controllers.scheduling")


@pytest.fixture(autouse=True)
def root_restored() -> Iterator[None]:
    """setup_logging changes the root logger; put it back as it was."""
    root = logging.getLogger()
    level = root.level
    yield
    for handler in [h for h in root.handlers if type(h).__module__ == "controllers.runtime.logs"]:
        root.removeHandler(handler)
    root.setLevel(level)


def logged(fmt: str = "text", level: str = "INFO") -> io.StringIO:
    stream = io.StringIO()
    setup_logging(fmt, level, stream, subject="placement")  # type: ignore[arg-type]
    return stream


def emit_at_noon(message: str, **fields: Any) -> None:
    """Log a record created at NOON (so the timestamp can be compared exactly)."""
    record = log.makeRecord(log.name, logging.INFO, __file__, 1, message, (), None, extra=fields)
    record.created, record.msecs = NOON.timestamp(), 123.0
    log.handle(record)


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_a_text_line_carries_time_level_logger_placement_reconcile_and_message() -> None:
    stream = logged("text")
    with reconcile_context("apps/web") as reconcile_id:
        emit_at_noon("scheduled 3 clusters")
    assert lines(stream) == [
        f"2026-11-22T10:00:00.123Z INFO controllers.scheduling placement=apps/web "
        f"reconcile={reconcile_id} scheduled 3 clusters"
    ]


def test_a_text_line_outside_a_reconcile_has_no_placement_and_shows_extras() -> None:
    stream = logged("text")
    emit_at_noon("synced", kinds=6)
    assert lines(stream) == ["2026-11-22T10:00:00.123Z INFO controllers.scheduling synced kinds=6"]


def test_a_json_line_has_the_fixed_keys_and_the_serialisable_extras() -> None:
    stream = logged("json")
    with reconcile_context("apps/web") as reconcile_id:
        emit_at_noon("wrote decisions", clusters=["a", "b"], took=0.5)
    (line,) = lines(stream)
    assert json.loads(line) == {
        "ts": "2026-11-22T10:00:00.123Z",
        "level": "INFO",
        "logger": "controllers.scheduling",
        "msg": "wrote decisions",
        "placement": "apps/web",
        "reconcile": reconcile_id,
        "clusters": ["a", "b"],
        "took": 0.5,
    }


def test_a_json_line_keeps_an_unserialisable_extra_as_its_repr_and_the_fixed_keys_win() -> None:
    stream = logged("json")
    log.info("odd", extra={"where": {1, 2}, "level": "mine"})
    doc = json.loads(stream.getvalue())
    assert doc["where"] == "{1, 2}"
    assert doc["level"] == "INFO"
    assert (doc["placement"], doc["reconcile"]) == ("", "")


def test_exceptions_are_in_both_formats() -> None:
    text, as_json = io.StringIO(), io.StringIO()
    for stream, fmt in ((text, "text"), (as_json, "json")):
        setup_logging(fmt, "INFO", stream, subject="placement")  # type: ignore[arg-type]
        try:
            raise KeyError("cluster-7")
        except KeyError:
            log.exception("reconcile failed")
    exception = json.loads(as_json.getvalue())["exception"]
    assert "reconcile failed\nTraceback" in text.getvalue()
    assert "KeyError: 'cluster-7'" in text.getvalue()
    assert exception.startswith("Traceback") and "KeyError: 'cluster-7'" in exception


def test_setting_up_twice_replaces_the_handler_instead_of_adding_one() -> None:
    first = logged("text")
    second = logged("json", "debug")
    log.debug("once")
    ours = [h for h in logging.getLogger().handlers if type(h).__name__ == "_Handler"]
    assert len(ours) == 1
    assert first.getvalue() == ""
    assert [json.loads(line)["msg"] for line in lines(second)] == ["once"]


def test_the_level_filters_records() -> None:
    stream = logged("text", "warning")
    log.info("quiet")
    log.warning("loud")
    assert [line.rsplit(" ", 1)[-1] for line in lines(stream)] == ["loud"]


@pytest.mark.parametrize(
    ("fmt", "level", "message"),
    [
        pytest.param("xml", "INFO", "unknown log format 'xml'", id="format"),
        pytest.param("text", "chatty", "unknown log level 'chatty'", id="level"),
    ],
)
def test_unknown_formats_and_levels_are_rejected_naming_them(
    fmt: str,
    level: str,
    message: str,
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        setup_logging(fmt, level, subject="placement")  # type: ignore[arg-type]


def test_each_reconcile_gets_a_fresh_short_id_and_nesting_restores_the_outer_one() -> None:
    with reconcile_context("apps/a") as outer:
        with reconcile_context("apps/b") as inner:
            nested = (current_key(), current_reconcile_id())
        restored = (current_key(), current_reconcile_id())
    assert re.fullmatch(r"[0-9a-f]{8}", outer)
    assert inner != outer
    assert nested == ("apps/b", inner)
    assert restored == ("apps/a", outer)
    assert (current_key(), current_reconcile_id()) == ("", "")


@pytest.mark.asyncio
async def test_concurrent_reconciles_in_asyncio_tasks_never_see_each_others_context() -> None:
    stream = logged("json")
    turn = {key: asyncio.Event() for key in ("apps/a", "apps/b")}

    async def reconcile(key: str, other: str) -> str:
        with reconcile_context(key) as reconcile_id:
            log.info("start")
            turn[other].set()
            await turn[key].wait()  # the other task logs in between
            log.info("end")
        return reconcile_id

    ids = await asyncio.gather(reconcile("apps/a", "apps/b"), reconcile("apps/b", "apps/a"))
    log.info("after")
    records = [json.loads(line) for line in lines(stream)]
    by_id = dict(zip(ids, ("apps/a", "apps/b"), strict=True))
    assert [r["msg"] for r in records] == ["start", "start", "end", "end", "after"]
    assert records[1]["placement"] != records[0]["placement"]
    assert all(by_id[r["reconcile"]] == r["placement"] for r in records[:4])
    assert (records[4]["placement"], records[4]["reconcile"]) == ("", "")


@pytest.mark.asyncio
async def test_a_task_started_inside_a_reconcile_inherits_its_context() -> None:
    with reconcile_context("apps/web") as reconcile_id:
        inherited = await asyncio.create_task(_context())
    assert inherited == ("apps/web", reconcile_id)


async def _context() -> tuple[str, str]:
    return current_key(), current_reconcile_id()
