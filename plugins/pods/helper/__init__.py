"""What several pod plugins share: args checks, per-snapshot caches, score normalization,
tolerations, a pod's volume claims."""

__all__: list[str] = []
