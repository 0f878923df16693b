"""A seeded, realistic hub for the scale harness: N ManagedClusters and P Placements with the
objects around them, as models (`generate`) or as YAML that `placement simulate -f` and
`kubectl apply -f` read (`write_yaml`, or the command line).

The fleet (`perf/_workload_fleet.py`): 4 providers, 41 regions, 123 zones (2-4 per region),
Zipf-skewed sizes; labels provider, cloud, vendor, region, zone, env, tier, team (40 teams),
gpu (6%) and the exclusive cluster-set label (default 85%, regulated 8%, sandbox 7%); claims
id.k8s.io, platform, region, kubeversion and product; capacity and allocatable cpu and memory;
2.5% tainted (1% NoSelect unreachable, 0.7% NoSelectIfNew maintenance, 0.8% PreferNoSelect spot,
stamped with timeAdded so tolerationSeconds matter); an AddOnPlacementScore
`resource-usage-score` (cpuAvailable, memAvailable) for 92% of the clusters, in the cluster's
namespace, valid for 5-60 more minutes for 95% of them (expired for the rest). 15 cluster sets
(`global`, the 3 exclusive ones, env-*, one per provider, americas/emea/apac by region In ...,
`gpu` by gpu Exists), bound per namespace (global in 70% of the namespaces).

The placements (`perf/_workload_placements.py`), in min(40, max(3, P/50)) namespaces named
after the teams: clusterSets 50%, numberOfClusters 75% (1-50; the others have a narrow
predicate), predicates on labels and claims (In, NotIn, Exists, DoesNotExist; a second ORed
predicate for 20%), tolerations 25% (some with tolerationSeconds), prioritizer policy
default 40% / Additive 35% / Exact 25% (Balance, Steady, ResourceAllocatableCPU/Memory, AddOn,
Spread; weights -1..5), decision groups 20% (group selectors, clustersPerDecisionGroup as int or
percent), spread policies 15% (1-3 terms over provider/region/zone labels or the region claim,
30% DoNotSchedule with maxSkew 1-3).

    python -m perf.workload --clusters 10000 --placements 1000 --seed 1 -o /tmp/hub
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from apis.cluster import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from apis.core import Namespace
from apis.meta import KubeObject, parse_time
from apis.placements import Placement
from perf import _workload_fleet as fleet
from perf._workload_placements import placements as make_placements
from placement.snapshot.fleet_snapshot import FleetSnapshot
from placement.testing import NOW

try:
    from yaml import CSafeDumper as _BaseDumper
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeDumper as _BaseDumper  # type: ignore[assignment]

__all__ = ["NOW", "Workload", "generate", "main", "namespaces_for", "write_yaml"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
# Files in the order kubectl applies a folder (by name): namespaces before what lives in them.
NAMESPACES_FILE = "00-namespaces.yaml"


@dataclass(frozen=True)
class Workload:
    """A generated hub: the fleet objects and the placements to schedule on it."""

    clusters: tuple[ManagedCluster, ...]
    cluster_sets: tuple[ManagedClusterSet, ...]
    bindings: tuple[ManagedClusterSetBinding, ...]
    scores: tuple[AddOnPlacementScore, ...]
    placements: tuple[Placement, ...]

    def fleet_objects(self) -> list[KubeObject]:
        """Everything but the placements."""
        return [*self.clusters, *self.cluster_sets, *self.bindings, *self.scores]

    def objects(self) -> list[KubeObject]:
        """Everything, placements last."""
        return [*self.fleet_objects(), *self.placements]

    def snapshot(self) -> FleetSnapshot:
        """The fleet as the scheduler sees it before any decision."""
        return FleetSnapshot.build(self.clusters, self.cluster_sets, self.bindings, (), self.scores)

    def namespaces(self) -> list[str]:
        """Every namespace the objects live in: the placements' and each cluster's own."""
        used = {p.namespace for p in self.placements} | {b.namespace for b in self.bindings}
        return sorted(used) + [c.name for c in self.clusters]


def namespaces_for(placements: int) -> list[str]:
    """The placements' namespaces, named after the teams: a few for a few placements, up to one
    per team."""
    if placements == 0:
        return []
    return list(fleet.TEAMS[: min(len(fleet.TEAMS), max(3, placements // 50))])


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector. Generating and writing make millions of container
    objects and no garbage; the collector's passes over them would take three quarters of the
    time at 100k clusters."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def generate(
    clusters: int, placements: int, seed: int = 0, *, now: datetime = NOW, wide: float = 0.0
) -> Workload:
    """The hub of `clusters` clusters and `placements` placements for `seed`; times (taints,
    scores, conditions) are relative to `now`. The fleet does not depend on `placements`.
    `wide`: the share of placements selecting hundreds to all clusters (issue 20)."""
    if clusters < 0 or placements < 0:
        raise ValueError(f"counts must not be negative (got {clusters}, {placements})")
    if seed < 0:
        raise ValueError(f"seed must not be negative (got {seed})")
    now = now.astimezone(UTC).replace(microsecond=0)
    fleet_rng, binding_rng, placement_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)
    )
    with _no_gc():
        made_clusters, scores = fleet.clusters(clusters, fleet_rng, now)
        namespaces = namespaces_for(placements)
        bindings, bound = fleet.bindings(namespaces, binding_rng)
        made_placements = make_placements(placements, namespaces, bound, placement_rng, wide)
    return Workload(
        clusters=tuple(made_clusters),
        cluster_sets=tuple(fleet.cluster_sets()),
        bindings=tuple(bindings),
        scores=tuple(scores),
        placements=tuple(made_placements),
    )


# --- YAML --------------------------------------------------------------------------------------


class _Dumper(_BaseDumper):
    """libyaml's safe dumper (several times faster than the pure-Python one: 100k clusters in
    about 20 s), without anchors and aliases, which Kubernetes tools do not expect."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _write(path: Path, objects: Iterable[KubeObject]) -> Path:
    with path.open("w", encoding="utf-8") as out:
        yaml.dump_all(
            (o.to_wire() for o in objects), out, Dumper=_Dumper, sort_keys=False, width=100
        )
    return path


def write_yaml(workload: Workload, folder: Path) -> list[Path]:
    """One multi-document YAML file per kind in `folder` (created if missing), each object as
    the API stores it (`to_wire`), plus the Namespaces kubectl needs before the namespaced
    objects (simulate skips them with a warning). Raises OSError if the folder is unwritable.

    `kubectl apply -f` drops the status of ManagedClusters and AddOnPlacementScores (a status
    subresource); `kubectl replace --subresource=status -f clusters.yaml -f scores.yaml` writes
    it afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    namespaces = (
        Namespace.model_validate({"metadata": {"name": n}}) for n in workload.namespaces()
    )
    files: list[tuple[str, Iterable[KubeObject]]] = [
        (NAMESPACES_FILE, namespaces),
        ("clusters.yaml", workload.clusters),
        ("clustersets.yaml", workload.cluster_sets),
        ("bindings.yaml", workload.bindings),
        ("scores.yaml", workload.scores),
        ("placements.yaml", workload.placements),
    ]
    with _no_gc():
        return [_write(folder / name, objects) for name, objects in files]


# --- command line ------------------------------------------------------------------------------


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative (got {value})")
    return value


def _time(text: str) -> datetime:
    try:
        return parse_time(text)
    except ValueError:  # PydanticCustomError is a ValueError
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m perf.workload",
        description=(
            "Generate a seeded, realistic OCM hub (ManagedClusters across providers, regions "
            "and zones, AddOnPlacementScores, ManagedClusterSets, bindings and a mix of "
            "Placements) as multi-document YAML, one file per kind, for `placement simulate "
            "-f DIR` or `kubectl apply -f DIR`."
        ),
    )
    parser.add_argument("--clusters", type=_count, required=True, metavar="N", help="clusters")
    parser.add_argument("--placements", type=_count, required=True, metavar="P", help="placements")
    parser.add_argument(
        "--seed", type=_count, default=0, metavar="S", help="random seed (default 0)"
    )
    parser.add_argument(
        "--now",
        type=_time,
        default=NOW,
        metavar="RFC3339",
        help="the clock that taint stamps and score expiry are relative to "
        f"(default {NOW:%Y-%m-%dT%H:%M:%SZ}; pass the same --now to placement simulate)",
    )
    parser.add_argument(
        "-o", "--output", type=Path, required=True, metavar="DIR", help="folder to write into"
    )
    return parser


def summary(workload: Workload, folder: Path, seconds: float) -> str:
    counts = Counter(o.KIND for o in workload.objects())
    kinds = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    return f"wrote {kinds}, {len(workload.namespaces())} Namespace to {folder} in {seconds:.1f}s"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.perf_counter()
    workload = generate(args.clusters, args.placements, args.seed, now=args.now)
    try:
        write_yaml(workload, args.output)
    except OSError as exc:
        print(f"error: cannot write to {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    print(summary(workload, args.output, time.perf_counter() - started))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
