"""`NodeResourcesFit` and `NodeResourcesBalancedAllocation`, and the resource arithmetic they
share."""

__all__: list[str] = []
