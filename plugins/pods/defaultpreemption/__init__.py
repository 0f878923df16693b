"""`DefaultPreemption`: kube-scheduler's PostFilter."""

__all__: list[str] = []
