"""The pod scheduler's settings as read from its configuration file and command line: plain
frozen data that the command line builds and the scheduler's shell reads (neither imports the
other), whichever kind of file they came from (`placement.pods.config.scheduler_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from placement.pods.config.profiles import ProfileSpec

__all__ = [
    "CONFIG_API_VERSION",
    "CONFIG_KIND",
    "DEFAULT_SCHEDULER_NAME",
    "LeaderElection",
    "RunOptions",
    "SchedulerConfig",
]

CONFIG_API_VERSION = "placement.ocm.io/v1alpha1"
CONFIG_KIND = "PodSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "ocm-pod-scheduler"


@dataclass(frozen=True)
class LeaderElection:
    """The Lease the replicas of `scheduler run --leader-elect` contend for, and its timings.
    `leader_elect`: what the file says (None: it does not say; the flag decides)."""

    lease_name: str = DEFAULT_SCHEDULER_NAME
    lease_namespace: str = "kube-system"
    leader_elect: bool | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True)
class SchedulerConfig:
    """A checked configuration. `enabled` and `disabled` are the file's lists as given (the
    defaults are applied against a registry by `enabled_plugins`); `score_weights` holds the
    weights the file sets, from `scoreWeights` or an enabled entry's `weight`."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    enabled: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    score_weights: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    plugin_args: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    backoff_initial: timedelta = timedelta(seconds=1)
    backoff_max: timedelta = timedelta(seconds=10)
    unschedulable_flush: timedelta = timedelta(minutes=5)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    kind: str = CONFIG_KIND
    profiles: tuple[ProfileSpec, ...] = ()
    """A KubeSchedulerConfiguration's profiles (`scheduler_name` is the first's); empty for
    our kind, whose one profile is the fields above."""
    percentage_of_nodes_to_score: int | None = None
    """Read and checked (0..100) but not used: the engine scores every feasible node."""
    kubeconfig: str | None = None
    """`clientConnection.kubeconfig` of a KubeSchedulerConfiguration."""

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        """The spec.schedulerName of every profile, in order."""
        if self.profiles:
            return tuple(p.scheduler_name for p in self.profiles)
        return (self.scheduler_name,)

    def engine_options(self) -> dict[str, timedelta]:
        """The Engine's keyword arguments this configuration sets (the queue's timings)."""
        return {
            "backoff_initial": self.backoff_initial,
            "backoff_max": self.backoff_max,
            "unschedulable_flush": self.unschedulable_flush,
        }


@dataclass(frozen=True)
class RunOptions:
    """How `placement scheduler run` was started: the flags, with `config` already read and
    checked (the flags `--scheduler-name` and `--leader-elect` win over the file). Pure data,
    so the command line builds it and `controllers.addons.scheduler.run_scheduler` reads it
    without either importing the other."""

    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    kubeconfig: str | None = None
    context: str | None = None
    embedded: bool = False
    kubelet: bool = False
    leader_elect: bool = False
    http_addr: str = "127.0.0.1:10251"
    config_path: str | None = None
    status_controller: str = "on"
    """`on`: the PodGroup/ElasticQuota status controller runs beside the scheduler; `off`: not;
    `only`: it runs alone, nothing is scheduled."""
    sync_timeout: float = 60.0
    """Seconds start-up waits for the cluster's first answers before it gives up (exit 1)."""
