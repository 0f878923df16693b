"""`TaintToleration`: node taints a pod must tolerate."""

__all__: list[str] = []
