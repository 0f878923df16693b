"""Objects the models refuse, met in a list or a watch.

A real API server may hold objects our models refuse: a check that only OCM's admission webhook
makes (a ManagedClusterSetBinding named otherwise than its set), where no webhook runs. One such
object must not fail every list of its kind (a controller whose cache never syncs schedules
nothing at all), so a caller that can live without it passes an `Unreadable`: the gateway tells
it the object's key and why, and leaves the object out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from apis.errors import ObjectValidationError
from apis.meta import KubeObject
from controllers.kube.paths import object_key
from controllers.kube.transport import InvalidResponseError

__all__ = ["Unreadable", "read_event", "read_items", "refused"]

T = TypeVar("T")

Unreadable = Callable[[str, str], None]
"""Told of an object the models refuse: its cache key (`KubeObject.key`), and why."""


def refused(
    cls: type[KubeObject], doc: Any, error: InvalidResponseError, unreadable: Unreadable
) -> tuple[str, dict[str, Any]]:
    """The key and metadata of `doc` (an object, or a watch event's line) that `error` says the
    models refuse, once told to `unreadable`; `error` itself when it is about something else
    (not JSON, not an event: the answer is broken, not one object)."""
    if not isinstance(error.__cause__, ObjectValidationError):
        raise error
    if isinstance(doc, bytes):
        doc = json.loads(doc).get("object") or {}
    meta = (doc.get("metadata") if isinstance(doc, dict) else None) or {}
    key = object_key(cls, str(meta.get("name") or ""), meta.get("namespace"))
    unreadable(key, str(error.__cause__))
    return key, meta


def read_items(
    cls: type[KubeObject],
    items: Iterable[Any],
    typed: Callable[[Any, Any], T],
    unreadable: Unreadable | None,
) -> list[T]:
    """A list's items as models (`typed`); one the models refuse fails the list, or with
    `unreadable` is told to it and left out."""
    out = []
    for item in items:
        try:
            out.append(typed(cls, item))
        except InvalidResponseError as exc:
            if unreadable is None:
                raise
            refused(cls, item, exc, unreadable)
    return out


def read_event(
    cls: type[KubeObject],
    line: bytes,
    read: Callable[[], T],
    unreadable: Unreadable | None,
    make: Callable[..., T],
) -> T:
    """A watch event (`read`); one whose object the models refuse fails, or with
    `unreadable` is told to it and made (`make`) without its object: a BOOKMARK at its
    resourceVersion, or a DELETED, carrying the object's key."""
    try:
        return read()
    except InvalidResponseError as exc:
        if unreadable is None:
            raise
        key, meta = refused(cls, line, exc, unreadable)
        kind = "DELETED" if json.loads(line).get("type") == "DELETED" else "BOOKMARK"
        return make(kind, None, str(meta.get("resourceVersion", "")), key)
