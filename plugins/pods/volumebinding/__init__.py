"""`VolumeBinding`: claims bound to volumes or provisioned where a node can reach them."""

__all__: list[str] = []
