"""The pure local-cluster core of the pod scheduler (docs/pod-scheduler.md): pod requests as
kube-scheduler computes them, the nodes as numpy columns kept up to date per event, node
selectors compiled to masks. No I/O: the controllers feed it events.

The names below are imported from their module on first use, so that importing one module of
the package (`placement.pods.requests`) does not import the engine and numpy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from placement.pods.affinity import node_selector_mask, selector_terms_mask, term_mask
    from placement.pods.engine import Engine, EngineStats
    from placement.pods.nodes import BASE_RESOURCES, NodeSnapshot, NodeTable, Taint
    from placement.pods.preemption import Preemptor
    from placement.pods.queue import SchedulingQueue
    from placement.pods.requests import non_zero_requests, pod_requests

# Each exported name and its module in this package.
_SOURCES = {
    "BASE_RESOURCES": "nodes",
    "Engine": "engine",
    "EngineStats": "engine",
    "NodeSnapshot": "nodes",
    "NodeTable": "nodes",
    "Preemptor": "preemption",
    "SchedulingQueue": "queue",
    "Taint": "nodes",
    "node_selector_mask": "affinity",
    "non_zero_requests": "requests",
    "pod_requests": "requests",
    "selector_terms_mask": "affinity",
    "term_mask": "affinity",
}

__all__ = [
    "BASE_RESOURCES",
    "Engine",
    "EngineStats",
    "NodeSnapshot",
    "NodeTable",
    "Preemptor",
    "SchedulingQueue",
    "Taint",
    "node_selector_mask",
    "non_zero_requests",
    "pod_requests",
    "selector_terms_mask",
    "term_mask",
]


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{source}", __name__), name)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
