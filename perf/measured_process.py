"""A process a side-by-side spawns and measures (`perf.vs_kube`'s schedulers, `perf.vs_ocm`'s
hub controllers): its CPU seconds and peak RSS read from /proc, a SIGTERM timed to its exit,
the last lines of its log."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from perf.child_pods import _cpu_seconds

__all__ = ["MeasuredProcess", "rss_mib"]


def rss_mib(pid: int) -> float | None:
    """Peak resident memory of `pid` (VmHWM), MiB."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


@dataclass
class MeasuredProcess:
    """A spawned process: which one, its readiness URL, its log, when it was spawned."""

    name: str
    popen: subprocess.Popen[bytes]
    ready_url: str
    log: Path
    spawned: float

    @classmethod
    def spawn(
        cls, name: str, argv: list[str], ready_url: str, log: Path, env: dict[str, str]
    ) -> MeasuredProcess:
        """Start `argv` with stdout and stderr to `log`."""
        with log.open("wb") as handle:
            spawned = time.perf_counter()
            popen = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=env)
        return cls(name, popen, ready_url, log, spawned)

    def cpu(self) -> float:
        return _cpu_seconds(self.popen.pid) or 0.0

    def rss_mib(self) -> float | None:
        return rss_mib(self.popen.pid)

    def stop(self) -> tuple[float, int]:
        """SIGTERM: seconds until it exited (SIGKILL after 30 s) and its exit code."""
        began = time.perf_counter()
        self.popen.send_signal(signal.SIGTERM)
        try:
            code = self.popen.wait(30)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            code = self.popen.wait()
        return time.perf_counter() - began, code

    def tail(self, lines: int = 5) -> list[str]:
        text = self.log.read_text(errors="replace").splitlines()
        return [line for line in text if line.strip()][-lines:]
