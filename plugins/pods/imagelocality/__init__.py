"""`ImageLocality`: nodes already holding the pod's images score higher."""

__all__: list[str] = []
