"""The status rules the PodGroup/ElasticQuota status controller and `scheduler simulate` run."""

from __future__ import annotations

from placement.pods.podgroups import PodGroupStatusRule
from placement.pods.quotas import ElasticQuotaStatusRule
from placement.pods.status import StatusRule

__all__ = ["status_rules"]


def status_rules() -> tuple[StatusRule, ...]:
    """One PodGroup rule and one ElasticQuota rule (stateless: fresh ones cost nothing)."""
    return (PodGroupStatusRule(), ElasticQuotaStatusRule())
