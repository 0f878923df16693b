"""`NodeVolumeLimits`: how many CSI volumes each node may still attach."""

__all__: list[str] = []
