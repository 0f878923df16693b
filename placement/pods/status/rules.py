"""The status rules the PodGroup/ElasticQuota status controller and `scheduler simulate` run."""

from __future__ import annotations

from placement.pods.status.elasticquotas import ElasticQuotaStatusRule
from placement.pods.status.podgroups import PodGroupStatusRule
from placement.pods.status.rule import StatusRule

__all__ = ["status_rules"]


def status_rules() -> tuple[StatusRule, ...]:
    """One PodGroup rule and one ElasticQuota rule (stateless: fresh ones cost nothing)."""
    return (PodGroupStatusRule(), ElasticQuotaStatusRule())
