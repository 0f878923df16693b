"""placement layer."""

__all__: list[str] = []
