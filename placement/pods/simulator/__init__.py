"""The simulator of `scheduler simulate`: an in-memory cluster with the controllers it plays."""

__all__: list[str] = []
