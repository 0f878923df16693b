"""Progress of a long command on stderr: nothing for a short run; once it has taken `after`
seconds, one line every `every` seconds saying what it is doing (and how far it is, when it
counts), with the time elapsed; and a last line when it is done.

    placement simulate: reading the manifests, 5.0 s elapsed
    placement simulate: scheduled 4,120/10,000 placements, 10.0 s elapsed
    placement simulate: done, 10,000 placements in 31.2 s

A thread writes the lines, so a stage that reports nothing (reading files) still shows.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Progress lines for `command` on `stream`; use as a context manager around the work."""

    def __init__(
        self,
        command: str,
        stream: TextIO,
        *,
        after: float,
        every: float,
        unit: str = "placements",
        verb: str = "scheduled",
    ) -> None:
        self.command = command
        self.stream = stream
        self.after = after
        self.every = every
        self.unit = unit
        self.verb = verb
        self.printed = 0
        self._stage = "starting"
        self._done = 0
        self._total = 0
        self._began = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{command} progress", daemon=True)

    def stage(self, name: str) -> None:
        """What the command does now (`reading the manifests`), when it does not count."""
        self._stage = name
        self._total = 0

    def advance(self, done: int, total: int) -> None:
        """`done` of `total` items are through (the scheduling loop calls this per item)."""
        self._done, self._total = done, total

    def elapsed(self) -> float:
        return time.monotonic() - self._began

    def line(self) -> str:
        """The progress line as it would be printed now."""
        if self._total:
            what = f"{self.verb} {self._done:,}/{self._total:,} {self.unit}"
        else:
            what = self._stage
        return f"{self.command}: {what}, {self.elapsed():.1f} s elapsed"

    def _print(self, line: str) -> None:
        try:
            print(line, file=self.stream, flush=True)
        except (OSError, ValueError):  # stderr closed: progress is not worth failing for
            return
        self.printed += 1

    def _run(self) -> None:
        if self._stop.wait(self.after):
            return
        while True:
            self._print(self.line())
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> Progress:
        self._began = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        if kind is None and self.printed:
            count = f"{self._done:,} {self.unit} in " if self._done else ""
            self._print(f"{self.command}: done, {count}{self.elapsed():.1f} s")
