"""The cluster model: nodes as numpy columns, their labels and history, the pod index, requests,
volumes."""

__all__: list[str] = []
