"""controllers layer."""

__all__: list[str] = []
