"""`NodeUnschedulable`: cordoned nodes take no new pods."""

__all__: list[str] = []
