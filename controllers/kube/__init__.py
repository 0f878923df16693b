"""Kubernetes client seam."""

__all__: list[str] = []
