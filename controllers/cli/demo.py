"""`placement demo`: an embedded hub with the samples grown to about 200 clusters, the
controller scheduling every placement, a table of what it decided (120 columns), then one live
change (the most selected cluster tainted `NoSelect`) and what moved: the placements that had
selected the cluster and dropped it, and those that never had but moved indirectly because
Balance counts every placement's decisions.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import time
from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from controllers.cli.crds import config_dir
from controllers.cli.tables import TABLE_WIDTH, fit, table

# The models, the hub, the embedded server and the client are imported where they are used:
# the command's parser imports this module, and `placement demo --help` should not pay for them.
if TYPE_CHECKING:
    from apis.cluster import ManagedCluster
    from apis.placements import Placement, PlacementDecision
    from controllers.cli.common import Subparsers
    from controllers.embedded.apiserver import EmbeddedApiServer
    from controllers.hub.manager import Manager
    from controllers.kube.gateway import Gateway

__all__ = ["SAMPLES_DIR", "add_parser", "demo_clusters", "run_demo", "what_moved"]

SAMPLES_DIR = config_dir("samples") / "hub"
TAINT_KEY = "example.com/maintenance"

# provider -> region -> zones, the samples' topology plus a few more regions.
TOPOLOGY = {
    "aws": {"us-east": ["us-east-1a", "us-east-1b"], "us-west": ["us-west-1a", "us-west-2a"]},
    "gcp": {"europe-west1": ["europe-west1-b", "europe-west1-c"], "asia-east1": ["asia-east1-a"]},
    "azure": {"eastus": ["eastus-1", "eastus-2"], "westeurope": ["westeurope-1"]},
    "alibaba": {"cn-hangzhou": ["cn-hangzhou-e"], "cn-beijing": ["cn-beijing-a"]},
}
CLOUDS = {"aws": "Amazon", "gcp": "Google", "azure": "Azure", "alibaba": "Alibaba"}


def demo_clusters(count: int = 180, seed: int = 7) -> list[ManagedCluster]:
    """`count` more clusters like the samples' (same labels, claims and sets), from a seed.
    Names continue each zone's numbering after the samples' (which stop at 3)."""
    from apis.cluster import CLUSTER_SET_LABEL, ManagedCluster

    rng = random.Random(seed)
    zones = [
        (provider, region, zone)
        for provider, regions in TOPOLOGY.items()
        for region, names in regions.items()
        for zone in names
    ]
    numbering = {zone: 3 for _, _, zone in zones}
    clusters = []
    for _ in range(count):
        provider, region, zone = rng.choice(zones)
        numbering[zone] += 1
        name = f"{provider}-{zone}-{numbering[zone]}"
        env = rng.choices(["prod", "staging", "dev"], weights=[5, 2, 3])[0]
        cpu = rng.choice([8, 16, 32, 64])
        doc: dict[str, Any] = {
            "metadata": {
                "name": name,
                "labels": {
                    "cloud": CLOUDS[provider],
                    "provider": provider,
                    "region": region,
                    "zone": zone,
                    "env": env,
                    CLUSTER_SET_LABEL: "prod" if env == "prod" else "dev",
                },
            },
            "spec": {"hubAcceptsClient": True},
            "status": {
                "capacity": {"cpu": str(cpu), "memory": f"{cpu * 4}Gi"},
                "allocatable": {
                    "cpu": f"{cpu * 1000 - rng.randrange(500, 2000)}m",
                    "memory": f"{cpu * 4 * 1024 - rng.randrange(1, 8) * 512}Mi",
                },
                "clusterClaims": [
                    {"name": "platform.open-cluster-management.io", "value": provider.upper()},
                    {"name": "region.open-cluster-management.io", "value": region},
                    {
                        "name": "kubeversion.open-cluster-management.io",
                        "value": rng.choice(["v1.29.6", "v1.30.2", "v1.31.1"]),
                    },
                    {"name": "topology.example.com/rack", "value": f"rack-{rng.randrange(1, 9)}"},
                ],
            },
        }
        clusters.append(ManagedCluster.model_validate(doc))
    return clusters


def _selected(decisions: Iterable[PlacementDecision]) -> dict[str, list[str]]:
    """Placement key -> clusters decided, over every PD of the placement."""
    out: dict[str, list[str]] = {}
    for pd in decisions:
        owner = (pd.metadata.labels or {}).get("cluster.open-cluster-management.io/placement")
        if owner and pd.status:
            out.setdefault(f"{pd.namespace}/{owner}", []).extend(
                d.cluster_name for d in pd.status.decisions
            )
    return out


def _condition(placement: Placement, kind: str) -> tuple[str, str, str] | None:
    for c in (placement.status.conditions or []) if placement.status else []:
        if c.type == kind:
            return c.status, c.reason, c.message
    return None


def _report(
    placements: list[Placement], decisions: list[PlacementDecision], max_groups: int = 4
) -> str:
    """One row per decision group (at most `max_groups` per placement) within 120 columns:
    the clusters as `count: first names (+others)`; the message of each placement that is not
    satisfied follows the table."""
    from apis.placements import PLACEMENT_MISCONFIGURED, PLACEMENT_SATISFIED, is_disabled

    by_name = {pd.key: pd for pd in decisions}
    header = ["PLACEMENT", "REASON", "GROUP", "CLUSTERS"]
    rows: list[list[str]] = []
    lists: list[list[str]] = []  # the clusters of each row, fitted once the widths are known
    notes: list[str] = []
    for p in placements:
        satisfied = _condition(p, PLACEMENT_SATISFIED)
        if is_disabled(p) or satisfied is None:
            rows.append([p.key, "SchedulingDisabled", "", ""])
            lists.append([])
            continue
        misconfigured = _condition(p, PLACEMENT_MISCONFIGURED)
        reason, message = satisfied[1], "" if satisfied[0] == "True" else satisfied[2]
        if misconfigured is not None and misconfigured[0] == "True":
            reason, message = "Misconfigured", misconfigured[2]
        if message:
            notes.append(fit(f"{p.key}: {reason}: {message}", TABLE_WIDTH))
        groups = (p.status.decision_groups or []) if p.status else []
        lines: list[tuple[str, list[str]]] = []
        for group in groups:
            label = str(group.decision_group_index)
            if group.decision_group_name:
                label += f" {group.decision_group_name}"
            clusters: list[str] = []
            for name in group.decisions or []:
                pd = by_name.get(f"{p.namespace}/{name}")
                if pd is not None and pd.status:
                    clusters.extend(d.cluster_name for d in pd.status.decisions)
            lines.append((label, clusters))
        if len(lines) > max_groups:
            rest = lines[max_groups - 1 :]
            merged = [name for _, clusters in rest for name in clusters]
            lines = [*lines[: max_groups - 1], (f"+{len(rest)} groups", merged)]
        for i, (label, clusters) in enumerate(lines or [("", [])]):
            rows.append([p.key if i == 0 else "", reason if i == 0 else "", label, ""])
            lists.append(clusters)
    used = sum(max(len(r[i]) for r in [header, *rows]) + 3 for i in range(3))
    for row, clusters in zip(rows, lists, strict=True):
        count = f"{len(clusters)}: "
        shown = fit(clusters, max(TABLE_WIDTH - used - len(count), 4))
        # `3: a,b (+1)`, or `198 clusters` when not even one name fits
        row[3] = count + shown if clusters and shown[0] != "+" else _count(len(clusters), "cluster")
    text = table(header, rows)
    return text + "".join(f"\n{note}" for note in notes) + ("\n" if notes else "")


def _uses_balance(placement: Placement) -> bool:
    """Whether the placement weighs Balance, which counts every placement's decisions."""
    from placement.scheduler import weighted_coordinates
    from plugins import DEFAULT_PROFILE, default_registry

    coordinates, _ = weighted_coordinates(placement, DEFAULT_PROFILE, default_registry())
    return any(item.plugin == "Balance" for item in coordinates)


def what_moved(
    before: dict[str, list[str]],
    after: dict[str, list[str]],
    victim: str,
    balance: Collection[str] = (),
) -> str:
    """The decisions that changed after `victim` was tainted: first the placements that had
    selected it, then those that never had but moved anyway (indirectly: `balance` names the
    placements weighing Balance, whose scores count every placement's decisions)."""
    direct: list[str] = []
    indirect: list[str] = []
    removed = added = 0
    for key in sorted(set(before) | set(after)):
        old, new = set(before.get(key, [])), set(after.get(key, []))
        gone, came = sorted(old - new), sorted(new - old)
        removed, added = removed + len(gone), added + len(came)
        if not gone and not came:
            continue
        line = f"    {key}: {' '.join([*(f'-{n}' for n in gone), *(f'+{n}' for n in came)])}"
        if victim in old:
            direct.append(line)
        else:
            indirect.append(line + ("" if key in balance else " (does not weigh Balance)"))
    had = sum(1 for clusters in before.values() if victim in clusters)
    moved = len(direct) + len(indirect)
    out = [
        f"what moved: {_count(moved, 'placement')}, {_count(removed, 'cluster')} out and "
        f"{added} in",
        f"  {_count(had, 'placement')} had selected {victim}; {len(direct)} dropped it:",
        *direct,
    ]
    if indirect:
        out += [
            f"  {_count(len(indirect), 'placement')} never selected {victim} but moved "
            "indirectly: Balance scores a cluster",
            "  by how many placements selected it, and the moves above changed those counts:",
            *indirect,
        ]
    return "\n".join(out) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


async def run_demo(out: TextIO = sys.stdout, *, timeout: float = 60.0) -> int:
    """Run the demo; 0 when every placement got scheduled and the change was followed."""
    from controllers.embedded.apiserver import EmbeddedApiServer, SnapshotError
    from controllers.hub.manager import Manager, ManagerOptions
    from controllers.kube.config import ClusterAccess
    from controllers.kube.gateway import Gateway

    logging.getLogger().setLevel(logging.WARNING)
    server = EmbeddedApiServer()
    try:
        server.load(SAMPLES_DIR)
        generated = server.add(demo_clusters())
    except SnapshotError as exc:
        print(f"error: samples: {exc}", file=sys.stderr)
        return 1
    url = await server.start()
    gateway = await Gateway.connect(ClusterAccess(url=url))
    manager = Manager(gateway, ManagerOptions(workers=4, http_addr=None))
    try:
        return await _show(out, server, gateway, manager, timeout, generated)
    except TimeoutError:
        print(f"error: the controller did not settle within {timeout:.0f} s", file=sys.stderr)
        return 1
    finally:
        await manager.stop()
        await gateway.close()
        await server.stop()


async def _show(
    out: TextIO,
    server: EmbeddedApiServer,
    gateway: Gateway,
    manager: Manager,
    timeout: float,
    generated: int,
) -> int:
    from apis.cluster import ManagedCluster
    from apis.placements import Placement, PlacementDecision

    clusters = (await gateway.list(ManagedCluster)).items
    placements = (await gateway.list(Placement)).items
    print(
        f"embedded hub on {server.url}: {len(clusters)} clusters, "
        f"{len(placements)} placements (config/samples/hub + {generated} generated clusters)",
        file=out,
    )
    started = time.perf_counter()
    await manager.start()
    await manager.wait_idle(timeout)
    placements = (await gateway.list(Placement)).items
    decisions = (await gateway.list(PlacementDecision)).items
    print(
        f"controller: every placement scheduled in {time.perf_counter() - started:.2f} s "
        f"({len(decisions)} PlacementDecisions)\n",
        file=out,
    )
    print(_report(placements, decisions), end="", file=out)

    before = _selected(decisions)
    counts: dict[str, int] = {}
    for chosen in before.values():
        for name in chosen:
            counts[name] = counts.get(name, 0) + 1
    victim = max(sorted(counts), key=lambda n: counts[n])
    cluster = next(c for c in clusters if c.name == victim)
    taints = [t.to_wire() for t in cluster.spec.taints or []]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    taints.append({"key": TAINT_KEY, "value": "demo", "effect": "NoSelect", "timeAdded": now})
    print(
        f"\nlive change: taint {victim} (selected by {counts[victim]} of {len(placements)} "
        f"placements) with {TAINT_KEY}=demo:NoSelect",
        file=out,
    )
    started = time.perf_counter()
    await gateway.merge_patch(ManagedCluster, victim, {"spec": {"taints": taints}})

    async def moved() -> dict[str, list[str]]:
        while True:
            now_selected = _selected((await gateway.list(PlacementDecision)).items)
            if not any(victim in v for v in now_selected.values()):
                return now_selected
            await asyncio.sleep(0.02)

    await asyncio.wait_for(moved(), timeout)
    elapsed = time.perf_counter() - started
    print(f"the tainted cluster left every decision {elapsed:.2f} s after the taint\n", file=out)
    # Other placements may move too (Balance counts change): let them settle, then compare.
    await manager.wait_idle(timeout)
    after = _selected((await gateway.list(PlacementDecision)).items)
    balance = {p.key for p in placements if _uses_balance(p)}
    print(what_moved(before, after, victim, balance), end="", file=out)
    return 0


def add_parser(subparsers: Subparsers) -> None:
    """Add `demo` to the command's subparsers."""
    demo = subparsers.add_parser(
        "demo",
        help="embedded hub + controller + sample fleet: show the decisions, then a live change",
        description=(
            "Start an embedded hub with config/samples/hub grown to 200 clusters, run the "
            "controller until every placement is scheduled, print the decisions per group, "
            "taint the most selected cluster and show the decisions that moved. Exit 0."
        ),
    )
    demo.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for each step (default 60)"
    )
    demo.add_argument(
        "--local",
        action="store_true",
        help="instead: the pod scheduler binding a few workloads' pods on a local embedded "
        "cluster (mixed on-demand/spot nodes, GPU nodes of a DRA driver and a GPU gang), then "
        "a table of the pods and one of the GPUs each gang member was allocated",
    )
    demo.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.local:
        from controllers.cli.demo_local import run_local_demo

        return asyncio.run(run_local_demo(timeout=min(args.timeout, 20.0)))
    return asyncio.run(run_demo(timeout=args.timeout))


def main() -> int:
    return asyncio.run(run_demo())


if __name__ == "__main__":
    sys.exit(main())
