"""The metrics registry each of our controllers keeps, served on `/metrics` by
`controllers.runtime.http`.

A controller subclasses `MetricsRegistry` and declares its series on `self.registry`. Each
instance has a registry of its own: tests run several controllers per process, and the
process-global registry would refuse the second set of the same names.

Every registry also carries what any Kubernetes controller exposes, under the names client-go
and the Prometheus client libraries give them, so existing dashboards and alerts apply:

* `process_*` (CPU seconds, resident and virtual memory, open and max file descriptors, start
  time) and `python_info`, `python_gc_*`: the process collectors of prometheus_client;
* `workqueue_*{name}`: depth, adds, queue and work durations, retries, unfinished work and the
  longest running processor, fed by the work queue through `QueueMetrics` (`workqueue(name)`);
* `rest_client_requests_total{code,host,method}`: every request the gateway sends, by HTTP
  status code (`<error>` when no answer came), fed through `request_observer(host)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)

from controllers.kube.transport import RequestObserver

__all__ = ["QUEUE_BUCKETS", "Exposition", "MetricsRegistry", "WorkqueueMetrics"]

# Kubernetes components expose no `<name>_created` series, and neither do we. The switch is
# process-wide, which is right for a process that serves one controller's metrics.
disable_created_metrics()  # type: ignore[no-untyped-call]

# client-go's workqueue buckets: prometheus.ExponentialBuckets(10e-9, 10, 10), 10 ns to 10 s.
QUEUE_BUCKETS: Final = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


class Exposition(Protocol):
    """What the HTTP endpoint serves on `/metrics`."""

    def exposition(self) -> bytes:
        """The current samples in the Prometheus text format."""


class WorkqueueMetrics:
    """The `workqueue_*` series of one named queue, as client-go's workqueue keeps them: the
    queue calls `added`, `started`, `finished` and `retried`; the two gauges of work in
    progress are computed at scrape time from when each key started."""

    def __init__(
        self, families: _QueueFamilies, name: str, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._now = now
        self._added_at: dict[str, float] = {}
        self._started_at: dict[str, float] = {}
        self._depth = families.depth.labels(name=name)
        self._adds = families.adds.labels(name=name)
        self._latency = families.latency.labels(name=name)
        self._work = families.work.labels(name=name)
        self._retries = families.retries.labels(name=name)
        families.unfinished.labels(name=name).set_function(self._unfinished)
        families.longest.labels(name=name).set_function(self._longest)

    def added(self, key: str) -> None:
        """`key` became due (queued, or owed a run after the one in progress)."""
        self._adds.inc()
        self._depth.inc()
        self._added_at.setdefault(key, self._now())

    def started(self, key: str) -> None:
        """A worker took `key`."""
        now = self._now()
        self._depth.dec()
        added = self._added_at.pop(key, None)
        if added is not None:
            self._latency.observe(now - added)
        self._started_at[key] = now

    def finished(self, key: str) -> None:
        """The worker is done with `key`."""
        started = self._started_at.pop(key, None)
        if started is not None:
            self._work.observe(self._now() - started)

    def retried(self, key: str) -> None:
        """`key` was scheduled again after a delay (client-go counts every AddAfter)."""
        self._retries.inc()

    def dropped(self, keys: int) -> None:
        """`keys` due keys were thrown away without being processed (a shutdown)."""
        self._depth.dec(keys)
        self._added_at.clear()

    def _unfinished(self) -> float:
        now = self._now()
        return sum(now - started for started in self._started_at.values())

    def _longest(self) -> float:
        if not self._started_at:
            return 0.0
        return self._now() - min(self._started_at.values())


class _QueueFamilies:
    """The `workqueue_*` metric families of one registry (one child per queue name)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, ["name"], registry=registry)

        def histogram(name: str, doc: str) -> Histogram:
            return Histogram(name, doc, ["name"], buckets=QUEUE_BUCKETS, registry=registry)

        self.depth = gauge("workqueue_depth", "Current depth of workqueue")
        # prometheus_client appends `_total` to counter names itself.
        self.adds = Counter(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            ["name"],
            registry=registry,
        )
        self.latency = histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
        )
        self.work = histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
        )
        self.unfinished = gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed "
            "by work_duration. Large values indicate stuck threads.",
        )
        self.longest = gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
        )
        self.retries = Counter(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            ["name"],
            registry=registry,
        )


class MetricsRegistry:
    """A registry of one controller's metrics; subclasses add their series to `registry`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # Read at scrape time (/proc, gc.get_stats()): nothing on the hot path.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._queues = _QueueFamilies(self.registry)
        self._requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)

    def workqueue(self, name: str, now: Callable[[], float] = time.monotonic) -> WorkqueueMetrics:
        """The hook of the work queue called `name` (the `name` label of its series)."""
        return WorkqueueMetrics(self._queues, name, now)

    def request_observer(self, host: str) -> RequestObserver:
        """Counts each request to `host` (`host:port`) by method and status code."""
        children: dict[tuple[str, str], Counter] = {}
        requests = self._requests

        def observe(method: str, code: str) -> None:
            child = children.get((method, code))
            if child is None:
                child = children[method, code] = requests.labels(
                    code=code, method=method, host=host
                )
            child.inc()

        return observe
