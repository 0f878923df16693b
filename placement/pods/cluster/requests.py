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

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction

from apis.core import Container, Pod
from apis.quantity import Quantity

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "LIMIT",
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


LIMIT = 2**50
"""The largest amount the scheduler holds exactly (in its unit: 2^50 bytes is 1 PiB, 2^50
milli-cpu a trillion cores). The numeric columns are int64 and sums of amounts must never wrap,
so every amount is bounded: a capacity above LIMIT (a node's allocatable, a quota) is taken as
LIMIT, more than anything a pod may ask; a request above LIMIT becomes LIMIT + 1, more than any
capacity, so the pod fits nowhere and a node that counts such a pod is full. Sums of up to
8,192 such amounts stay inside int64."""


def amount(resource: str, quantity: Quantity | Fraction, *, capacity: bool = False) -> int:
    """One quantity in the scheduler's unit for `resource` (`MilliValue` for cpu, `Value`
    otherwise; both round up), bounded by LIMIT: `capacity` for what nodes and quotas offer,
    otherwise a request (see LIMIT)."""
    value = quantity.value if isinstance(quantity, Quantity) else quantity
    exact = math.ceil(value * 1000) if resource == CPU else math.ceil(value)
    bound = LIMIT if capacity else LIMIT + 1
    return max(-bound, min(exact, bound))


# Kubernetes adds and compares the quantities exactly and converts the pod's total once, so
# two containers of 0.1m cpu request 1m together, not 2m: the sums here are exact fractions.
_Exact = dict[str, Fraction]
_DEFAULTS: _Exact = {
    CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}


def _exact(resources: Mapping[str, Quantity] | None) -> _Exact:
    return {name: q.value for name, q in (resources or {}).items()}


def _container(container: Container, non_zero: bool) -> _Exact:
    out = _exact(container.resources.requests if container.resources else None)
    if non_zero:
        for name, value in _DEFAULTS.items():
            out.setdefault(name, value)  # an explicit 0 stays 0, as in Kubernetes
    return out


def container_requests(container: Container, *, non_zero: bool = False) -> Requests:
    """A container's requests; `non_zero` fills missing cpu and memory with the scoring
    defaults (an explicit 0 stays 0, as in Kubernetes)."""
    return {name: amount(name, v) for name, v in _container(container, non_zero).items()}


def _add(into: _Exact, more: Mapping[str, Fraction]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, Fraction(0)) + value


def _raise_to(into: _Exact, floor: Mapping[str, Fraction]) -> None:
    for name, value in floor.items():
        if name not in into or value > into[name]:
            into[name] = value


def _requests(pod: Pod, non_zero: bool) -> Requests:
    spec = pod.spec
    total: _Exact = {}
    for container in spec.containers:
        _add(total, _container(container, non_zero))
    sidecars: _Exact = {}  # the restartable init containers started so far
    init_peak: _Exact = {}
    for container in spec.init_containers or ():
        own = _container(container, non_zero)
        if container.restart_policy == SIDECAR_RESTART_POLICY:
            _add(total, own)  # it keeps running next to the main containers
            _add(sidecars, own)
            running = dict(sidecars)
        else:
            running = dict(own)
            _add(running, sidecars)
        _raise_to(init_peak, running)
    _raise_to(total, init_peak)
    _add(total, _exact(spec.overhead))
    out = {name: amount(name, value) for name, value in total.items()}
    out[PODS] = 1
    return out


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
        for name, value in one.items():
            out[name] = out.get(name, 0) + value
    return out
