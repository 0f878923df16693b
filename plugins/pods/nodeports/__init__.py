"""`NodePorts`: host ports a pod asks for must be free on the node."""

__all__: list[str] = []
