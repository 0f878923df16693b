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

The last two are on the hot path (a few calls per reconcile and per request), so they are not
prometheus_client metric objects (a lock and a label lookup per call, about 1-2 µs each) but
plain counts kept by the one event-loop thread that runs the controller and turned into metric
families when `/metrics` is scraped, on that same thread.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Final, Protocol

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from controllers.kube.transport import RequestObserver

__all__ = ["QUEUE_BUCKETS", "Exposition", "MetricsRegistry", "WorkqueueMetrics"]

# Kubernetes components expose no `<name>_created` series, and neither do we. The switch is
# process-wide, which is right for a process that serves one controller's metrics.
disable_created_metrics()  # type: ignore[no-untyped-call]

# client-go's workqueue buckets: prometheus.ExponentialBuckets(10e-9, 10, 10), 10 ns to 10 s.
QUEUE_BUCKETS: Final = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
_LE: Final = (*(floatToGoString(b) for b in QUEUE_BUCKETS), "+Inf")  # type: ignore[no-untyped-call]


class Exposition(Protocol):
    """What the HTTP endpoint serves on `/metrics`."""

    def exposition(self) -> bytes:
        """The current samples in the Prometheus text format."""


class _Durations:
    """A histogram over QUEUE_BUCKETS kept as plain counts (see the module docstring)."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * len(_LE)  # per bucket, not cumulative; the last one is +Inf
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(QUEUE_BUCKETS, seconds)] += 1
        self.total += seconds

    def buckets(self) -> list[tuple[str, float]]:
        out, running = [], 0
        for le, count in zip(_LE, self.counts, strict=True):
            running += count
            out.append((le, float(running)))
        return out


class WorkqueueMetrics:
    """The `workqueue_*` series of one named queue, as client-go's workqueue keeps them: the
    queue calls `added`, `started`, `finished`, `retried` and `dropped`; depth and the two
    gauges of work in progress are computed at scrape time from when each key was added or
    started."""

    def __init__(self, name: str, now: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self._now = now
        self._added_at: dict[str, float] = {}  # due keys not taken yet: the depth
        self._started_at: dict[str, float] = {}
        self.adds = 0
        self.retries = 0
        self.waited = _Durations()
        self.worked = _Durations()

    def added(self, key: str) -> None:
        """`key` became due (queued, or owed a run after the one in progress)."""
        self.adds += 1
        if key not in self._added_at:
            self._added_at[key] = self._now()

    def started(self, key: str) -> None:
        """A worker took `key`."""
        now = self._now()
        added = self._added_at.pop(key, None)
        if added is not None:
            self.waited.observe(now - added)
        self._started_at[key] = now

    def finished(self, key: str) -> None:
        """The worker is done with `key`."""
        started = self._started_at.pop(key, None)
        if started is not None:
            self.worked.observe(self._now() - started)

    def retried(self, key: str) -> None:
        """`key` was scheduled again after a delay (client-go counts every AddAfter)."""
        self.retries += 1

    def dropped(self, keys: int) -> None:
        """Due keys were thrown away without being processed (a shutdown)."""
        self._added_at.clear()

    @property
    def depth(self) -> int:
        return len(self._added_at)

    def unfinished(self) -> float:
        """Seconds of work in progress, summed over the keys being processed."""
        now = self._now()
        return sum(now - started for started in self._started_at.values())

    def longest(self) -> float:
        """Seconds the longest-running key has been processed."""
        if not self._started_at:
            return 0.0
        return self._now() - min(self._started_at.values())


class _QueueCollector(Collector):
    """The `workqueue_*` families of every queue of one registry, one sample per queue."""

    def __init__(self) -> None:
        self.queues: list[WorkqueueMetrics] = []

    def collect(self) -> Iterator[Metric]:
        name = ["name"]
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=name)
        adds = CounterMetricFamily(
            "workqueue_adds", "Total number of adds handled by workqueue", labels=name
        )
        waited = HistogramMetricFamily(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            labels=name,
        )
        worked = HistogramMetricFamily(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels=name,
        )
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed "
            "by work_duration. Large values indicate stuck threads.",
            labels=name,
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=name,
        )
        retries = CounterMetricFamily(
            "workqueue_retries", "Total number of retries handled by workqueue", labels=name
        )
        for queue in self.queues:
            labels = [queue.name]
            depth.add_metric(labels, queue.depth)
            adds.add_metric(labels, queue.adds)
            waited.add_metric(labels, queue.waited.buckets(), queue.waited.total)
            worked.add_metric(labels, queue.worked.buckets(), queue.worked.total)
            unfinished.add_metric(labels, queue.unfinished())
            longest.add_metric(labels, queue.longest())
            retries.add_metric(labels, queue.retries)
        yield from (depth, adds, waited, worked, unfinished, longest, retries)


class _RequestCollector(Collector):
    """`rest_client_requests_total{code,host,method}` from plain counts."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, str], int] = {}

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            labels=["code", "host", "method"],
        )
        for (host, method, code), count in sorted(self.counts.items()):
            requests.add_metric([code, host, method], count)
        yield requests


class MetricsRegistry:
    """A registry of one controller's metrics; subclasses add their series to `registry`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # Read at scrape time (/proc, gc.get_stats()): nothing on the hot path.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._queues = _QueueCollector()
        self._requests = _RequestCollector()
        self.registry.register(self._queues)
        self.registry.register(self._requests)

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)

    def workqueue(self, name: str, now: Callable[[], float] = time.monotonic) -> WorkqueueMetrics:
        """The hook of the work queue called `name` (the `name` label of its series)."""
        queue = WorkqueueMetrics(name, now)
        self._queues.queues.append(queue)
        return queue

    def request_observer(self, host: str) -> RequestObserver:
        """Counts each request to `host` (`host:port`) by method and status code."""
        counts = self._requests.counts

        def observe(method: str, code: str) -> None:
            key = (host, method, code)
            counts[key] = counts.get(key, 0) + 1

        return observe
