"""Fault injection for reliability tests: errors per verb (by rate or the next N requests),
added latency, and forced 410 Gone on the next watches. Dropping open watch streams is a method
of the server, which owns them."""

from __future__ import annotations

import random
from collections import defaultdict, deque
from dataclasses import dataclass, field

__all__ = ["VERBS", "Faults"]

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass
class Faults:
    """What to break. `error_rates` maps a verb to the probability of answering `error_code`."""

    error_rates: dict[str, float] = field(default_factory=dict)
    error_code: int = 500
    latency: float = 0.0
    seed: int = 0
    gone_watches: int = 0
    _next: defaultdict[str, deque[int]] = field(default_factory=lambda: defaultdict(deque))

    def __post_init__(self) -> None:
        unknown = set(self.error_rates) - set(VERBS)
        if unknown:
            raise ValueError(f"unknown verbs {sorted(unknown)}; expected some of {VERBS}")
        self._random = random.Random(self.seed)

    def fail_next(self, verb: str, code: int = 500, times: int = 1) -> None:
        """Answer the next `times` requests of `verb` with `code` (deterministic)."""
        if verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}")
        self._next[verb].extend([code] * times)

    def force_gone(self, times: int = 1) -> None:
        """Answer the next `times` watches that name a resourceVersion with 410 Gone."""
        self.gone_watches += times

    def error_for(self, verb: str) -> int | None:
        """The error code to answer this request of `verb` with, if any."""
        if self._next[verb]:
            return self._next[verb].popleft()
        rate = self.error_rates.get(verb, 0.0)
        if rate and self._random.random() < rate:
            return self.error_code
        return None

    def take_gone(self) -> bool:
        if self.gone_watches > 0:
            self.gone_watches -= 1
            return True
        return False
