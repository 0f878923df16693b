"""Structured logs: every line says which object and which reconcile it belongs to.

`reconcile_context(key)` puts the key of the object being reconciled and a fresh short
reconcile id into context variables for the duration of one reconcile; a filter on the handler
copies them onto every record as `reconcile_key` and `reconcile_id`. Context variables follow
asyncio tasks (each task runs in a copy of its creator's context), so concurrent reconciles on
one event loop never see each other's ids. `setup_logging` installs one handler on the root
logger, as text for people or as JSON lines for a log pipeline; its `subject` names the key in
the output (the hub's lines say `placement=<ns/name>`).
"""

from __future__ import annotations

import json
import logging
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

__all__ = [
    "ContextFilter",
    "JsonFormatter",
    "TextFormatter",
    "current_key",
    "current_reconcile_id",
    "reconcile_context",
    "setup_logging",
]

LogFormat = Literal["text", "json"]
DEFAULT_SUBJECT = "key"

_key: ContextVar[str] = ContextVar("reconcile_key", default="")
_reconcile_id: ContextVar[str] = ContextVar("reconcile_id", default="")

# Attributes every LogRecord has; anything else on a record came in through `extra=`.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "reconcile_key",
    "reconcile_id",
}


def current_key() -> str:
    """The key of the object being reconciled in this context ("" outside a reconcile)."""
    return _key.get()


def current_reconcile_id() -> str:
    """The id of the reconcile running in this context ("" outside a reconcile)."""
    return _reconcile_id.get()


@contextmanager
def reconcile_context(key: str) -> Iterator[str]:
    """Tag the logs of one reconcile of the object `key`; yields the fresh reconcile id."""
    reconcile_id = uuid.uuid4().hex[:8]
    key_token = _key.set(key)
    id_token = _reconcile_id.set(reconcile_id)
    try:
        yield reconcile_id
    finally:
        _reconcile_id.reset(id_token)
        _key.reset(key_token)


class ContextFilter(logging.Filter):
    """Copies the reconcile context onto each record (a handler filter, so that records of
    every logger get it, not only those of one logger)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.reconcile_key = _key.get()
        record.reconcile_id = _reconcile_id.get()
        return True


def _timestamp(record: logging.LogRecord) -> str:
    when = datetime.fromtimestamp(record.created, UTC)
    return f"{when:%Y-%m-%dT%H:%M:%S}.{int(record.msecs):03d}Z"


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD and k[:1] != "_"}


def _json_value(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)  # kept readable rather than dropped
    return value


class TextFormatter(logging.Formatter):
    """`<ts> <LEVEL> <logger> [<subject>=<key> reconcile=<id>] <message> [k=v ...]`."""

    def __init__(self, subject: str = DEFAULT_SUBJECT) -> None:
        super().__init__()
        self.subject = subject

    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), record.levelname, record.name]
        key = getattr(record, "reconcile_key", "")
        if key:
            parts.append(f"{self.subject}={key} reconcile={getattr(record, 'reconcile_id', '')}")
        parts.append(record.getMessage())
        parts.extend(f"{key}={value}" for key, value in _extras(record).items())
        line = " ".join(parts)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + record.exc_text
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, `<subject>` (the key), reconcile,
    exception and the record's `extra=` fields (those that are not JSON as their repr)."""

    def __init__(self, subject: str = DEFAULT_SUBJECT) -> None:
        super().__init__()
        self.subject = subject

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {key: _json_value(value) for key, value in _extras(record).items()}
        # The fixed keys win over an extra of the same name.
        doc.update(
            {
                "ts": _timestamp(record),
                "level": record.levelname,
                "logger": record.name,
                "msg": record.getMessage(),
                self.subject: getattr(record, "reconcile_key", ""),
                "reconcile": getattr(record, "reconcile_id", ""),
            }
        )
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            doc["exception"] = record.exc_text
        if record.stack_info:
            doc["stack"] = self.formatStack(record.stack_info)
        return json.dumps(doc, ensure_ascii=False)


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler `setup_logging` installs (its type tells it apart from others' handlers)."""


def setup_logging(
    format: LogFormat = "text",
    level: str = "INFO",
    stream: TextIO | None = None,
    *,
    subject: str = DEFAULT_SUBJECT,
) -> None:
    """Log to `stream` (stderr) from the root logger at `level`, naming the key of the object
    being reconciled `subject`; calling it again replaces the handler it installed before
    instead of adding a second one."""
    formatters: dict[str, type[logging.Formatter]] = {"text": TextFormatter, "json": JsonFormatter}
    if format not in formatters:
        raise ValueError(f"unknown log format {format!r}: expected one of {sorted(formatters)}")
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}: expected DEBUG, INFO, WARNING or ERROR")
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
        old.close()
    handler = _Handler(stream if stream is not None else sys.stderr)
    handler.addFilter(ContextFilter())
    handler.setFormatter(formatters[format](subject))
    root.addHandler(handler)
    root.setLevel(numeric)
