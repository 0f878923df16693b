"""The status rules: PodGroup, ElasticQuota and PodDisruptionBudget status, pure."""

__all__: list[str] = []
