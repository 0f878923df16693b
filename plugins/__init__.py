"""plugins layer."""

__all__: list[str] = []
