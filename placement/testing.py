"""Builders of API objects and seeded synthetic fleets, shared by the tests and the benchmarks.

Builders take the few fields a test cares about and return validated models, so a test reads
as the situation it sets up: `cluster("a", labels={"env": "prod"}, cpu="4")`. Spec fields of
`placement(...)` may be given in snake_case or in the wire's camelCase. `synthetic_fleet(n, seed)`
is a reproducible fleet over providers, regions and zones, with claims, resources, a few taints,
AddOnPlacementScores, decisions of other placements, and a `global` set bound in one namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from apis.cluster import (
    CLUSTER_SET_LABEL,
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    Taint,
)
from apis.meta import KubeObject, format_time
from apis.placements import (
    PLACEMENT_LABEL,
    ClusterPredicate,
    Placement,
    PlacementDecision,
    PrioritizerConfig,
    Toleration,
)
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = [
    "MAINTENANCE",
    "NOW",
    "SCORE_RESOURCE",
    "SPOT",
    "UNREACHABLE",
    "SyntheticFleet",
    "addon",
    "binding",
    "builtin",
    "cluster",
    "cluster_set",
    "decision",
    "global_set",
    "placement",
    "predicate",
    "score",
    "snapshot",
    "synthetic_fleet",
    "taint",
    "toleration",
]

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
"""The clock of tests that do not care about time."""


def _time(value: datetime | None) -> str | None:
    return None if value is None else format_time(value)


def taint(
    key: str, effect: str = "NoSelect", value: str | None = None, added: datetime | None = None
) -> Taint:
    """A taint; `added` is the hub's `timeAdded` stamp (None: never stamped)."""
    doc: dict[str, Any] = {"key": key, "effect": effect}
    if value is not None:
        doc["value"] = value
    if added is not None:
        doc["timeAdded"] = _time(added)
    return Taint.model_validate(doc)


def toleration(
    key: str | None = None,
    operator: str = "Equal",
    value: str | None = None,
    effect: str | None = None,
    seconds: int | None = None,
) -> Toleration:
    """A toleration; `seconds` is `tolerationSeconds`."""
    doc: dict[str, Any] = {"operator": operator}
    for field, item in (("key", key), ("value", value), ("effect", effect)):
        if item is not None:
            doc[field] = item
    if seconds is not None:
        doc["tolerationSeconds"] = seconds
    return Toleration.model_validate(doc)


def cluster(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    claims: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    allocatable: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    cluster_set: str | None = None,
    deleting: bool = False,
) -> ManagedCluster:
    """A ManagedCluster. `cpu`/`memory` set both allocatable and capacity; `allocatable` and
    `capacity` set them separately (to leave one out). `cluster_set` adds the exclusive set
    label."""
    meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if cluster_set is not None:
        meta["labels"][CLUSTER_SET_LABEL] = cluster_set
    if deleting:
        meta["deletionTimestamp"] = _time(NOW - timedelta(minutes=1))
    alloc = dict(allocatable or {})
    cap = dict(capacity or {})
    for resource, amount in (("cpu", cpu), ("memory", memory)):
        if amount is not None:
            alloc.setdefault(resource, amount)
            cap.setdefault(resource, amount)
    pairs = list(claims.items()) if isinstance(claims, Mapping) else list(claims or [])
    status: dict[str, Any] = {}
    if alloc:
        status["allocatable"] = alloc
    if cap:
        status["capacity"] = cap
    if pairs:
        status["clusterClaims"] = [{"name": k, "value": v} for k, v in pairs]
    doc: dict[str, Any] = {
        "metadata": meta,
        "spec": {"taints": [t.to_wire() for t in taints]} if taints else {},
    }
    if status:
        doc["status"] = status
    return ManagedCluster.model_validate(doc)


def placement(namespace: str, name: str, *, uid: str = "", **spec: Any) -> Placement:
    """A Placement; keyword arguments are its spec fields (snake_case or camelCase)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    return Placement.model_validate({"metadata": meta, "spec": spec})


def predicate(
    labels: Mapping[str, str] | None = None,
    expressions: Sequence[Mapping[str, Any]] = (),
    claims: Sequence[Mapping[str, Any]] = (),
    cel: Sequence[str] = (),
) -> ClusterPredicate:
    """One predicate: matchLabels, label matchExpressions, claim matchExpressions, CEL."""
    selector: dict[str, Any] = {}
    if labels is not None or expressions:
        label_selector: dict[str, Any] = {}
        if labels is not None:
            label_selector["matchLabels"] = dict(labels)
        if expressions:
            label_selector["matchExpressions"] = [dict(e) for e in expressions]
        selector["labelSelector"] = label_selector
    if claims:
        selector["claimSelector"] = {"matchExpressions": [dict(e) for e in claims]}
    if cel:
        selector["celSelector"] = {"celExpressions": list(cel)}
    return ClusterPredicate.model_validate({"requiredClusterSelector": selector})


def builtin(name: str, weight: int = 1) -> PrioritizerConfig:
    """A prioritizer configuration for a built-in prioritizer."""
    return PrioritizerConfig.model_validate(
        {"scoreCoordinate": {"type": "BuiltIn", "builtIn": name}, "weight": weight}
    )


def addon(resource: str, score_name: str, weight: int = 1) -> PrioritizerConfig:
    """A prioritizer configuration for an AddOnPlacementScore."""
    coordinate = {"type": "AddOn", "addOn": {"resourceName": resource, "scoreName": score_name}}
    return PrioritizerConfig.model_validate({"scoreCoordinate": coordinate, "weight": weight})


def decision(
    namespace: str, placement: str, clusters: Iterable[str], index: int = 1
) -> PlacementDecision:
    """PlacementDecision `<placement>-decision-<index>` labelled with its placement."""
    return PlacementDecision.model_validate(
        {
            "metadata": {
                "name": f"{placement}-decision-{index}",
                "namespace": namespace,
                "labels": {PLACEMENT_LABEL: placement},
            },
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
        }
    )


def cluster_set(name: str, selector: Mapping[str, Any] | None = None) -> ManagedClusterSet:
    """A set by the exclusive set label, or (with `selector`) by a label selector; `{}` selects
    every cluster."""
    if selector is None:
        spec: dict[str, Any] = {}
    else:
        spec = {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": selector}}
    return ManagedClusterSet.model_validate({"metadata": {"name": name}, "spec": spec})


def binding(namespace: str, set_name: str) -> ManagedClusterSetBinding:
    """Binds set `set_name` to `namespace` (named after the set, as OCM requires)."""
    return ManagedClusterSetBinding.model_validate(
        {"metadata": {"name": set_name, "namespace": namespace}, "spec": {"clusterSet": set_name}}
    )


def global_set(namespace: str) -> list[KubeObject]:
    """The `global` set (every cluster) bound to `namespace`."""
    return [cluster_set("global", {}), binding(namespace, "global")]


def score(
    cluster_name: str,
    resource: str,
    scores: Mapping[str, int] | Sequence[tuple[str, int]],
    valid_until: datetime | None = None,
) -> AddOnPlacementScore:
    """AddOnPlacementScore `resource` in the cluster's namespace."""
    pairs = list(scores.items()) if isinstance(scores, Mapping) else list(scores)
    status: dict[str, Any] = {"scores": [{"name": k, "value": v} for k, v in pairs]}
    if valid_until is not None:
        status["validUntil"] = _time(valid_until)
    return AddOnPlacementScore.model_validate(
        {"metadata": {"name": resource, "namespace": cluster_name}, "status": status}
    )


def snapshot(objects: Iterable[KubeObject]) -> FleetSnapshot:
    """The snapshot of a mixed list of objects (other kinds are ignored)."""
    items = list(objects)
    return FleetSnapshot.build(
        [o for o in items if isinstance(o, ManagedCluster)],
        [o for o in items if isinstance(o, ManagedClusterSet)],
        [o for o in items if isinstance(o, ManagedClusterSetBinding)],
        [o for o in items if isinstance(o, PlacementDecision)],
        [o for o in items if isinstance(o, AddOnPlacementScore)],
    )


# --- synthetic fleets --------------------------------------------------------------------------

PROVIDERS = ("aws", "gcp", "azure", "alibaba")
REGIONS_PER_PROVIDER = 3
ZONES_PER_REGION = 3
ENVS = ("prod", "staging", "dev")
SCORE_RESOURCE = "resource-usage-score"
UNREACHABLE = "cluster.open-cluster-management.io/unreachable"
MAINTENANCE = "example.com/maintenance"
SPOT = "example.com/spot-capacity"


@dataclass(frozen=True)
class SyntheticFleet:
    """A reproducible fleet and the objects around it; `namespace` has the `global` set bound."""

    namespace: str
    clusters: tuple[ManagedCluster, ...]
    cluster_sets: tuple[ManagedClusterSet, ...]
    bindings: tuple[ManagedClusterSetBinding, ...]
    decisions: tuple[PlacementDecision, ...]
    scores: tuple[AddOnPlacementScore, ...]

    def objects(self) -> list[KubeObject]:
        return [
            *self.clusters,
            *self.cluster_sets,
            *self.bindings,
            *self.decisions,
            *self.scores,
        ]

    def snapshot(self) -> FleetSnapshot:
        return FleetSnapshot.build(
            self.clusters, self.cluster_sets, self.bindings, self.decisions, self.scores
        )


def synthetic_fleet(
    n: int,
    seed: int = 0,
    *,
    namespace: str = "apps",
    other_placements: int = 4,
    decided: Mapping[str, float] | None = None,
    taint_rate: float = 0.02,
    expired_rate: float = 0.0,
    now: datetime = NOW,
) -> SyntheticFleet:
    """`n` clusters named `<provider>-<zone>-<i>` with provider/region/zone/env labels, claims
    (`rack`, `kubeversion`), cpu and memory (about 2% without allocatable memory), about
    `taint_rate` of each of NoSelect unreachable, NoSelectIfNew maintenance and PreferNoSelect
    spot taints, an AddOnPlacementScore for about 90% of clusters (`expired_rate` of them
    expired), `other_placements` placements in `namespace` each deciding a random tenth of the
    fleet, and `decided`: placement name -> fraction of the fleet it currently decides."""
    rng = np.random.default_rng(seed)
    provider = rng.integers(0, len(PROVIDERS), n)
    region = rng.integers(0, REGIONS_PER_PROVIDER, n)
    zone = rng.integers(0, ZONES_PER_REGION, n)
    env = rng.integers(0, len(ENVS), n)
    rack = rng.integers(0, 16, n)
    cores = rng.integers(4, 257, n)
    used = rng.random(n)
    memory_gib = rng.integers(16, 1025, n)
    no_memory = rng.random(n) < 0.02
    taint_draw = rng.random((3, n))
    has_score = rng.random(n) < 0.9
    expired = rng.random(n) < expired_rate
    score_values = rng.integers(-100, 101, (2, n))
    added = now - timedelta(minutes=30)
    clusters: list[ManagedCluster] = []
    scores: list[AddOnPlacementScore] = []
    for i in range(n):
        p = PROVIDERS[provider[i]]
        region_name = f"{p}-r{region[i]}"
        zone_name = f"{region_name}{'abc'[zone[i]]}"
        name = f"{zone_name}-{i}"
        taints = []
        if taint_draw[0, i] < taint_rate:
            taints.append(taint(UNREACHABLE, "NoSelect", added=added))
        if taint_draw[1, i] < taint_rate:
            taints.append(taint(MAINTENANCE, "NoSelectIfNew", "planned", added=added))
        if taint_draw[2, i] < taint_rate:
            taints.append(taint(SPOT, "PreferNoSelect", "low", added=added))
        allocatable_cpu = str(max(int(cores[i] * (1 - 0.5 * used[i])), 1))
        allocatable = {"cpu": allocatable_cpu, "memory": f"{memory_gib[i] * 7 // 8}Gi"}
        if no_memory[i]:
            del allocatable["memory"]
        clusters.append(
            cluster(
                name,
                labels={
                    "provider": p,
                    "region": region_name,
                    "zone": zone_name,
                    "env": ENVS[env[i]],
                },
                claims={
                    "rack": f"rack-{rack[i]}",
                    "kubeversion.open-cluster-management.io": "v1.30",
                },
                allocatable=allocatable,
                capacity={"cpu": str(cores[i]), "memory": f"{memory_gib[i]}Gi"},
                taints=taints,
            )
        )
        if has_score[i]:
            until = now - timedelta(minutes=5) if expired[i] else now + timedelta(hours=1)
            values = {
                "cpuAvailable": int(score_values[0, i]),
                "memAvailable": int(score_values[1, i]),
            }
            scores.append(score(name, SCORE_RESOURCE, values, valid_until=until))
    names = [c.name for c in clusters]
    wanted = {f"other-{k}": 0.1 for k in range(other_placements)}
    wanted.update(decided or {})
    decisions: list[PlacementDecision] = []
    for owner, fraction in wanted.items():
        count = min(int(n * fraction), n)
        chosen = sorted((names[i] for i in rng.choice(n, count, replace=False)), key=str.encode)
        for page, start in enumerate(range(0, len(chosen), 100), start=1):
            decisions.append(decision(namespace, owner, chosen[start : start + 100], page))
    return SyntheticFleet(
        namespace,
        tuple(clusters),
        (cluster_set("global", {}),),
        (binding(namespace, "global"),),
        tuple(decisions),
        tuple(scores),
    )
