"""The pod framework: the extension points, what plugins see of the engine, and what they answer."""

__all__: list[str] = []
