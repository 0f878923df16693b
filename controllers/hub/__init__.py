"""The hub placement controller: manager, watch intake, OCM's fan-out, reconciler, decision
writer and its steps, metrics and the debug endpoint (DESIGN §7)."""

__all__: list[str] = []
