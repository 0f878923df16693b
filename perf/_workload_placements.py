"""The Placements of the scale workload (`perf/workload.py`): a seeded mix of predicates,
cluster-set restrictions, tolerations, prioritizer policies, decision strategies and spread
policies over the topology of `perf/_workload_fleet.py`.

Each placement consumes one pre-drawn row of uniforms, so the whole mix costs one numpy call and
the same seed gives the same placements. Placements without `numberOfClusters` always carry a
narrow predicate (team, region and env, or zone, tier and env): they select about N/1,000
clusters, so that 100k clusters x 10k placements make about 300k decisions.
"""

from __future__ import annotations

from bisect import bisect
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, TypeVar

import numpy as np

from apis.placements import Placement
from perf._workload_fleet import (
    CLAIM_KUBEVERSION,
    CLAIM_PLATFORM,
    CLAIM_REGION,
    ENVS,
    GEOS,
    KUBE_VERSIONS,
    MAINTENANCE,
    SCORE_RESOURCE,
    SPOT,
    TIERS,
    TOPOLOGY,
    UNREACHABLE,
    weights,
)

__all__ = [
    "CLUSTER_SETS_SHARE",
    "GROUPS_SHARE",
    "NUMBERED_SHARE",
    "POLICY_SHARES",
    "SPREAD_SHARE",
    "TOLERATION_SHARE",
    "WIDE_COUNTS",
    "placements",
]

T = TypeVar("T")

CLUSTER_SETS_SHARE = 0.5  # spec.clusterSets restricted to 1-2 of the namespace's bound sets
NUMBERED_SHARE = 0.75  # numberOfClusters set (else: all matching clusters, narrow predicate)
PREDICATE_SHARE = 0.8  # of the numbered ones, with predicates (the others take any cluster)
TOLERATION_SHARE = 0.25
POLICY_SHARES = (0.4, 0.35, 0.25)  # no policy (defaults), Additive + configurations, Exact
GROUPS_SHARE = 0.2  # decisionStrategy with a group strategy
SPREAD_SHARE = 0.15
WIDE_COUNTS = ((200, 0.25), (500, 0.25), (1_000, 0.2), (None, 0.3))  # None: every cluster
"""A wide placement's numberOfClusters (issue 20: add-on and policy rollouts select hundreds to
all clusters)."""
COUNTS = ((1, 0.15), (2, 0.2), (3, 0.2), (5, 0.15), (10, 0.15), (20, 0.1), (50, 0.05))
APPS = ("web", "api", "db", "cache", "ml", "batch", "monitoring", "ingress", "mesh", "logging")
_COLUMNS = 128  # uniforms per placement, far more than the longest spec draws
_PRIORITIZERS = (
    ("Balance", None),
    ("Steady", None),
    ("ResourceAllocatableCPU", None),
    ("ResourceAllocatableMemory", None),
    ("AddOn", "cpuAvailable"),
    ("AddOn", "memAvailable"),
)
_WEIGHTS = ((-1, 0.05), (0, 0.1), (1, 0.4), (2, 0.2), (3, 0.15), (5, 0.1))
_SPREADS: tuple[tuple[tuple[str, str], ...], ...] = (
    (("zone", "Label"),),
    (("region", "Label"), ("zone", "Label")),
    (("provider", "Label"), ("region", "Label"), ("zone", "Label")),
    ((CLAIM_REGION, "Claim"),),
    (("provider", "Label"), (CLAIM_REGION, "Claim")),
)


class _Draws:
    """A cursor over one placement's row of uniforms."""

    def __init__(self, row: list[float]) -> None:
        self._row = row
        self._at = 0

    def u(self) -> float:
        value = self._row[self._at % len(self._row)]
        if self._at >= len(self._row):  # never in practice; wrapping keeps it deterministic
            value = (value * 7.0 + 0.5) % 1.0
        self._at += 1
        return value

    def chance(self, p: float) -> bool:
        return self.u() < p

    def pick(self, items: Sequence[T]) -> T:
        return items[int(self.u() * len(items))]

    def weighted(self, table: Sequence[tuple[T, float]]) -> T:
        bounds = list(accumulate(share for _, share in table))
        return table[min(bisect(bounds, self.u() * bounds[-1]), len(table) - 1)][0]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        pool = list(items)
        return [pool.pop(int(self.u() * len(pool))) for _ in range(min(k, len(pool)))]


_ZONE_TABLE = tuple(zip(TOPOLOGY.zones, TOPOLOGY.zone_share.tolist(), strict=True))
_REGION_SHARE = np.bincount(TOPOLOGY.zone_region, TOPOLOGY.zone_share).tolist()
_REGION_TABLE = tuple(zip(TOPOLOGY.regions, _REGION_SHARE, strict=True))


def _expression(key: str, operator: str, values: Sequence[str] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def _predicate(d: _Draws, team: str, narrow: bool) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    form = d.u()
    if narrow and form < 0.4:
        labels = {"team": team, "region": d.weighted(_REGION_TABLE), "env": d.weighted(ENVS)}
        selector["labelSelector"] = {"matchLabels": labels}
    elif narrow and form < 0.8:
        labels = {
            "zone": d.weighted(_ZONE_TABLE),
            "tier": d.weighted(TIERS),
            "env": d.weighted(ENVS),
        }
        selector["labelSelector"] = {"matchLabels": labels}
    elif narrow:  # the region as a claim, team and env as labels
        selector["labelSelector"] = {"matchLabels": {"team": team, "env": d.weighted(ENVS)}}
        region = d.weighted(_REGION_TABLE)
        selector["claimSelector"] = {
            "matchExpressions": [_expression(CLAIM_REGION, "In", [region])]
        }
    elif form < 0.25:
        labels = {"env": d.weighted(ENVS)}
        if d.chance(0.4):
            labels["provider"] = d.pick(TOPOLOGY.providers)
        selector["labelSelector"] = {"matchLabels": labels}
    elif form < 0.5:
        regions = d.sample(TOPOLOGY.regions_of(d.pick(GEOS)), 1 + int(d.u() * 3))
        expressions = [_expression("region", "In", regions)]
        if d.chance(0.5):
            expressions.append(_expression("tier", "NotIn", ["batch", "edge"]))
        selector["labelSelector"] = {"matchExpressions": expressions}
    elif form < 0.65:
        selector["labelSelector"] = {"matchLabels": {"team": team}}
    elif form < 0.75:
        expressions = [_expression("gpu", "Exists")]
        if d.chance(0.5):
            expressions.append(_expression("env", "In", ["prod", "staging"]))
        selector["labelSelector"] = {"matchExpressions": expressions}
    else:  # claims: Kubernetes versions, sometimes a platform, sometimes a label too
        versions = [v for v, _ in KUBE_VERSIONS][1 + int(d.u() * 2) :]
        claims = [_expression(CLAIM_KUBEVERSION, "In", versions)]
        if d.chance(0.4):
            claims.append(_expression(CLAIM_PLATFORM, "NotIn", ["AlibabaCloud"]))
        selector["claimSelector"] = {"matchExpressions": claims}
        if d.chance(0.5):
            selector["labelSelector"] = {
                "matchLabels": {"env": "prod"},
                "matchExpressions": [_expression("gpu", "DoesNotExist")],
            }
    return {"requiredClusterSelector": selector}


def _tolerations(d: _Draws) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if d.chance(0.6):
        unreachable: dict[str, Any] = {
            "key": UNREACHABLE,
            "operator": "Exists",
            "effect": "NoSelect",
        }
        if d.chance(0.7):  # tolerate a short outage only
            unreachable["tolerationSeconds"] = d.pick((60, 300, 600, 1800, 3600))
        out.append(unreachable)
    if d.chance(0.5):
        maintenance: dict[str, Any] = {"key": MAINTENANCE, "operator": "Equal", "value": "planned"}
        maintenance["effect"] = "NoSelectIfNew"
        if d.chance(0.3):
            maintenance["tolerationSeconds"] = 3600
        out.append(maintenance)
    if d.chance(0.5) or not out:
        out.append({"key": SPOT, "operator": "Exists", "effect": "PreferNoSelect"})
    return out


def _coordinate(name: str, score: str | None) -> dict[str, Any]:
    if score is None:
        return {"type": "BuiltIn", "builtIn": name}
    return {"type": "AddOn", "addOn": {"resourceName": SCORE_RESOURCE, "scoreName": score}}


def _policy(d: _Draws, spread: bool) -> dict[str, Any] | None:
    mode = d.weighted(tuple(zip((None, "Additive", "Exact"), POLICY_SHARES, strict=True)))
    if mode is None:
        return None
    chosen = d.sample(_PRIORITIZERS, 1 + int(d.u() * (3 if mode == "Additive" else 4)))
    configurations = [
        {"scoreCoordinate": _coordinate(name, score), "weight": d.weighted(_WEIGHTS)}
        for name, score in chosen
    ]
    if spread and d.chance(0.5 if mode == "Additive" else 0.6):
        spread_weight: dict[str, Any] = {"scoreCoordinate": _coordinate("Spread", None)}
        spread_weight["weight"] = d.pick((1, 2, 3, 5))
        configurations.append(spread_weight)
    return {"mode": mode, "configurations": configurations}


def _strategy(d: _Draws) -> dict[str, Any]:
    t = TOPOLOGY
    groups: list[dict[str, Any]] = []
    templates = ["canary", "wave", "new-k8s", "prod"]
    for template in d.sample(templates, d.weighted(((0, 0.4), (1, 0.4), (2, 0.2)))):
        if template == "canary":
            selector: dict[str, Any] = {"labelSelector": {"matchLabels": {"env": "staging"}}}
            name = "canary"
        elif template == "wave":
            geo = d.pick(GEOS)
            expressions = [_expression("region", "In", t.regions_of(geo))]
            selector, name = {"labelSelector": {"matchExpressions": expressions}}, f"wave-{geo}"
        elif template == "new-k8s":
            latest = [KUBE_VERSIONS[-1][0]]
            claims = [_expression(CLAIM_KUBEVERSION, "In", latest)]
            selector, name = {"claimSelector": {"matchExpressions": claims}}, "new-k8s"
        else:
            provider = d.pick(t.providers)
            labels = {"env": "prod", "provider": provider}
            selector, name = {"labelSelector": {"matchLabels": labels}}, f"prod-{provider}"
        groups.append({"groupName": name, "groupClusterSelector": selector})
    strategy: dict[str, Any] = {}
    if groups:
        strategy["decisionGroups"] = groups
    if not groups or d.chance(0.7):
        per_group: int | str = (
            d.pick((1, 2, 5, 10, 20)) if d.chance(0.6) else d.pick(("10%", "20%", "25%", "50%"))
        )
        strategy["clustersPerDecisionGroup"] = per_group
    return {"groupStrategy": strategy}


def _spread(d: _Draws) -> dict[str, Any]:
    terms: list[dict[str, Any]] = []
    for key, key_type in d.pick(_SPREADS):
        term: dict[str, Any] = {"topologyKey": key, "topologyKeyType": key_type}
        if d.chance(0.3):
            term["whenUnsatisfiable"] = "DoNotSchedule"
            term["maxSkew"] = d.pick((1, 1, 2, 3))
        elif d.chance(0.4):  # explicit, though it has no effect on ScheduleAnyway
            term["whenUnsatisfiable"] = "ScheduleAnyway"
            term["maxSkew"] = d.pick((1, 2))
        terms.append(term)
    return {"spreadConstraints": terms}


def _spec(d: _Draws, namespace: str, bound: Sequence[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if bound and d.chance(CLUSTER_SETS_SHARE):
        spec["clusterSets"] = d.sample(bound, 1 + int(d.chance(0.3)))
    spread = d.chance(SPREAD_SHARE)
    if d.chance(NUMBERED_SHARE):
        spec["numberOfClusters"] = d.weighted(COUNTS)
        if d.chance(PREDICATE_SHARE):
            spec["predicates"] = [_predicate(d, namespace, False)]
    else:
        spec["predicates"] = [_predicate(d, namespace, True)]
    if "predicates" in spec and d.chance(0.2):  # a second predicate, ORed with the first
        spec["predicates"].append(_predicate(d, namespace, "numberOfClusters" not in spec))
    if d.chance(TOLERATION_SHARE):
        spec["tolerations"] = _tolerations(d)
    policy = _policy(d, spread)
    if policy is not None:
        spec["prioritizerPolicy"] = policy
    if d.chance(GROUPS_SHARE):
        spec["decisionStrategy"] = _strategy(d)
    if spread:
        spec["spreadPolicy"] = _spread(d)
    return spec


def _wide(d: _Draws, namespace: str, bound: Sequence[str]) -> dict[str, Any]:
    """A placement selecting hundreds to all of the clusters its sets hold: every cluster, or
    a count, sometimes restricted by a broad predicate (an env), sometimes tolerating the
    maintenance taint; Balance/Steady by default, a group strategy at times."""
    spec: dict[str, Any] = {}
    count = d.weighted(WIDE_COUNTS)
    if count is not None:
        spec["numberOfClusters"] = count
    if d.chance(0.4):
        envs = d.sample([name for name, _ in ENVS], 2)
        spec["predicates"] = [
            {"requiredClusterSelector": {"labelSelector": {"matchExpressions": [
                _expression("env", "In", envs)
            ]}}}
        ]  # fmt: skip
    if d.chance(TOLERATION_SHARE):
        spec["tolerations"] = _tolerations(d)
    if d.chance(GROUPS_SHARE):
        spec["decisionStrategy"] = _strategy(d)
    return spec


def placements(
    count: int,
    namespaces: Sequence[str],
    bound: dict[str, list[str]],
    rng: np.random.Generator,
    wide_share: float = 0.0,
) -> list[Placement]:
    """`count` placements named `<app>-<i>` over `namespaces` (skewed: a few busy ones);
    namespaces are named after the teams, whose clusters their placements often ask for.
    `wide_share` of them (drawn apart, so 0 leaves the mix as it was) select hundreds to all
    clusters (`_wide`)."""
    if count == 0:
        return []
    ns_index = rng.choice(len(namespaces), count, p=weights(len(namespaces), 0.8)).tolist()
    rows = rng.random((count, _COLUMNS)).tolist()
    out: list[Placement] = []
    for i, (ns_at, row) in enumerate(zip(ns_index, rows, strict=True)):
        d = _Draws(row)
        namespace = namespaces[ns_at]
        name = f"{d.pick(APPS)}-{i}"
        wide = row[-1] < wide_share  # the row's last uniform: no spec draws that far
        sets = bound.get(namespace, [])
        spec = _wide(d, namespace, sets) if wide else _spec(d, namespace, sets)
        doc = {"metadata": {"name": name, "namespace": namespace}, "spec": spec}
        out.append(Placement.model_validate(doc))
    return out
