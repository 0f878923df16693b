"""`PrioritySort`: the queue order."""

__all__: list[str] = []
