"""One model per version of the objects a controller both writes and watches.

A controller that watches what it writes reads every object it writes twice: in the answer to
its write and in the watch event echoing that write, at the same resourceVersion. A
resourceVersion names one version of one object, so both carry the same object: whichever of
the two the gateway reads first is validated into a model and kept here, and the other takes
that model instead of validating the same JSON again (at a cold start of the hub controller,
the echoes were a tenth of its work). The echo often arrives before the answer (the server
sends both at once). Only writes announced (`begin` .. `end`: the hub writer's, through
`EchoedGateway`) are shared: an answer or an event is kept only while a write of its object is
in flight, so the writes nobody watches (a Lease renewal) keep nothing. Entries nobody takes
(a watch with a selector, a write that failed) are dropped oldest first past `limit`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from apis.meta import KubeObject
from controllers.kube.paths import object_key

__all__ = ["Answers", "Rows"]

AnswerKey = tuple[str, str, str]  # kind, namespace/name (or name), resourceVersion

Rows = Callable[[dict[str, Any]], Any]
"""What a cache keeps of an object, made straight from its JSON; None when the JSON is not in a
shape it knows (then the model is read, and rejects it if invalid)."""

_ROW = "#row"  # rows are kept apart from models: only who asked for a row may take one


class Answers:
    """Models by (kind, key, resourceVersion), each taken at most once."""

    def __init__(self, limit: int = 8192) -> None:
        self.limit = limit
        self._kept: dict[AnswerKey, Any] = {}
        self._writing: Counter[tuple[str, str]] = Counter()
        self.reused = 0  # models taken from here instead of validated again

    def __len__(self) -> int:
        return len(self._kept)

    def begin(self, kind: str, key: str) -> None:
        """A write of object `key` of `kind` is about to be sent."""
        self._writing[(kind, key)] += 1

    def end(self, kind: str, key: str) -> None:
        """That write is answered (or failed)."""
        writing = self._writing
        writing[(kind, key)] -= 1
        if writing[(kind, key)] <= 0:
            del writing[(kind, key)]

    def writing(self, kind: str, key: str) -> bool:
        """Whether a write of the object is in flight."""
        return (kind, key) in self._writing

    def put(self, kind: str, key: str, version: str | None, obj: Any) -> None:
        """`obj` is object `key` of `kind` at `version`."""
        if not version:
            return
        kept = self._kept
        kept[(kind, key, version)] = obj
        if len(kept) > self.limit:
            del kept[next(iter(kept))]

    def take(self, kind: str, key: str, version: str | None) -> Any | None:
        """The model of exactly this version, forgotten here (None: none kept)."""
        if not version:
            return None
        obj = self._kept.pop((kind, key, version), None)
        if obj is not None:
            self.reused += 1
        return obj

    def shared(
        self,
        cls: type[KubeObject],
        doc: dict[str, Any],
        version: str,
        typed: Callable[[type[KubeObject], Any], Any],
        *,
        rows: Rows | None,
    ) -> Any:
        """`doc` (an object of `cls` at `version`) read once for a write's answer and its watch
        echo: the model (`typed(cls, doc)`) or, with `rows`, the row (the model when `rows`
        makes none)."""
        kind = cls.KIND
        meta = doc.get("metadata") or {}
        key = object_key(cls, meta.get("name") or "", meta.get("namespace"))
        slot = kind if rows is None else kind + _ROW
        seen = self.take(slot, key, version)
        if seen is not None:
            return seen
        obj = rows(doc) if rows is not None else None
        if obj is None:
            obj = typed(cls, doc)
        if self.writing(kind, key):
            self.put(slot, key, version, obj)
        return obj
