"""Configuration: a KubeSchedulerConfiguration read, checked and turned into profiles."""

__all__: list[str] = []
