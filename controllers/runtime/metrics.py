"""The metrics registry each of our controllers keeps, served on `/metrics` by
`controllers.runtime.http`.

A controller subclasses `MetricsRegistry` and declares its series on `self.registry`. Each
instance has a registry of its own: tests run several controllers per process, and the
process-global registry would refuse the second set of the same names.
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import CollectorRegistry, disable_created_metrics, generate_latest

__all__ = ["Exposition", "MetricsRegistry"]

# Kubernetes components expose no `<name>_created` series, and neither do we. The switch is
# process-wide, which is right for a process that serves one controller's metrics.
disable_created_metrics()  # type: ignore[no-untyped-call]


class Exposition(Protocol):
    """What the HTTP endpoint serves on `/metrics`."""

    def exposition(self) -> bytes:
        """The current samples in the Prometheus text format."""


class MetricsRegistry:
    """A registry of one controller's metrics; subclasses add their series to `registry`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
