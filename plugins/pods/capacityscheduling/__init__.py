"""`CapacityScheduling`: ElasticQuota min/max per namespace, borrowing and quota preemption."""

__all__: list[str] = []
