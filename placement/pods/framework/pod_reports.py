"""The words and shapes the engine writes on a pod, as kube-scheduler writes them: the
`PodScheduled=False` condition, a FailedScheduling event's note cut at the API server's limit,
and durations printed as Go prints them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from apis.core import Pod

__all__ = [
    "EVENT_MESSAGE_BYTES",
    "event_message",
    "go_duration",
    "has_condition",
    "scheduled_condition",
]


def go_duration(value: timedelta) -> str:
    """A duration as Go prints a time.Duration (`10s`, `1m30s`, `1.5s`), for kube's messages."""
    micros = value // timedelta(microseconds=1)
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = rest / 1_000_000
    text = f"{seconds:.6f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def scheduled_condition(reason: str, message: str) -> dict[str, Any]:
    """The PodScheduled=False condition kube-scheduler writes on a pod it could not place."""
    return {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}


EVENT_MESSAGE_BYTES = 1024
"""The API server's limit on an event's note; kube-scheduler cuts longer messages itself."""


def event_message(message: str) -> str:
    """A FailedScheduling message as kube-scheduler sends it: whole up to 1024 bytes, else
    cut to 1020 bytes followed by ` ...` (never splitting a UTF-8 character here)."""
    raw = message.encode()
    if len(raw) <= EVENT_MESSAGE_BYTES:
        return message
    suffix = " ..."
    return raw[: EVENT_MESSAGE_BYTES - len(suffix)].decode("utf-8", "ignore") + suffix


def has_condition(pod: Pod, condition: Mapping[str, Any]) -> bool:
    """The pod carries `condition` already (same type, and every field given equal)."""
    status = pod.status
    for existing in (status.conditions if status else None) or ():
        if existing.get("type") == condition["type"]:
            return all(existing.get(k) == v for k, v in condition.items())
    return False
