"""The hub side of the scale workload (`perf/workload.py`): the topology catalog, the
ManagedClusters, their AddOnPlacementScores, the ManagedClusterSets and their bindings.

Every draw comes from the numpy Generator passed in, in a fixed order, so the same seed gives the
same objects. Objects are built from wire documents with `model_validate`: they are valid by
construction, and at 100k clusters that costs seconds, not minutes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from apis.cluster import (
    CLUSTER_SET_LABEL,
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.meta import format_time

__all__ = [
    "CLAIM_KUBEVERSION",
    "CLAIM_PLATFORM",
    "CLAIM_REGION",
    "ENVS",
    "EXCLUSIVE_SETS",
    "GEOS",
    "KUBE_VERSIONS",
    "MAINTENANCE",
    "SCORE_RESOURCE",
    "SCORE_SHARE",
    "SPOT",
    "TAINT_SHARES",
    "TEAMS",
    "TIERS",
    "TOPOLOGY",
    "UNREACHABLE",
    "VALID_SCORE_SHARE",
    "Topology",
    "bindings",
    "cluster_sets",
    "clusters",
    "weights",
]

# --- catalog -----------------------------------------------------------------------------------

CLAIM_ID = "id.k8s.io"
CLAIM_PLATFORM = "platform.open-cluster-management.io"
CLAIM_REGION = "region.open-cluster-management.io"
CLAIM_KUBEVERSION = "kubeversion.open-cluster-management.io"
CLAIM_PRODUCT = "product.open-cluster-management.io"
UNREACHABLE = "cluster.open-cluster-management.io/unreachable"
MAINTENANCE = "example.com/maintenance"
SPOT = "example.com/spot-capacity"
SCORE_RESOURCE = "resource-usage-score"

# (label, cloud label, platform claim, vendors, fleet share, zone suffixes, regions by popularity)
# fmt: off
_PROVIDERS: tuple[tuple[str, str, str, tuple[str, ...], float, str, tuple[str, ...]], ...] = (
    ("aws", "Amazon", "AWS", ("EKS", "OpenShift"), 0.40, "abcd",
     ("us-east-1", "eu-west-1", "us-west-2", "ap-southeast-1", "eu-central-1", "us-east-2",
      "ap-northeast-1", "eu-west-2", "ap-south-1", "ca-central-1", "ap-southeast-2",
      "sa-east-1", "eu-north-1", "us-west-1")),
    ("azure", "Azure", "Azure", ("AKS", "OpenShift"), 0.25, "1234",
     ("eastus", "westeurope", "eastus2", "northeurope", "westus2", "southeastasia",
      "centralus", "uksouth", "japaneast", "australiaeast", "westus3")),
    ("gcp", "Google", "GCP", ("GKE", "OpenShift"), 0.22, "abcf",
     ("us-central1", "europe-west1", "us-east1", "asia-east1", "europe-west4", "us-west1",
      "asia-northeast1", "us-east4", "europe-west3", "asia-southeast1")),
    ("alibaba", "Alibaba", "AlibabaCloud", ("ACK",), 0.13, "hijk",
     ("cn-hangzhou", "cn-shanghai", "cn-beijing", "cn-shenzhen", "cn-hongkong", "me-east-1")),
)
# fmt: on
_EMEA = ("eu-", "europe-", "westeurope", "northeurope", "uksouth", "me-")
_APAC = ("ap-", "asia-", "southeastasia", "japaneast", "australiaeast", "cn-")
GEOS = ("americas", "emea", "apac")
ENVS = (("prod", 0.5), ("staging", 0.3), ("dev", 0.2))
TIERS = (("frontend", 0.3), ("backend", 0.35), ("data", 0.15), ("batch", 0.12), ("edge", 0.08))
TEAMS = tuple(f"team-{k:02d}" for k in range(40))
KUBE_VERSIONS = (("v1.28.15", 0.08), ("v1.29.10", 0.17), ("v1.30.6", 0.4), ("v1.31.2", 0.35))
GPUS = ("nvidia-l4", "nvidia-a100", "nvidia-h100")
GPU_SHARE = 0.06
EXCLUSIVE_SETS = (("default", 0.85), ("regulated", 0.08), ("sandbox", 0.07))
# Shares of the clusters carrying each taint (one at most): NoSelect unreachable, NoSelectIfNew
# maintenance, PreferNoSelect spot; 2.5% in all.
TAINT_SHARES = (0.010, 0.007, 0.008)
SCORE_SHARE = 0.92  # clusters with an AddOnPlacementScore
VALID_SCORE_SHARE = 0.95  # of those, validUntil in the future


def weights(n: int, exponent: float) -> npt.NDArray[np.float64]:
    """Zipf-like shares of `n` ranked items: skewed, as real fleets are, and summing to 1."""
    raw: npt.NDArray[np.float64] = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
    shares: npt.NDArray[np.float64] = raw / raw.sum()
    return shares


@dataclass(frozen=True)
class Topology:
    """Providers, regions and zones, and the share of the fleet each zone gets."""

    providers: tuple[str, ...]
    clouds: tuple[str, ...]
    platforms: tuple[str, ...]
    vendors: tuple[tuple[str, ...], ...]
    provider_share: tuple[float, ...]
    regions: tuple[str, ...]
    region_provider: tuple[int, ...]
    region_geo: tuple[str, ...]
    zones: tuple[str, ...]
    zone_region: tuple[int, ...]
    zone_share: npt.NDArray[np.float64]

    def regions_of(self, geo: str) -> list[str]:
        return [r for r, g in zip(self.regions, self.region_geo, strict=True) if g == geo]


def _geo(region: str) -> str:
    if region.startswith(_EMEA):
        return "emea"
    return "apac" if region.startswith(_APAC) else "americas"


def _topology() -> Topology:
    regions: list[str] = []
    region_provider: list[int] = []
    zones: list[str] = []
    zone_region: list[int] = []
    shares: list[float] = []
    for p, (_, _, _, _, share, suffixes, names) in enumerate(_PROVIDERS):
        for region, region_share in zip(names, weights(len(names), 0.8), strict=True):
            r = len(regions)
            regions.append(region)
            region_provider.append(p)
            count = 2 + (3 * r + 1) % 3  # 2 to 4 zones, 3 on average
            sep = "" if suffixes == "abcd" else "-"  # us-east-1a, eastus-1, us-central1-a
            for suffix, zone_share in zip(suffixes, weights(count, 0.4), strict=False):
                zones.append(f"{region}{sep}{suffix}")
                zone_region.append(r)
                shares.append(share * region_share * zone_share)
    total = np.asarray(shares)
    return Topology(
        providers=tuple(p[0] for p in _PROVIDERS),
        clouds=tuple(p[1] for p in _PROVIDERS),
        platforms=tuple(p[2] for p in _PROVIDERS),
        vendors=tuple(p[3] for p in _PROVIDERS),
        provider_share=tuple(p[4] for p in _PROVIDERS),
        regions=tuple(regions),
        region_provider=tuple(region_provider),
        region_geo=tuple(_geo(r) for r in regions),
        zones=tuple(zones),
        zone_region=tuple(zone_region),
        zone_share=total / total.sum(),
    )


TOPOLOGY = _topology()


def _choice(rng: np.random.Generator, table: Sequence[tuple[str, float]], n: int) -> list[int]:
    p = np.asarray([share for _, share in table])
    return [int(i) for i in rng.choice(len(table), n, p=p / p.sum())]


# --- clusters and scores -----------------------------------------------------------------------


def clusters(
    n: int, rng: np.random.Generator, now: datetime
) -> tuple[list[ManagedCluster], list[AddOnPlacementScore]]:
    """`n` clusters named `<zone>-<i>` and the scores of about SCORE_SHARE of them."""
    t = TOPOLOGY
    zone = rng.choice(len(t.zones), n, p=t.zone_share).tolist()
    env = _choice(rng, ENVS, n)
    tier = _choice(rng, TIERS, n)
    team = rng.choice(len(TEAMS), n, p=weights(len(TEAMS), 0.7)).tolist()
    vendor_u = rng.random(n).tolist()
    gpu = np.where(rng.random(n) < GPU_SHARE, rng.integers(0, len(GPUS), n), -1).tolist()
    exclusive = _choice(rng, EXCLUSIVE_SETS, n)
    kube = _choice(rng, KUBE_VERSIONS, n)
    nodes = np.clip(np.rint(rng.lognormal(np.log(12.0), 0.9, n)), 3, 500).astype(np.int64)
    cores = rng.choice(np.array([4, 8, 16, 32, 64]), n, p=[0.1, 0.3, 0.3, 0.2, 0.1])
    gib_per_core = rng.choice(np.array([2, 4, 8]), n, p=[0.2, 0.6, 0.2])
    used = rng.beta(2.0, 3.0, (2, n))
    cpu = nodes * cores
    memory_gib = cpu * gib_per_core
    alloc_milli = np.maximum((cpu * 1000 * (1 - used[0])).astype(np.int64), 100).tolist()
    alloc_mi = np.maximum((memory_gib * 1024 * (1 - used[1])).astype(np.int64), 256).tolist()
    available = np.clip(np.rint(200 * (1 - used) - 100), -100, 100).astype(np.int64)
    taint_u = rng.random(n).tolist()
    taint_age = rng.integers(60, 4 * 3600, n).tolist()
    taint_stamped = (rng.random(n) < 0.5).tolist()
    condition_age = rng.integers(3600, 30 * 86400, n).tolist()
    scored = (rng.random(n) < SCORE_SHARE).tolist()
    valid = (rng.random(n) < VALID_SCORE_SHARE).tolist()
    validity = rng.integers(5 * 60, 3600, n).tolist()
    ids = rng.bytes(16 * n)
    cpu_l, memory_l, cpu_free, mem_free = (
        cpu.tolist(),
        memory_gib.tolist(),
        available[0].tolist(),
        available[1].tolist(),
    )
    no_select, if_new = TAINT_SHARES[0], TAINT_SHARES[0] + TAINT_SHARES[1]
    any_taint = sum(TAINT_SHARES)
    out: list[ManagedCluster] = []
    scores: list[AddOnPlacementScore] = []
    for i in range(n):
        z = zone[i]
        r = t.zone_region[z]
        p = t.region_provider[r]
        vendors = t.vendors[p]
        vendor = vendors[int(vendor_u[i] * len(vendors))]
        name = f"{t.zones[z]}-{i}"
        labels = {
            "provider": t.providers[p],
            "cloud": t.clouds[p],
            "vendor": vendor,
            "region": t.regions[r],
            "zone": t.zones[z],
            "env": ENVS[env[i]][0],
            "tier": TIERS[tier[i]][0],
            "team": TEAMS[team[i]],
        }
        if gpu[i] >= 0:
            labels["gpu"] = GPUS[gpu[i]]
        labels[CLUSTER_SET_LABEL] = EXCLUSIVE_SETS[exclusive[i]][0]
        taints: list[dict[str, Any]] = []
        available_status = "True"
        u = taint_u[i]
        if u < any_taint:
            added = format_time(now - timedelta(seconds=taint_age[i]))
            if u < no_select:  # the hub stamps the unreachable taint it adds itself
                taints.append({"key": UNREACHABLE, "effect": "NoSelect", "timeAdded": added})
                available_status = "Unknown"
            else:
                key, value, effect = (
                    (MAINTENANCE, "planned", "NoSelectIfNew")
                    if u < if_new
                    else (SPOT, "low", "PreferNoSelect")
                )
                taint = {"key": key, "value": value, "effect": effect}
                if taint_stamped[i]:
                    taint["timeAdded"] = added
                taints.append(taint)
        spec: dict[str, Any] = {"hubAcceptsClient": True, "leaseDurationSeconds": 60}
        if taints:
            spec["taints"] = taints
        condition = {
            "type": "ManagedClusterConditionAvailable",
            "status": available_status,
            "reason": "ManagedClusterAvailable"
            if available_status == "True"
            else "ManagedClusterLeaseUpdateStopped",
            "message": "Managed cluster is available"
            if available_status == "True"
            else "Registration agent stopped updating its lease.",
            "lastTransitionTime": format_time(now - timedelta(seconds=condition_age[i])),
        }
        doc = {
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": {
                "conditions": [condition],
                "capacity": {"cpu": str(cpu_l[i]), "memory": f"{memory_l[i]}Gi"},
                "allocatable": {"cpu": f"{alloc_milli[i]}m", "memory": f"{alloc_mi[i]}Mi"},
                "clusterClaims": [
                    {
                        "name": CLAIM_ID,
                        "value": str(uuid.UUID(bytes=ids[16 * i : 16 * i + 16], version=4)),
                    },
                    {"name": CLAIM_PLATFORM, "value": t.platforms[p]},
                    {"name": CLAIM_REGION, "value": t.regions[r]},
                    {"name": CLAIM_KUBEVERSION, "value": KUBE_VERSIONS[kube[i]][0]},
                    {"name": CLAIM_PRODUCT, "value": vendor},
                ],
            },
        }
        out.append(ManagedCluster.model_validate(doc))
        if scored[i]:
            seconds = validity[i] if valid[i] else -validity[i]
            status = {
                "scores": [
                    {"name": "cpuAvailable", "value": cpu_free[i]},
                    {"name": "memAvailable", "value": mem_free[i]},
                ],
                "validUntil": format_time(now + timedelta(seconds=seconds)),
            }
            meta = {"name": SCORE_RESOURCE, "namespace": name}
            scores.append(AddOnPlacementScore.model_validate({"metadata": meta, "status": status}))
    return out, scores


# --- cluster sets and bindings -----------------------------------------------------------------


def _set(name: str, selector: dict[str, Any] | None) -> ManagedClusterSet:
    if selector is None:
        cluster_selector: dict[str, Any] = {"selectorType": "ExclusiveClusterSetLabel"}
    else:
        cluster_selector = {"selectorType": "LabelSelector", "labelSelector": selector}
    return ManagedClusterSet.model_validate(
        {"metadata": {"name": name}, "spec": {"clusterSelector": cluster_selector}}
    )


def cluster_sets() -> list[ManagedClusterSet]:
    """`global` (every cluster), the exclusive sets (by the clusterset label), one set per env,
    per provider and per geography (region In ...), and `gpu` (gpu Exists)."""
    t = TOPOLOGY
    sets = [_set("global", {})]
    sets += [_set(name, None) for name, _ in EXCLUSIVE_SETS]
    sets += [_set(f"env-{env}", {"matchLabels": {"env": env}}) for env, _ in ENVS]
    sets += [_set(p, {"matchLabels": {"provider": p}}) for p in t.providers]
    for geo in GEOS:
        expression = {"key": "region", "operator": "In", "values": t.regions_of(geo)}
        sets.append(_set(geo, {"matchExpressions": [expression]}))
    sets.append(_set("gpu", {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}))
    return sets


def bindings(
    namespaces: Sequence[str], rng: np.random.Generator
) -> tuple[list[ManagedClusterSetBinding], dict[str, list[str]]]:
    """The bindings of each namespace (`global` in most, some env, provider, geography and
    exclusive sets), and the set names bound per namespace."""
    t = TOPOLOGY
    u = rng.random((len(namespaces), 10)).tolist()
    provider_p = np.cumsum(t.provider_share) / sum(t.provider_share)
    out: list[ManagedClusterSetBinding] = []
    bound: dict[str, list[str]] = {}
    for ns, draw in zip(namespaces, u, strict=True):
        names: list[str] = []
        if draw[0] < 0.7:
            names.append("global")
        if draw[1] < 0.6 or not names:
            names.append("default")
        names.append(f"env-{ENVS[0 if draw[2] < 0.5 else 1 if draw[2] < 0.8 else 2][0]}")
        if draw[3] < 0.3 and "env-dev" not in names:
            names.append("env-dev")
        if draw[4] < 0.5:
            names.append(t.providers[int(np.searchsorted(provider_p, draw[5]))])
        if draw[6] < 0.3:
            names.append(GEOS[int(draw[7] * len(GEOS))])
        if draw[8] < 0.15:
            names.append("gpu")
        if draw[9] < 0.1 or draw[9] > 0.8:
            names.append("regulated" if draw[9] < 0.1 else "sandbox")
        bound[ns] = names
        out += [
            ManagedClusterSetBinding.model_validate(
                {"metadata": {"name": s, "namespace": ns}, "spec": {"clusterSet": s}}
            )
            for s in names
        ]
    return out, bound
