"""The engine's backend: the scheduling queue, the pod cache, the nominator and PreEnqueue
gating."""

__all__: list[str] = []
