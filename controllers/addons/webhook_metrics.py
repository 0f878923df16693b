"""The spot webhook's Prometheus series, beside the runtime's process and client series:
admissions by decision, their latency, the shared count's conflicts and fallbacks, and the
on-demand places given back because the answer holding them was not used, and places found
free by re-reading a full count."""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Histogram

from controllers.runtime.metrics import MetricsRegistry

__all__ = ["LATENCY_BUCKETS", "WebhookMetrics"]

LATENCY_BUCKETS: Final = (1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 0.5, 1.0)


class WebhookMetrics(MetricsRegistry):
    """The webhook's series, beside the runtime's process and client series."""

    def __init__(self) -> None:
        super().__init__()
        self.admissions = Counter(
            "spot_webhook_admissions_total",
            "Admission reviews answered, by decision (on-demand, spot, unchanged, invalid; "
            "abandoned: the API server hung up first).",
            ["decision"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "spot_webhook_admission_duration_seconds",
            "Seconds from reading an admission review to answering it.",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.conflicts = Counter(
            "spot_webhook_reservation_conflicts_total",
            "Writes of a workload's shared reservations refused by a concurrent write.",
            registry=self.registry,
        )
        self.released = Counter(
            "spot_webhook_reservations_released_total",
            "On-demand places given back because the answer holding them was not used, by "
            "reason (late: past the webhook's deadline; gone: the API server hung up).",
            ["reason"],
            registry=self.registry,
        )
        self.fallbacks = Counter(
            "spot_webhook_reservation_fallbacks_total",
            "Admissions decided on this replica's count alone: the shared Lease failed.",
            registry=self.registry,
        )
        self.recounted = Counter(
            "spot_webhook_places_recounted_total",
            "Admissions sent on-demand because re-reading a full workload's pods found places "
            "free: deletions the pod watch had not delivered yet.",
            registry=self.registry,
        )
