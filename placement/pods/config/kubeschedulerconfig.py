"""Reading a KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`) into the scheduler's
settings: the models of `apis.schedulerconfig` check the file, `placement.pods.config.profiles` its
profiles; here the rest (backoff, leader election, `percentageOfNodesToScore`,
`clientConnection.kubeconfig`) becomes a `SchedulerConfig`.

Where we differ from kube-scheduler, because we run beside it as a secondary scheduler: a
profile without `schedulerName` is `ocm-pod-scheduler` (kube: `default-scheduler`), and the Lease
is named after the first profile unless `leaderElection.resourceName` says (kube:
`kube-scheduler`), so that neither takes the default scheduler's place by accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from apis.schedulerconfig import KUBE_SCHEDULER_KIND, parse_configuration
from placement.pods.config.profile_checks import resolve_profiles
from placement.pods.config.profiles import ConfigError
from placement.pods.config.settings import DEFAULT_SCHEDULER_NAME, LeaderElection, SchedulerConfig

__all__ = ["load_kube_config"]

LEASE_JITTER = 1.2
"""client-go's: renewDeadline must exceed retryPeriod times this."""


def load_kube_config(doc: Mapping[str, Any], registry: Mapping[str, Any] | None) -> SchedulerConfig:
    """A KubeSchedulerConfiguration, checked (every problem, one line each)."""
    try:
        model = parse_configuration(doc)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    specs = resolve_profiles(model, registry, DEFAULT_SCHEDULER_NAME)
    elect = model.leader_election
    defaults = LeaderElection()
    lease = LeaderElection(
        lease_name=elect.resource_name or specs[0].scheduler_name,
        lease_namespace=elect.resource_namespace or defaults.lease_namespace,
        leader_elect=True if elect.leader_elect is None else elect.leader_elect,
        lease_duration=elect.lease_duration or defaults.lease_duration,
        renew_deadline=elect.renew_deadline or defaults.renew_deadline,
        retry_period=elect.retry_period or defaults.retry_period,
    )
    if lease.lease_duration <= lease.renew_deadline:
        raise ConfigError(
            f'leaderElection.leaseDuration: Invalid value: "{lease.lease_duration:g}s": must be '
            f'greater than renewDeadline ("{lease.renew_deadline:g}s")'
        )
    if lease.renew_deadline <= LEASE_JITTER * lease.retry_period:
        raise ConfigError(
            f'leaderElection.renewDeadline: Invalid value: "{lease.renew_deadline:g}s": must be '
            f'greater than 1.2 x retryPeriod ("{lease.retry_period:g}s")'
        )
    return SchedulerConfig(
        scheduler_name=specs[0].scheduler_name,
        backoff_initial=timedelta(seconds=model.pod_initial_backoff_seconds),
        backoff_max=timedelta(seconds=model.pod_max_backoff_seconds),
        leader_election=lease,
        kind=KUBE_SCHEDULER_KIND,
        profiles=specs,
        percentage_of_nodes_to_score=model.percentage_of_nodes_to_score,
        kubeconfig=model.client_connection.kubeconfig,
    )
