"""Runnable examples of the consumer API."""

__all__: list[str] = []
