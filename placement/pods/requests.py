"""A pod's resource requests as kube-scheduler computes them, in the scheduler's integer units.

Kubernetes' `PodRequests` (component-helpers/resource): the containers' requests are summed;
init containers run one at a time before them, so each raises the pod's requests to at least
its own, except that restartable ("sidecar", `restartPolicy: Always`) init containers keep
running: each adds to the total that later init containers and the main containers see. Then
`spec.overhead` is added. Units: milli-CPU for `cpu`, bytes for memory and storage, integers
(rounded up) for everything else; every pod also requests one `pods` slot.

Requests only: the API server copies limits into missing requests when it admits a pod
(`SetDefaults_Pod`), so a stored pod already has them; a limits-only container seen here was
never admitted and requests nothing, as the scheduler would see it. Pod-level `spec.resources`
is not typed yet and not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from apis.core import Container, Pod
from apis.quantity import Quantity

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "Requests",
    "amount",
    "container_requests",
    "non_zero_requests",
    "pod_requests",
    "total",
]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
SIDECAR_RESTART_POLICY = "Always"
# kube-scheduler's defaults for scoring a container that requests no cpu / memory
# (`DefaultMilliCPURequest`, `DefaultMemoryRequest`); never used to filter.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

Requests = dict[str, int]
"""Resource name -> amount in the scheduler's units; a missing name requests nothing."""


def amount(resource: str, quantity: Quantity) -> int:
    """One quantity in the scheduler's unit for `resource` (`MilliValue` for cpu, `Value`
    otherwise; both round up)."""
    return quantity.milli() if resource == CPU else quantity.ceil()


def _amounts(resources: Mapping[str, Quantity] | None) -> Requests:
    return {name: amount(name, q) for name, q in (resources or {}).items()}


def container_requests(container: Container, *, non_zero: bool = False) -> Requests:
    """A container's requests; `non_zero` fills missing cpu and memory with the scoring
    defaults (an explicit 0 stays 0, as in Kubernetes)."""
    out = _amounts(container.resources.requests if container.resources else None)
    if non_zero:
        out.setdefault(CPU, DEFAULT_MILLI_CPU_REQUEST)
        out.setdefault(MEMORY, DEFAULT_MEMORY_REQUEST)
    return out


def _add(into: Requests, more: Mapping[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


def _raise_to(into: Requests, floor: Mapping[str, int]) -> None:
    for name, value in floor.items():
        if value > into.get(name, 0):
            into[name] = value


def _requests(pod: Pod, non_zero: bool) -> Requests:
    spec = pod.spec
    total: Requests = {}
    for container in spec.containers:
        _add(total, container_requests(container, non_zero=non_zero))
    sidecars: Requests = {}  # the restartable init containers started so far
    init_peak: Requests = {}
    for container in spec.init_containers or ():
        own = container_requests(container, non_zero=non_zero)
        if container.restart_policy == SIDECAR_RESTART_POLICY:
            _add(total, own)  # it keeps running next to the main containers
            _add(sidecars, own)
            running = dict(sidecars)
        else:
            running = dict(own)
            _add(running, sidecars)
        _raise_to(init_peak, running)
    _raise_to(total, init_peak)
    _add(total, _amounts(spec.overhead))
    total[PODS] = 1
    return total


def pod_requests(pod: Pod) -> Requests:
    """What the pod takes from a node's allocatable (NodeResourcesFit's filter)."""
    return _requests(pod, non_zero=False)


def non_zero_requests(pod: Pod) -> Requests:
    """The requests scoring plugins use: as `pod_requests`, with each container (init ones
    included) that requests no cpu or memory counted at 100m / 200Mi."""
    return _requests(pod, non_zero=True)


def total(requests: Iterable[Mapping[str, int]]) -> Requests:
    """The sum of several pods' requests."""
    out: Requests = {}
    for one in requests:
        _add(out, one)
    return out
