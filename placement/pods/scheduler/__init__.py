"""The engine: the scheduling cycle, the binding cycle, several profiles, and what it reports."""

__all__: list[str] = []
