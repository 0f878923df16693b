"""The pod scheduler's metrics, under kube-scheduler's names, labels and buckets, so that the
dashboards and alerts written for kube-scheduler read ours too. The runtime's series (process,
workqueue, rest_client_requests_total) come with `MetricsRegistry`.

* `scheduler_schedule_attempts_total{profile,result}`: one per scheduling cycle; result
  `scheduled`, `unschedulable` or `error`.
* `scheduler_scheduling_attempt_duration_seconds{profile,result}`: how long a cycle took (the
  engine's work, not the binding, which runs concurrently).
* `scheduler_pending_pods{queue}`: pods in `active`, `backoff`, `unschedulable` and `gated`,
  read from the engine when scraped.
* `scheduler_pod_scheduling_attempts`: cycles a pod took until it was scheduled.
* `scheduler_preemption_attempts_total` and `scheduler_preemption_victims` (victims per
  preemption that chose some).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from prometheus_client import Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from controllers.runtime.metrics import MetricsRegistry

__all__ = ["PENDING_QUEUES", "EngineCounters", "SchedulerMetrics"]

# kube-scheduler's buckets: ExponentialBuckets(0.001, 2, 15), (1, 2, 5) and (1, 2, 7).
ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))
ATTEMPTS_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0)
VICTIM_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")


class EngineCounters(Protocol):
    """What the engine counts (its `EngineStats`)."""

    @property
    def attempts(self) -> dict[str, int]: ...

    @property
    def preemption_attempts(self) -> int: ...


class _NoCounts:
    attempts: dict[str, int] = {}
    preemption_attempts = 0


class _FromEngine(Collector):
    """The series the engine counts, read from it at scrape time: the attempts by result
    (`scheduled` counts confirmed bindings), the preemption attempts, the pending pods."""

    def __init__(self, profile: str) -> None:
        self.profile = profile
        self.sizes: Callable[[], Mapping[str, int]] = dict
        self.stats: Callable[[], EngineCounters | Mapping[str, EngineCounters]] = _NoCounts

    def collect(self) -> Iterator[Metric]:
        found = self.stats()
        # One engine per profile (several profiles): each profile's own counts.
        per_profile = found if isinstance(found, Mapping) else {self.profile: found}
        attempts = CounterMetricFamily(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            labels=["profile", "result"],
        )
        for profile, stats in per_profile.items():
            for result in ("scheduled", "unschedulable", "error"):
                attempts.add_metric([profile, result], stats.attempts.get(result, 0))
        yield attempts
        yield CounterMetricFamily(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            value=sum(stats.preemption_attempts for stats in per_profile.values()),
        )
        family = GaugeMetricFamily(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
            "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable pods that the scheduler never attempted to "
            "schedule because they are gated.",
            labels=["queue"],
        )
        sizes = self.sizes()
        for queue in PENDING_QUEUES:
            family.add_metric([queue], float(sizes.get(queue, 0)))
        yield family


class SchedulerMetrics(MetricsRegistry):
    """The registry of one pod scheduler (see the module docstring)."""

    def __init__(self, profile: str) -> None:
        super().__init__()
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["profile", "result"],
            buckets=ATTEMPT_BUCKETS,
            registry=self.registry,
        )
        self.pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=ATTEMPTS_BUCKETS,
            registry=self.registry,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=VICTIM_BUCKETS,
            registry=self.registry,
        )
        self._engine = _FromEngine(profile)
        self.registry.register(self._engine)

    def read_engine(
        self,
        stats: Callable[[], EngineCounters | Mapping[str, EngineCounters]],
        sizes: Callable[[], Mapping[str, int]],
    ) -> None:
        """Where the series the engine counts are read from at scrape time: one engine's
        counters, or each profile's by its name."""
        self._engine.stats = stats
        self._engine.sizes = sizes
