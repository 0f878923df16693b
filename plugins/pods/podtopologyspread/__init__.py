"""`PodTopologySpread`: pods spread over topology domains (explicit and default constraints)."""

__all__: list[str] = []
