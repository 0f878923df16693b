"""A tiny add-on manager: roll a ConfigMap out progressively to the clusters a Placement selects.

    python -m ocm_placement.examples.progressive_configmap --embedded [--dry-run]
    python -m ocm_placement.examples.progressive_configmap --kubeconfig hub.yaml \\
        --namespace addons --placement config-rollout

With `--embedded` it starts an embedded hub, creates 12 ManagedClusters, a cluster set bound to
the namespace `addons` and the Placement `config-rollout` (decision groups of 25%), and runs the
placement controller until the Placement is decided. Then, against that hub or a real one, it
follows the Placement's decisions with a `DecisionTracker` and rolls the ConfigMap
`<name>` out into each selected cluster's namespace on the hub (the stand-in for a ManifestWork)
with OCM's `Progressive` strategy: the first decision group as a mandatory canary, then
`--max-concurrency` clusters at a time. A cluster counts as Succeeded once its ConfigMap is
written. `--dry-run` writes nothing and prints the same rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apis.cluster import ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding
from apis.core import ConfigMap, Namespace
from apis.placements import Placement
from apis.rollout import RolloutStrategy
from controllers.consumer import DecisionTracker
from controllers.kube.config import ClusterAccess, ClusterAccessError
from controllers.kube.errors import AlreadyExistsError, ApiError, NotFoundError
from controllers.kube.gateway import Gateway
from placement.rollout import ClusterRolloutStatus, RolloutStatus, rollout

__all__ = ["main", "roll_out"]

NAMESPACE, PLACEMENT, CLUSTERS = "addons", "config-rollout", 12


def _hub_objects() -> list[Any]:
    """The example fleet: 12 clusters, the `global` set bound to `addons`, the Placement."""
    objects: list[Any] = [Namespace.model_validate({"metadata": {"name": NAMESPACE}})]
    for i in range(1, CLUSTERS + 1):
        name = f"cluster-{i:02d}"
        objects.append(Namespace.model_validate({"metadata": {"name": name}}))
        objects.append(
            ManagedCluster.model_validate(
                {"metadata": {"name": name, "labels": {"env": "prod"}}, "spec": {}}
            )
        )
    selector = {"selectorType": "LabelSelector", "labelSelector": {}}
    objects.append(
        ManagedClusterSet.model_validate(
            {"metadata": {"name": "global"}, "spec": {"clusterSelector": selector}}
        )
    )
    objects.append(
        ManagedClusterSetBinding.model_validate(
            {
                "metadata": {"name": "global", "namespace": NAMESPACE},
                "spec": {"clusterSet": "global"},
            }
        )
    )
    strategy = {"groupStrategy": {"clustersPerDecisionGroup": "25%"}}
    objects.append(
        Placement.model_validate(
            {
                "metadata": {"name": PLACEMENT, "namespace": NAMESPACE},
                "spec": {"decisionStrategy": strategy},
            }
        )
    )
    return objects


@asynccontextmanager
async def embedded_hub() -> AsyncIterator[str]:
    """An embedded hub with the example fleet and the placement controller running."""
    from controllers.embedded import EmbeddedApiServer
    from controllers.hub.manager import Manager, ManagerOptions

    server = EmbeddedApiServer()
    url = await server.start()
    gateway = await Gateway.connect(ClusterAccess(url=url))
    manager = Manager(gateway, ManagerOptions(workers=2, http_addr=None))
    try:
        for obj in _hub_objects():
            await gateway.create(obj)
        await manager.start(sync_timeout=30)
        await manager.wait_idle()
        yield url
    finally:
        await manager.stop()
        await gateway.close()
        await server.stop()


async def _apply(gateway: Gateway, cluster: str, name: str, data: dict[str, str]) -> None:
    cm = ConfigMap.model_validate({"metadata": {"name": name, "namespace": cluster}, "data": data})
    try:
        await gateway.create(cm)
    except AlreadyExistsError:
        await gateway.merge_patch(ConfigMap, name, {"data": data}, cluster)


async def roll_out(
    gateway: Gateway,
    namespace: str,
    placement: str,
    strategy: RolloutStrategy,
    *,
    name: str = "example-config",
    dry_run: bool = False,
    out: Any = sys.stdout,
) -> list[list[str]]:
    """Roll the ConfigMap out round by round; returns the clusters of each round."""
    rounds: list[list[str]] = []
    statuses: dict[str, ClusterRolloutStatus] = {}
    async with DecisionTracker(gateway, namespace, placement, settle=0.2) as tracker:
        try:
            async with asyncio.timeout(30):
                while not tracker.clusters():
                    await tracker.next_change()
        except TimeoutError:
            print(f"placement {namespace}/{placement} selects no cluster", file=out)
            return rounds
        groups = tracker.groups()
        described = ", ".join(
            f"group {k.index}{f' ({k.name})' if k.name else ''}: {len(v)}"
            for k, v in sorted(groups.items())
        )
        print(
            f"placement {namespace}/{placement}: {len(tracker.clusters())} clusters; {described}",
            file=out,
        )
        while True:
            now = datetime.now(UTC)
            plan = rollout(strategy, tracker.groups(), list(statuses.values()), now)
            todo = [s for s in plan.to_rollout if s.status is RolloutStatus.TO_APPLY]
            if not todo:
                break
            rounds.append([s.cluster for s in todo])
            where = ", ".join(
                f"{s.cluster} (group {s.group.index if s.group else 0})" for s in todo
            )
            verb = "would apply" if dry_run else "applied"
            print(f"round {len(rounds)}: {verb} ConfigMap {name} to {where}", file=out)
            for s in todo:
                if not dry_run:
                    await _apply(gateway, s.cluster, name, {"round": str(len(rounds))})
                statuses[s.cluster] = ClusterRolloutStatus(
                    s.cluster, RolloutStatus.SUCCEEDED, s.group, last_transition=now
                )
    total = sum(len(r) for r in rounds)
    print(f"rolled out to {total} clusters in {len(rounds)} rounds", file=out)
    return rounds


def _strategy(args: argparse.Namespace) -> RolloutStrategy:
    concurrency: int | str = args.max_concurrency
    if isinstance(concurrency, str) and not concurrency.endswith("%"):
        concurrency = int(concurrency)
    return RolloutStrategy.model_validate(
        {
            "type": "Progressive",
            "progressive": {
                "mandatoryDecisionGroups": [{"groupIndex": 0}],
                "maxConcurrency": concurrency,
            },
        }
    )


async def _main(args: argparse.Namespace) -> int:
    strategy = _strategy(args)
    if args.embedded:
        async with embedded_hub() as url:
            gateway = await Gateway.connect(ClusterAccess(url=url))
            try:
                await roll_out(gateway, NAMESPACE, PLACEMENT, strategy, dry_run=args.dry_run)
            finally:
                await gateway.close()
        return 0
    access = ClusterAccess(kubeconfig=args.kubeconfig, context=args.context)
    try:
        gateway = await Gateway.connect(access)
    except ClusterAccessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        await gateway.get(Placement, args.placement, args.namespace)
    except ApiError as exc:
        missing = isinstance(exc, NotFoundError)
        why = "not found" if missing else f"cannot be read: {exc}"
        print(f"error: placement {args.namespace}/{args.placement} {why}", file=sys.stderr)
        await gateway.close()
        return 1
    try:
        await roll_out(gateway, args.namespace, args.placement, strategy, dry_run=args.dry_run)
    finally:
        await gateway.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ocm_placement.examples.progressive_configmap",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("--embedded", action="store_true", help="an embedded hub with a fleet")
    parser.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig of the hub (without --embedded)"
    )
    parser.add_argument("--context", help="kubeconfig context")
    parser.add_argument("--namespace", default=NAMESPACE, help=f"placement namespace ({NAMESPACE})")
    parser.add_argument("--placement", default=PLACEMENT, help=f"placement name ({PLACEMENT})")
    parser.add_argument(
        "--max-concurrency", default="25%", help="clusters per round after the canary group (25%%)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the rounds, write nothing")
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
