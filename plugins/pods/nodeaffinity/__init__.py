"""`NodeAffinity`: nodeSelector and node affinity."""

__all__: list[str] = []
