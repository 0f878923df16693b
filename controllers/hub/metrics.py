"""The placement controller's Prometheus metrics, served on `/metrics` by the runtime's HTTP
endpoint.

The four scheduling histograms carry OCM's names, labels and buckets (its
`pkg/placement/controllers/metrics`), so dashboards built for OCM's placement controller keep
working. `scheduling_cel_runtime_duration_seconds{name="placement_scheduling"}` observes, as
OCM's does, the time one cluster's CEL expressions take; ours only runs for clusters whose
object (or a score it reads) changed since the last evaluation, the others are cached
(`placement.selectors.cel_mask`), so it counts evaluations, not cluster x cycle pairs.
`instrument` hands the hook to the scheduler's `Predicate`. The `placement_*` series are this
controller's own (queue, reconciles, writes, events, leadership). The registry also carries
the runtime's `process_*`, `workqueue_*` and `rest_client_requests_total` series
(`controllers.runtime.metrics`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, Literal

from prometheus_client import Counter, Gauge, Histogram

from controllers.runtime.metrics import MetricsRegistry
from placement.scheduler import Scheduler
from plugins.predicate import Predicate

__all__ = [
    "BUCKETS",
    "SCHEDULING_NAME",
    "Metrics",
    "PluginType",
    "ReconcileResult",
    "WriteVerb",
]

# OCM's ExponentialBuckets(1e-6, 10, 10): one bucket per decade, a microsecond to 1000 s.
BUCKETS: Final = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000)
# The one value OCM gives the `name` label of its scheduling and bind histograms.
SCHEDULING_NAME: Final = "placement_scheduling"

PluginType = Literal["filter", "prioritizer", "selector"]
ReconcileResult = Literal["success", "error", "requeue"]
WriteVerb = Literal["create", "patch", "delete"]


class Metrics(MetricsRegistry):
    """Every metric of one placement controller, in a registry of its own."""

    def __init__(self) -> None:
        super().__init__()
        reg = self.registry
        self.scheduling_duration = Histogram(
            "scheduling_scheduling_duration_seconds",
            "Seconds from the start of scheduling a placement to the start of binding it.",
            ["name"],
            buckets=BUCKETS,
            registry=reg,
        )
        self.bind_duration = Histogram(
            "scheduling_bind_duration_seconds",
            "Seconds spent writing a placement's decisions (PlacementDecisions and status).",
            ["name"],
            buckets=BUCKETS,
            registry=reg,
        )
        self.plugin_duration = Histogram(
            "scheduling_plugin_duration_seconds",
            "Seconds one plugin ran while scheduling a placement.",
            ["name", "plugin_type", "plugin_name"],
            buckets=BUCKETS,
            registry=reg,
        )
        self.cel_runtime_duration = Histogram(
            "scheduling_cel_runtime_duration_seconds",
            "Seconds the CEL expressions of a placement's predicate ran on one cluster.",
            ["name"],
            buckets=BUCKETS,
            registry=reg,
        )
        # Its series appears with the first CEL evaluation (as OCM's, made on first use).
        self.queue_depth = Gauge(
            "placement_queue_depth",
            "Placement keys waiting in the work queue.",
            registry=reg,
        )
        # prometheus_client appends `_total` to counter names itself.
        self.reconciles = Counter(
            "placement_reconciles",
            "Reconciles of a placement, by result.",
            ["result"],
            registry=reg,
        )
        self.reconcile_errors = Counter(
            "placement_reconcile_errors",
            "Reconciles that ended in an error.",
            registry=reg,
        )
        self.writes = Counter(
            "placement_writes",
            "Writes to the API server, by kind and verb.",
            ["kind", "verb"],
            registry=reg,
        )
        self.events = Counter(
            "placement_events",
            "Events recorded, by reason and outcome (created, patched, counted, failed, dropped).",
            ["reason", "outcome"],
            registry=reg,
        )
        self.leader = Gauge(
            "placement_leader",
            "1 while this replica leads (holds the Lease, or runs without leader election), "
            "0 otherwise.",
            registry=reg,
        )
        # Series present from the first scrape (at zero), as OCM's are: a rate() over a series
        # that appears only with its first sample misses that sample.
        self.scheduling_duration.labels(name=SCHEDULING_NAME)
        self.bind_duration.labels(name=SCHEDULING_NAME)
        for result in ("success", "error", "requeue"):
            self.reconciles.labels(result=result)

    def cel_timer(self) -> Callable[[], None]:
        """`placement.selectors.CelTimer`: started before one cluster's CEL expressions run,
        the returned call observes their duration."""
        started = time.perf_counter()
        series = self.cel_runtime_duration.labels(name=SCHEDULING_NAME)
        return lambda: series.observe(time.perf_counter() - started)

    def instrument(self, scheduler: Scheduler) -> Scheduler:
        """Give every `Predicate` of `scheduler` this registry's CEL timer (the manager calls
        it on the scheduler it reconciles with); returns the scheduler."""
        for plugin in scheduler.filters:
            if isinstance(plugin, Predicate):
                plugin.cel_timer = self.cel_timer
        return scheduler
