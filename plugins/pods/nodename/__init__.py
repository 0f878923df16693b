"""`NodeName`: a pod naming its node fits that node only."""

__all__: list[str] = []
