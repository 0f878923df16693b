"""The pure local-cluster core of the pod scheduler (docs/pod-scheduler.md), no I/O: the
controllers and the simulator feed it events and carry out the actions it returns. Its rooms,
bottom up (tests/test_architecture.py keeps who imports whom):

* `cluster/`: the model every room reads: nodes as numpy columns, their labels and history,
  pods (`PodInfo`) and the index of the counted ones, requests, volumes, node selector masks;
* `framework/`: the extension points plugins implement, what they see of the engine, what they
  answer, and the events and actions in and out of the engine;
* `backend/`: the scheduling queue, the pod cache, the nominator, PreEnqueue gating;
* `preemption/`: victims, candidate nodes, the plugins' hooks, disruption budgets;
* `scheduler/`: the engine: the scheduling cycle, the binding cycle, several profiles;
* `config/`: a KubeSchedulerConfiguration read, checked and made into profiles;
* `status/`: the PodGroup, ElasticQuota and PodDisruptionBudget status rules;
* `dra/`: dynamic resource allocation's device inventory and structured allocator;
* `simulator/`: `scheduler simulate`'s in-memory cluster and the controllers it plays.

The names below are imported from their module on first use, so that importing one module of
the package (`placement.pods.cluster.requests`) does not import the engine and numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apis.lazy import lazy_exports

if TYPE_CHECKING:
    from placement.pods.backend.queue import SchedulingQueue
    from placement.pods.cluster.affinity import node_selector_mask, selector_terms_mask, term_mask
    from placement.pods.cluster.nodes import BASE_RESOURCES, NodeSnapshot, NodeTable, Taint
    from placement.pods.cluster.requests import non_zero_requests, pod_requests
    from placement.pods.preemption.preemption import Preemptor
    from placement.pods.scheduler.engine import Engine, EngineStats

# Each exported name and its module in this package.
_SOURCES = {
    "BASE_RESOURCES": "cluster.nodes",
    "Engine": "scheduler.engine",
    "EngineStats": "scheduler.engine",
    "NodeSnapshot": "cluster.nodes",
    "NodeTable": "cluster.nodes",
    "Preemptor": "preemption.preemption",
    "SchedulingQueue": "backend.queue",
    "Taint": "cluster.nodes",
    "node_selector_mask": "cluster.affinity",
    "non_zero_requests": "cluster.requests",
    "pod_requests": "cluster.requests",
    "selector_terms_mask": "cluster.affinity",
    "term_mask": "cluster.affinity",
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


__getattr__, __dir__ = lazy_exports(__name__, globals(), _SOURCES)
