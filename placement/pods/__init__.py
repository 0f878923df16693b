"""The pure local-cluster core of the pod scheduler (DESIGN §1, §8): pod requests as
kube-scheduler computes them, the nodes as numpy columns kept up to date per event, node
selectors compiled to masks. No I/O: the controllers feed it events.
"""

from placement.pods.affinity import node_selector_mask, selector_terms_mask, term_mask
from placement.pods.engine import Engine, EngineStats
from placement.pods.nodes import BASE_RESOURCES, NodeSnapshot, NodeTable, Taint
from placement.pods.preemption import Preemptor
from placement.pods.queue import SchedulingQueue
from placement.pods.requests import non_zero_requests, pod_requests

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
