"""The spot/on-demand rules of the mutating webhook pure.

A cluster operator marks a Deployment or StatefulSet with `distributed-scheduling/min-available:
M`; at least M of its pods must run on on-demand nodes, the rest should run on cheaper spot
nodes. At pod CREATE the webhook decides which, and the pod gets:

* on-demand: the requirement `capacity In [on-demand]` ANDed into every required node-affinity
  term (or made the only term: appending a term would OR it),
  `controller.kubernetes.io/pod-deletion-cost: "1"` (a ReplicaSet scaling down removes the
  cheaper-to-lose spot pods first) and the label `distributed-scheduling/desired-capacity:
  on-demand`, which is what the next decisions count;
* spot: a preferred term (weight 100, `capacity In [spot]`), the label `...: spot` and the
  configured tolerations (clouds taint spot nodes), no deletion cost.

Which one: a StatefulSet pod whose ordinal is below M is on-demand (its identity is stable, so
the first M ordinals are); a Deployment pod is on-demand while fewer than M of the workload's
pods are on-demand and alive (labelled on-demand, not terminating, not finished). The count is
the caller's (`placement.spot.ledger` keeps it exact under concurrent admissions). A workload
with one replica always goes on-demand: it has no spare.

Everything else is allowed unchanged: other owners (Jobs, bare ReplicaSets, standalone pods),
operations other than CREATE, and a missing or invalid annotation (with a warning saying
why when the annotation is there but unusable). A pod that already carries the desired-capacity
label keeps that decision, so a reinvocation adds nothing twice and reserves nothing again.

The patch is RFC 6902 built here (placement/ imports no patch library): JSON Pointers escaped
(RFC 6901: `~` -> `~0`, `/` -> `~1`), missing `labels`, `annotations`, `affinity` or
`tolerations` created whole, and no operation at all when the pod already is as wanted
(the response then carries no patch).

Label keys and values are configurable: EKS managed node groups label `eks.amazonaws.com/
capacityType: ON_DEMAND|SPOT`, Karpenter `karpenter.sh/capacity-type: on-demand|spot`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

__all__ = [
    "DELETION_COST",
    "DESIRED_CAPACITY",
    "MIN_AVAILABLE",
    "RESERVATION",
    "SPOT_TAINT_TOLERATION",
    "Capacity",
    "MutationConfig",
    "OwnerLookup",
    "Verdict",
    "Workload",
    "WorkloadRef",
    "applied",
    "decide",
    "escape",
    "is_on_demand_alive",
    "min_available",
    "patch",
    "statefulset_ordinal",
    "workload_of",
]

MIN_AVAILABLE: Final = "distributed-scheduling/min-available"
DESIRED_CAPACITY: Final = "distributed-scheduling/desired-capacity"
DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
RESERVATION: Final = "distributed-scheduling/reservation"
"""Annotation carrying the token of the ledger reservation an on-demand pod was admitted
under: when the pod informer sees it, the reservation becomes a live pod (never both)."""

_TEMPLATE_HASH: Final = "pod-template-hash"
_APPS: Final = "apps/"
_ORDINAL = re.compile(r"0|[1-9][0-9]*")


SPOT_TAINT_TOLERATION: Final[Mapping[str, Any]] = {
    "key": "spot",
    "operator": "Equal",
    "value": "true",
    "effect": "NoSchedule",
}
"""The toleration of the `spot=true:NoSchedule` taint the pod samples put on their spot nodes
(config/samples/pods/nodes.yaml); `MutationConfig` adds none by default, since each cloud
taints spot nodes its own way (`placement webhook run --spot-toleration spot=true:NoSchedule`
gives this one; `scheduler simulate` uses it, see `placement.pods.simulator.simulation`)."""


class Capacity(StrEnum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"


@dataclass(frozen=True)
class MutationConfig:
    """What the operator can change: the node label and its two values, the workload
    annotation, the pod label, and the tolerations spot pods get."""

    capacity_label: str = "node.kubernetes.io/capacity"
    on_demand_value: str = "on-demand"
    spot_value: str = "spot"
    min_available_annotation: str = MIN_AVAILABLE
    desired_label: str = DESIRED_CAPACITY
    spot_tolerations: tuple[Mapping[str, Any], ...] = ()

    def node_value(self, capacity: Capacity) -> str:
        return self.on_demand_value if capacity is Capacity.ON_DEMAND else self.spot_value


@dataclass(frozen=True)
class WorkloadRef:
    """The Deployment or StatefulSet a pod belongs to."""

    kind: str  # "Deployment" or "StatefulSet"
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Workload:
    """What the rules read of the workload object."""

    ref: WorkloadRef
    replicas: int = 1  # spec.replicas; Kubernetes defaults an unset one to 1
    annotations: Mapping[str, str] = field(default_factory=dict)
    uid: str = ""


@dataclass(frozen=True)
class Verdict:
    """The decision for one pod. `capacity` None: allow unchanged. `counted`: the decision
    took one of the M on-demand places by count, so the caller must reserve it."""

    capacity: Capacity | None
    reason: str
    warnings: tuple[str, ...] = ()
    counted: bool = False


OwnerLookup = Callable[[str, str], "Mapping[str, Any] | None"]
"""(namespace, ReplicaSet name) -> the ReplicaSet's controller ownerReference, or None when
the ReplicaSet has no owner or is not known (yet)."""


# --- workload resolution -----------------------------------------------------------------


def _controller_ref(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner marked `controller: true`, else the first owner (pods made by hand or by
    tools that omit the flag)."""
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, Mapping)]
    for owner in owners:
        if owner.get("controller") is True:
            return owner
    return owners[0] if owners else None


def _is_apps(owner: Mapping[str, Any], kind: str) -> bool:
    api_version = owner.get("apiVersion")
    return (
        owner.get("kind") == kind
        and isinstance(api_version, str)
        and api_version.startswith(_APPS)
        and isinstance(owner.get("name"), str)
    )


def workload_of(pod: Mapping[str, Any], replica_set_owner: OwnerLookup) -> WorkloadRef | None:
    """The Deployment (through its ReplicaSet) or StatefulSet owning `pod`, else None.

    A ReplicaSet not known yet (the ReplicaSet controller creates pods within milliseconds of
    the Deployment controller creating it, before an informer may have it) is resolved by its
    name: the Deployment controller names it `<deployment>-<pod-template-hash>` and stamps the
    hash on the pods; the caller then still needs the Deployment itself."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    owner = _controller_ref(meta)
    if owner is None:
        return None
    if _is_apps(owner, "StatefulSet"):
        return WorkloadRef("StatefulSet", namespace, str(owner["name"]))
    if not _is_apps(owner, "ReplicaSet"):
        return None
    rs_name = str(owner["name"])
    rs_owner = replica_set_owner(namespace, rs_name)
    if rs_owner is not None:
        if _is_apps(rs_owner, "Deployment"):
            return WorkloadRef("Deployment", namespace, str(rs_owner["name"]))
        return None
    template_hash = (meta.get("labels") or {}).get(_TEMPLATE_HASH)
    suffix = f"-{template_hash}"
    if isinstance(template_hash, str) and template_hash and rs_name.endswith(suffix):
        return WorkloadRef("Deployment", namespace, rs_name[: -len(suffix)])
    return None


def statefulset_ordinal(pod_name: str, statefulset: str) -> int | None:
    """The ordinal in `<statefulset>-<ordinal>`, or None when the name is not of that form."""
    prefix = f"{statefulset}-"
    if not pod_name.startswith(prefix):
        return None
    digits = pod_name[len(prefix) :]
    return int(digits) if _ORDINAL.fullmatch(digits) else None


def min_available(workload: Workload, config: MutationConfig) -> tuple[int | None, str | None]:
    """M and None, or None and why not (None, None: the workload is not annotated)."""
    raw = workload.annotations.get(config.min_available_annotation)
    if raw is None:
        return None, None
    text = raw.strip()
    if not text.isascii() or not text.isdigit():
        return None, (
            f"{workload.ref.kind} {workload.ref.namespace}/{workload.ref.name}: annotation "
            f"{config.min_available_annotation}={raw!r} is not a non-negative integer; "
            "pod admitted without spot/on-demand placement"
        )
    return int(text), None


# --- the decision ------------------------------------------------------------------------


def is_on_demand_alive(pod: Mapping[str, Any], config: MutationConfig) -> bool:
    """Whether `pod` holds one of its workload's M places: labelled on-demand, not being
    deleted, not finished (an evicted pod stays as Failed until collected)."""
    meta = pod.get("metadata") or {}
    if (meta.get("labels") or {}).get(config.desired_label) != Capacity.ON_DEMAND.value:
        return False
    if meta.get("deletionTimestamp"):
        return False
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed")


def decide(
    pod: Mapping[str, Any],
    workload: Workload | None,
    on_demand_alive: int,
    config: MutationConfig,
) -> Verdict:
    """Spot, on-demand or unchanged for a pod being created by `workload`.

    `on_demand_alive` is the workload's count of on-demand pods alive plus reservations
    outstanding (read for Deployments only)."""
    if workload is None:
        return Verdict(None, "not owned by a Deployment or StatefulSet")
    meta = pod.get("metadata") or {}
    already = (meta.get("labels") or {}).get(config.desired_label)
    limit, problem = min_available(workload, config)
    if limit is None:
        warnings = (problem,) if problem else ()
        return Verdict(None, problem or f"no {config.min_available_annotation}", warnings)
    if already in (Capacity.ON_DEMAND.value, Capacity.SPOT.value):
        return Verdict(Capacity(already), "already decided (reinvocation or template label)")
    if workload.replicas == 1:
        return Verdict(Capacity.ON_DEMAND, "one replica: always on-demand")
    if workload.ref.kind == "StatefulSet":
        name = str(meta.get("name") or "")
        ordinal = statefulset_ordinal(name, workload.ref.name)
        if ordinal is None:
            warning = f"pod name {name!r} has no ordinal of StatefulSet {workload.ref.name}"
            return Verdict(None, warning, (warning,))
        if ordinal < limit:
            return Verdict(Capacity.ON_DEMAND, f"ordinal {ordinal} < min-available {limit}")
        return Verdict(Capacity.SPOT, f"ordinal {ordinal} >= min-available {limit}")
    if on_demand_alive < limit:
        reason = f"{on_demand_alive} on-demand pods < min-available {limit}"
        return Verdict(Capacity.ON_DEMAND, reason, counted=True)
    return Verdict(Capacity.SPOT, f"{on_demand_alive} on-demand pods >= min-available {limit}")


# --- the patch ---------------------------------------------------------------------------


def escape(token: str) -> str:
    """One JSON Pointer reference token (RFC 6901): `~` first, then `/`."""
    return token.replace("~", "~0").replace("/", "~1")


def _requirement(config: MutationConfig, capacity: Capacity) -> dict[str, Any]:
    return {"key": config.capacity_label, "operator": "In", "values": [config.node_value(capacity)]}


def _with_required(node_affinity: dict[str, Any], requirement: dict[str, Any]) -> None:
    """AND `requirement` into every required term, or make it the only term."""
    required_key = "requiredDuringSchedulingIgnoredDuringExecution"
    required = node_affinity.get(required_key)
    terms = (required or {}).get("nodeSelectorTerms") or []
    if not terms:
        node_affinity[required_key] = {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}
        return
    for term in terms:
        expressions = term.setdefault("matchExpressions", [])
        if expressions is None:
            expressions = term["matchExpressions"] = []
        if requirement not in expressions:
            expressions.append(requirement)


def _with_preferred(node_affinity: dict[str, Any], requirement: dict[str, Any]) -> None:
    preferred_key = "preferredDuringSchedulingIgnoredDuringExecution"
    preferred = node_affinity.get(preferred_key) or []
    term = {"weight": 100, "preference": {"matchExpressions": [requirement]}}
    if term not in preferred:
        node_affinity[preferred_key] = [*preferred, term]


def _affinity_ops(
    spec: Mapping[str, Any], capacity: Capacity, config: MutationConfig
) -> list[dict[str, Any]]:
    affinity = spec.get("affinity")
    old = (affinity or {}).get("nodeAffinity")
    node_affinity: dict[str, Any] = copy.deepcopy(old) if isinstance(old, dict) else {}
    requirement = _requirement(config, capacity)
    if capacity is Capacity.ON_DEMAND:
        _with_required(node_affinity, requirement)
    else:
        _with_preferred(node_affinity, requirement)
    if node_affinity == old:
        return []
    if not isinstance(affinity, dict):
        return [{"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": node_affinity}}]
    # `add` of an existing member replaces it (RFC 6902 §4.1); pod (anti-)affinity stays.
    return [{"op": "add", "path": "/spec/affinity/nodeAffinity", "value": node_affinity}]


def _toleration_ops(spec: Mapping[str, Any], config: MutationConfig) -> list[dict[str, Any]]:
    existing = spec.get("tolerations")
    wanted = [dict(t) for t in config.spot_tolerations]
    if not isinstance(existing, list):
        return [{"op": "add", "path": "/spec/tolerations", "value": wanted}] if wanted else []
    return [
        {"op": "add", "path": "/spec/tolerations/-", "value": t}
        for t in wanted
        if t not in existing
    ]


def _map_ops(
    meta: Mapping[str, Any], member: str, wanted: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Ops setting `metadata.<member>` entries, creating the map when it is missing."""
    current = meta.get(member)
    if not isinstance(current, dict):
        return [{"op": "add", "path": f"/metadata/{member}", "value": dict(wanted)}]
    return [
        {"op": "add", "path": f"/metadata/{member}/{escape(key)}", "value": value}
        for key, value in wanted.items()
        if current.get(key) != value
    ]


def patch(
    pod: Mapping[str, Any],
    capacity: Capacity,
    config: MutationConfig,
    *,
    reservation: str | None = None,
) -> list[dict[str, Any]]:
    """The JSON patch making `pod` an on-demand or spot pod; empty when it already is one.
    `reservation` is the ledger token an on-demand admission was counted under."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    ops = _affinity_ops(spec, capacity, config)
    annotations: dict[str, str] = {}
    if capacity is Capacity.ON_DEMAND:
        annotations[DELETION_COST] = "1"
        if reservation is not None:
            annotations[RESERVATION] = reservation
    else:
        ops += _toleration_ops(spec, config)
    if annotations:
        ops += _map_ops(meta, "annotations", annotations)
    ops += _map_ops(meta, "labels", {config.desired_label: capacity.value})
    return ops


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def applied(pod: Mapping[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of `pod` with the `add` operations of `patch` applied (RFC 6902 `add`: into a
    map, replacing a member that is there; into a list at an index or `-` at its end), as an
    API server applies the webhook's answer; the simulator's shell uses it. ValueError on any
    other operation or a path whose parent is missing."""
    doc: dict[str, Any] = copy.deepcopy(dict(pod))
    for op in ops:
        if op.get("op") != "add":
            raise ValueError(f"only add operations are applied here, not {op.get('op')!r}")
        tokens = [_unescape(t) for t in str(op["path"]).split("/")[1:]]
        parent: Any = doc
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent.get(token)
            if parent is None:
                raise ValueError(f"{op['path']}: the parent does not exist")
        last, value = tokens[-1], copy.deepcopy(op["value"])
        if isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), value)
        elif isinstance(parent, dict):
            parent[last] = value
        else:
            raise ValueError(f"{op['path']}: the parent is neither a map nor a list")
    return doc
