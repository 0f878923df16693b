"""The ElasticQuota status rule: `status.used` of the quota in force in each namespace, which
quota that is, and whether the guarantees fit in the cluster.

* `status.used` has an entry for every resource named in `min` or `max` (zero when nothing uses
  it), summing the requests of the namespace's pods that are bound and not finished — the
  number `CapacityScheduling` enforces (docs/pod-scheduler.md, 'Status controller'; the
  anchor's controller counts Running pods only, so a bound pod still starting is missing from
  its status).
* One ElasticQuota per namespace: the oldest (then by name) is in force (`quota_in_force`, the
  plugin follows the same one). The others get `Active=False`, reason `Duplicate`, naming the
  one in force, and a Warning event when that becomes so; their `used` is not kept.
* The guarantees may add up to more than the cluster has: allowed (capacity changes), but
  every quota in force then carries `MinWithinCapacity=False`, reason `MinAboveCapacity`,
  naming each resource, Σmin and the nodes' allocatable, with a Warning event on the change.

Quantities are written as Kubernetes prints them for the scheduler's units (`500m`, `2`,
`4Gi`, `1500`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from apis.core import Node, Pod
from apis.meta import Condition, ConditionStatus, KubeObject
from apis.quantity import Quantity
from apis.scheduling import ElasticQuota
from placement.outcome import set_condition
from placement.pods.cluster.requests import CPU, PODS, amount, pod_requests
from placement.pods.status.rule import StatusEvent, StatusOutcome, StatusWorld

__all__ = [
    "ACTIVE",
    "MIN_WITHIN_CAPACITY",
    "ElasticQuotaStatusRule",
    "format_resources",
    "quantity_text",
    "quota_in_force",
    "quota_used",
]

ACTIVE = "Active"
MIN_WITHIN_CAPACITY = "MinWithinCapacity"
KIND = "ElasticQuota"


def quota_in_force(eqs: Iterable[ElasticQuota]) -> ElasticQuota | None:
    """The ElasticQuota a namespace follows when it has several: the oldest by
    creationTimestamp, then by name (a quota without a timestamp counts as the newest)."""

    def key(eq: ElasticQuota) -> tuple[bool, float, str]:
        created = eq.metadata.creation_timestamp
        return (created is None, created.timestamp() if created else 0.0, eq.metadata.name or "")

    ordered = sorted(eqs, key=key)
    return ordered[0] if ordered else None


def quantity_text(resource: str, value: int) -> str:
    """An amount in the scheduler's unit (milli-cpu, bytes, counts) as a quantity string."""
    if resource == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    for suffix, size in (("Gi", 2**30), ("Mi", 2**20)):
        if value and value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)


def format_resources(resources: Mapping[str, int]) -> str:
    """`cpu=2, nvidia.com/gpu=4` in the quantities' own units (sorted by name); `-` if none."""
    if not resources:
        return "-"
    return ", ".join(f"{name}={quantity_text(name, resources[name])}" for name in sorted(resources))


def _amounts(resources: Mapping[str, Quantity] | None) -> dict[str, int]:
    return {name: amount(name, q, capacity=True) for name, q in (resources or {}).items()}


def _counts(pod: Pod) -> bool:
    bound = pod.spec is not None and bool(pod.spec.node_name)
    finished = pod.status is not None and pod.status.phase in ("Succeeded", "Failed")
    return bound and not finished


def quota_used(quota: ElasticQuota, pods: Iterable[Pod]) -> dict[str, int]:
    """Per resource of min ∪ max, what the namespace's bound, unfinished pods request."""
    spec = quota.spec
    names = set(spec.min or {}) | set(spec.max or {}) if spec is not None else set()
    used = dict.fromkeys(names, 0)
    for pod in pods:
        if not _counts(pod):
            continue
        requests = pod_requests(pod)
        for name in names:
            used[name] += requests.get(name, 0) if name != PODS else 1
    return used


def _key(obj: KubeObject) -> str:
    return f"{obj.metadata.namespace}/{obj.metadata.name}"


def _in_force(objects: Mapping[str, KubeObject]) -> dict[str, ElasticQuota]:
    """The quota in force per namespace."""
    by_namespace: dict[str, list[ElasticQuota]] = {}
    for obj in objects.values():
        if isinstance(obj, ElasticQuota):
            by_namespace.setdefault(obj.metadata.namespace or "", []).append(obj)
    chosen = {ns: quota_in_force(eqs) for ns, eqs in by_namespace.items()}
    return {ns: eq for ns, eq in chosen.items() if eq is not None}


def _allocatable(nodes: Iterable[Node]) -> dict[str, int]:
    out: dict[str, int] = {}
    for node in nodes:
        for name, value in _amounts(node.status.allocatable if node.status else None).items():
            out[name] = out.get(name, 0) + value
    return out


def _min_excess(quotas: Iterable[ElasticQuota], nodes: Iterable[Node]) -> str | None:
    """Which resources' Σmin exceeds the nodes' allocatable, as a message; None if none."""
    total: dict[str, int] = {}
    for quota in quotas:
        for name, value in _amounts(quota.spec.min if quota.spec else None).items():
            total[name] = total.get(name, 0) + value
    have = _allocatable(nodes)
    over = [name for name in sorted(total) if total[name] > have.get(name, 0)]
    if not over:
        return None
    parts = "; ".join(
        f"{name}: min {quantity_text(name, total[name])} > allocatable "
        f"{quantity_text(name, have.get(name, 0))}"
        for name in over
    )
    return (
        f"the ElasticQuotas' min adds up to more than the nodes' allocatable ({parts}): "
        "not every guarantee can be met at once"
    )


def _conditions(quota: ElasticQuota) -> list[Condition]:
    return list((quota.status.conditions if quota.status else None) or ())


def _changed(before: list[Condition], after: list[Condition], kind: str) -> Condition | None:
    """The condition `kind` of `after` when its status or reason differs from `before`'s."""
    old = next((c for c in before if c.type == kind), None)
    new = next((c for c in after if c.type == kind), None)
    if new is None or (old is not None and (old.status, old.reason) == (new.status, new.reason)):
        return None
    return new


class ElasticQuotaStatusRule:
    """The StatusRule of ElasticQuotas (`placement.pods.status.rule`)."""

    kind = KIND
    watches_nodes = True
    couples_objects = True  # Σmin and "which one is in force" read every quota

    def affected(self, pod: Pod, objects: Mapping[str, KubeObject]) -> Iterable[str]:
        namespace = pod.metadata.namespace
        return [k for k, o in objects.items() if o.metadata.namespace == namespace]

    def compute(self, obj: KubeObject, world: StatusWorld, now: datetime) -> StatusOutcome:
        assert isinstance(obj, ElasticQuota)
        namespace = obj.metadata.namespace or ""
        in_force = _in_force(world.objects(KIND))
        chosen = in_force.get(namespace)
        before = _conditions(obj)
        events: list[StatusEvent] = []
        status: dict[str, Any] = {}
        if chosen is not None and _key(chosen) != _key(obj):
            message = (
                f'namespace {namespace} already has ElasticQuota "{chosen.metadata.name}" in '
                "force (the oldest); this one is ignored"
            )
            after = set_condition(before, ACTIVE, ("False", "Duplicate", message), now)
            after = [c for c in after if c.type != MIN_WITHIN_CAPACITY]
            if _changed(before, after, ACTIVE) is not None:
                events.append(StatusEvent("Warning", "DuplicateElasticQuota", message))
        else:
            used = quota_used(obj, world.pods_in(namespace))
            status["used"] = {name: quantity_text(name, used[name]) for name in sorted(used)}
            after = set_condition(
                before, ACTIVE, ("True", "InForce", "this quota is in force"), now
            )
            excess = _min_excess(in_force.values(), world.nodes())
            value: tuple[ConditionStatus, str, str] = (
                ("True", "Fits", "the quotas' min fits in the nodes' allocatable")
                if excess is None
                else ("False", "MinAboveCapacity", excess)
            )
            after = set_condition(after, MIN_WITHIN_CAPACITY, value, now)
            flipped = _changed(before, after, MIN_WITHIN_CAPACITY)
            if flipped is not None and flipped.status == "False":
                events.append(StatusEvent("Warning", "MinAboveCapacity", flipped.message))
        status["conditions"] = [c.to_wire() for c in after]
        return StatusOutcome(status, tuple(events))
