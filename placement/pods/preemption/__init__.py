"""Preemption: victims, candidate nodes, the plugins' hooks and disruption budgets."""

__all__: list[str] = []
