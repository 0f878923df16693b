"""The hub placement controller: manager, watch intake, OCM's fan-out, reconciler, decision
writer and its steps, metrics and the debug endpoint (docs/architecture.md, 'The hub
controller')."""

__all__: list[str] = []
