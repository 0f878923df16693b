"""The hub of the side-by-side with OCM's placement controller (`perf.vs_ocm`), as the wire
documents both controllers read from one real kube-apiserver, and the churn applied to it.

`hub` turns the harness's seeded workload (`perf.workload.generate`: the fleet with status,
sets, bindings, AddOnPlacementScores, placements of the hub perf's mix) into documents, and
adds CEL predicates to a share of the placements (`CEL_SHARE`: label, claim, quantity, semver
and `scores()` expressions, ANDed with what the placement already asks). Every cluster gets a
score valid for the run: the workload leaves 8% without one and 5% expired, and OCM retries
every placement weighing a missing or expired score (a Warning is a sync error there), at its
queue's 10 per second for as long as the score is missing: at 5,000 x 2,000 its one worker
never drained its queue in 10 minutes, so no step could settle. A Steady weight below 0 is
raised to 0: OCM schedules a placement again on every write of its own decisions, and with
Steady negative each schedule moves away from the clusters it just chose, for ever (one such
placement made 8,800 DecisionUpdate events in 5 minutes at 1,000 x 300; ours writes once). The
mix's spread
placements stay: OCM ignores `spreadPolicy` and calls `builtIn: Spread` misconfigured, which
the comparison classifies as a documented difference.

The churn steps (`STEPS`) each return the requests that make them, in the order sent:

* `labels`: 10% of the clusters get their `tier` label changed (a merge patch);
* `taints`: 2% of the clusters get the unreachable NoSelect taint, stamped in the past so that
  a 60 s toleration lapses `lapse` seconds after the step (`LAPSE` by default);
* `scores`: 20% of the AddOnPlacementScores get new values (status subresource);
* `placements`: 10% of the placements edited (numberOfClusters +1, or 1 when it had none).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "CEL_SHARE",
    "LAPSE",
    "STEPS",
    "TOLERATION",
    "Hub",
    "Patch",
    "churn",
    "hub",
    "path",
    "revert",
    "traits",
]

GROUP = "cluster.open-cluster-management.io"
CEL_SHARE = 0.15
TOLERATION = 60
"""The mix's shortest tolerationSeconds on the unreachable taint."""
LAPSE = 8.0
"""Seconds after the taints step at which the added taints' 60 s tolerations lapse (the
taints are stamped `TOLERATION - LAPSE` seconds in the past)."""
UNREACHABLE = f"{GROUP}/unreachable"
STEPS = ("labels", "taints", "scores", "placements")
TIERS = ("frontend", "backend", "data", "batch", "edge")
SCORE = "resource-usage-score"

CEL = (
    'managedCluster.metadata.labels["tier"] in ["frontend", "data"]',
    "managedCluster.status.clusterClaims.exists(c, "
    'c.name == "kubeversion.open-cluster-management.io" && '
    'semver(c.value.substring(1)).isGreaterThan(semver("1.29.0")))',
    'quantity(managedCluster.status.allocatable.memory).isGreaterThan(quantity("100Gi"))',
    'managedCluster.scores("resource-usage-score").exists(s, '
    's.name == "cpuAvailable" && s.value >= 0)',
    'managedCluster.metadata.?labels.?gpu.orValue("") == ""',
)


@dataclass
class Patch:
    """One request of the churn or of the status writes: method, path, JSON body."""

    method: str
    path: str
    body: Any
    content_type: str = "application/merge-patch+json"

    def encoded(self) -> bytes:
        return json.dumps(self.body).encode()


@dataclass
class Hub:
    """The documents to create (in order), the status writes after them, and what the churn
    reads: cluster names, score keys, placement keys with their specs."""

    creates: list[dict[str, Any]]
    statuses: list[Patch]
    clusters: dict[str, dict[str, Any]]
    scores: dict[tuple[str, str], dict[str, Any]]
    placements: dict[tuple[str, str], dict[str, Any]]


def path(doc: dict[str, Any]) -> str:
    """The collection a document is POSTed to."""
    kind, meta = doc["kind"], doc["metadata"]
    if kind == "Namespace":
        return "/api/v1/namespaces"
    group, version = doc["apiVersion"].split("/")
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    ns = meta.get("namespace")
    where = f"/namespaces/{ns}" if ns else ""
    return f"/apis/{group}/{version}{where}/{plural}"


def _steady(spec: dict[str, Any]) -> None:
    """A Steady weight below 0 raised to 0 (module docstring)."""
    for item in (spec.get("prioritizerPolicy") or {}).get("configurations") or []:
        if (item.get("scoreCoordinate") or {}).get("builtIn") == "Steady":
            item["weight"] = max(0, item.get("weight", 1))


def _with_cel(spec: dict[str, Any], rng: random.Random) -> None:
    expressions = rng.sample(CEL, 1 + int(rng.random() < 0.3))
    cel = {"celSelector": {"celExpressions": expressions}}
    predicates = spec.get("predicates") or [{"requiredClusterSelector": {}}]
    predicates[0]["requiredClusterSelector"].update(cel)
    spec["predicates"] = predicates


def _timeless(doc: dict[str, Any], now: datetime) -> None:
    """Times that would otherwise change decisions during the run, differently for the two
    controllers: the fleet's taints all a day old (every toleration with seconds lapsed),
    every score valid for a day."""
    for taint in (doc.get("spec") or {}).get("taints") or []:
        if "timeAdded" in taint:
            taint["timeAdded"] = _stamp(now - timedelta(days=1))
    status = doc.get("status") or {}
    if status.get("validUntil"):
        status["validUntil"] = _stamp(now + timedelta(days=1))


def _missing_scores(workload: Any, rng: random.Random) -> list[dict[str, Any]]:
    """An AddOnPlacementScore for each cluster the workload gave none."""
    have = {s.namespace for s in workload.scores}
    return [
        {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "AddOnPlacementScore",
            "metadata": {"name": SCORE, "namespace": c.name},
            "status": {
                "scores": [
                    {"name": "cpuAvailable", "value": rng.randint(-100, 100)},
                    {"name": "memAvailable", "value": rng.randint(-100, 100)},
                ],
                "validUntil": "",
            },
        }
        for c in workload.clusters
        if c.name not in have
    ]


def hub(clusters: int, placements: int, seed: int = 1, now: datetime | None = None) -> Hub:
    """The seeded hub (module docstring), its times relative to `now`."""
    from perf.workload import generate

    now = now or datetime.now(UTC)
    workload = generate(clusters, placements, seed, now=now)
    rng = random.Random(seed)
    names = [*workload.namespaces(), "open-cluster-management-hub"]
    creates: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names
    ]
    statuses: list[Patch] = []
    clusters_by_name: dict[str, dict[str, Any]] = {}
    scores: dict[tuple[str, str], dict[str, Any]] = {}
    objects = [*workload.clusters, *workload.cluster_sets, *workload.bindings, *workload.scores]
    for doc in [*(o.to_wire() for o in objects), *_missing_scores(workload, rng)]:
        if doc["kind"] == "AddOnPlacementScore":
            doc["status"]["validUntil"] = "set"
        _timeless(doc, now)
        status = doc.pop("status", None)
        meta = doc["metadata"]
        if doc["kind"] == "ManagedCluster":
            clusters_by_name[meta["name"]] = doc
        elif doc["kind"] == "AddOnPlacementScore":
            scores[(meta["namespace"], meta["name"])] = status or {}
        creates.append(doc)
        if status:
            where = f"{path(doc)}/{doc['metadata']['name']}/status"
            statuses.append(Patch("PATCH", where, {"status": status}))
    specs: dict[tuple[str, str], dict[str, Any]] = {}
    for placement in workload.placements:
        doc = placement.to_wire()
        doc.pop("status", None)
        _steady(doc["spec"])
        if rng.random() < CEL_SHARE:
            _with_cel(doc["spec"], rng)
        creates.append(doc)
        specs[(doc["metadata"]["namespace"], doc["metadata"]["name"])] = doc["spec"]
    return Hub(
        creates=creates,
        statuses=statuses,
        clusters=clusters_by_name,
        scores=scores,
        placements=specs,
    )


def _stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _chosen(step: str, hub: Hub, round_: int) -> list[Any]:
    rng = random.Random(f"{step}-{round_}")
    if step in ("labels", "taints"):
        names = sorted(hub.clusters)
        return rng.sample(names, max(1, len(names) // (10 if step == "labels" else 50)))
    if step == "scores":
        keys = sorted(hub.scores)
        return rng.sample(keys, max(1, len(keys) // 5))
    if step == "placements":
        keys = sorted(hub.placements)
        return rng.sample(keys, max(1, len(keys) // 10))
    raise ValueError(f"unknown churn step {step!r}")


def churn(
    step: str, hub: Hub, round_: int, now: datetime | None = None, lapse: float = LAPSE
) -> list[Patch]:
    """The requests of one churn step. `round_` picks what changes: both controllers' runs of
    a round make the same changes on the same objects (`revert` undoes them in between)."""
    rng = random.Random(f"{step}-{round_}-values")
    now = now or datetime.now(UTC)
    out: list[Patch] = []
    for key in _chosen(step, hub, round_):
        if step == "labels":
            tier = hub.clusters[key]["metadata"]["labels"].get("tier")
            new = rng.choice([t for t in TIERS if t != tier])
            out.append(Patch("PATCH", _cluster(key), {"metadata": {"labels": {"tier": new}}}))
        elif step == "taints":
            added = _stamp(now - timedelta(seconds=TOLERATION - lapse))
            taint = {"key": UNREACHABLE, "effect": "NoSelect", "timeAdded": added}
            taints = [*(hub.clusters[key]["spec"].get("taints") or []), taint]
            out.append(Patch("PATCH", _cluster(key), {"spec": {"taints": taints}}))
        elif step == "scores":
            values = [
                {"name": "cpuAvailable", "value": rng.randint(-100, 100)},
                {"name": "memAvailable", "value": rng.randint(-100, 100)},
            ]
            status = {"scores": values, "validUntil": _stamp(now + timedelta(days=1))}
            out.append(Patch("PATCH", _score(key), {"status": status}))
        else:
            count = hub.placements[key].get("numberOfClusters")
            more = 1 + round_ if count is None else count + 1 + round_
            out.append(Patch("PATCH", _placement(key), {"spec": {"numberOfClusters": more}}))
    return out


def revert(step: str, hub: Hub, round_: int) -> list[Patch]:
    """The requests that put back what `churn(step, hub, round_)` changed."""
    out: list[Patch] = []
    for key in _chosen(step, hub, round_):
        if step == "labels":
            tier = hub.clusters[key]["metadata"]["labels"].get("tier")
            out.append(Patch("PATCH", _cluster(key), {"metadata": {"labels": {"tier": tier}}}))
        elif step == "taints":
            taints = hub.clusters[key]["spec"].get("taints")
            out.append(Patch("PATCH", _cluster(key), {"spec": {"taints": taints}}))
        elif step == "scores":
            out.append(Patch("PATCH", _score(key), {"status": hub.scores[key]}))
        else:
            count = hub.placements[key].get("numberOfClusters")
            out.append(Patch("PATCH", _placement(key), {"spec": {"numberOfClusters": count}}))
    return out


def _cluster(name: str) -> str:
    return f"/apis/{GROUP}/v1/managedclusters/{name}"


def _score(key: tuple[str, str]) -> str:
    return f"/apis/{GROUP}/v1alpha1/namespaces/{key[0]}/addonplacementscores/{key[1]}/status"


def _placement(key: tuple[str, str]) -> str:
    return f"/apis/{GROUP}/v1beta1/namespaces/{key[0]}/placements/{key[1]}"


def _weights(spec: dict[str, Any]) -> dict[str, int]:
    """The builtIn prioritizers' weights as OCM applies them: Balance and Steady at 1 unless
    the mode is Exact, then the configured ones."""
    policy = spec.get("prioritizerPolicy") or {}
    out = {} if policy.get("mode") == "Exact" else {"Balance": 1, "Steady": 1}
    for item in policy.get("configurations") or []:
        coordinate = item.get("scoreCoordinate") or {}
        if coordinate.get("type", "BuiltIn") == "BuiltIn":
            out[coordinate.get("builtIn", "")] = item.get("weight", 1)
    return out


def traits(hub: Hub) -> dict[str, Any]:
    """What the comparison of decisions needs to know of each placement ("ns/name"): spread
    (spreadPolicy or builtIn Spread), Balance or Steady weighted, CEL calling scores(),
    tolerating the spot taint, a numberOfClusters (else every feasible cluster is selected and
    no score can change which); and the clusters with a PreferNoSelect taint."""
    placements = {}
    for (ns, name), spec in hub.placements.items():
        weights = _weights(spec)
        text = json.dumps(spec)
        placements[f"{ns}/{name}"] = {
            "spread": "spreadPolicy" in spec or bool(weights.get("Spread")),
            "balance": bool(weights.get("Balance")),
            "steady": bool(weights.get("Steady")),
            "cel_scores": "scores(" in text,
            "tolerates_spot": "spot" in json.dumps(spec.get("tolerations") or []),
            "numbered": "numberOfClusters" in spec,
            "unreachable_s": max(
                (
                    t.get("tolerationSeconds", 0)
                    for t in spec.get("tolerations") or []
                    if t.get("key") in (UNREACHABLE, None)
                ),
                default=None,
            ),
        }
    prefer = [
        name
        for name, doc in hub.clusters.items()
        if any(t.get("effect") == "PreferNoSelect" for t in doc["spec"].get("taints") or [])
    ]
    return {"placements": placements, "prefer_no_select": sorted(prefer)}
