"""`Coscheduling`: gangs of pods (PodGroup) that run whole or not at all, and gang preemption."""

__all__: list[str] = []
