"""An embedded hub with controllers attached, on an injected clock, for controller tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from apis.cluster import ManagedCluster
from apis.placements import PLACEMENT_LABEL, Placement, PlacementDecision
from controllers.embedded import EmbeddedApiServer
from controllers.hub.manager import Manager, ManagerOptions
from controllers.kube.config import ClusterAccess
from controllers.kube.gateway import Gateway
from controllers.runtime.queue import ManualClock
from tests.controllers.embedded.hub import ensure_namespaces

START = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


@dataclass
class Hub:
    """The server, a gateway for the test's own reads and writes, and the clock."""

    server: EmbeddedApiServer
    gateway: Gateway
    clock: ManualClock
    managers: list[Manager] = field(default_factory=list)

    def wall(self) -> datetime:
        return START + timedelta(seconds=self.clock.now())

    async def manager(self, **options: Any) -> Manager:
        """A started controller with its own gateway (as a separate replica would have)."""
        options.setdefault("workers", 1)
        options.setdefault("http_addr", None)
        gateway = await Gateway.connect(ClusterAccess(url=self.server.url), backoff=0.01)
        manager = Manager(gateway, ManagerOptions(**options), clock=self.clock, wall=self.wall)
        self.managers.append(manager)
        await manager.start(sync_timeout=10)
        return manager

    async def stop(self, manager: Manager) -> None:
        await manager.stop()
        await manager.gateway.close()
        self.managers.remove(manager)

    async def decided(self, namespace: str, placement: str) -> list[str]:
        """Clusters in the placement's PlacementDecisions on the server, by PD name."""
        pds = await self.gateway.list(
            PlacementDecision, namespace, label_selector=f"{PLACEMENT_LABEL}={placement}"
        )
        return [
            d.cluster_name
            for pd in sorted(pds.items, key=lambda p: p.name)
            for d in (pd.status.decisions if pd.status else [])
        ]

    async def placement(self, namespace: str, name: str) -> Placement:
        return await self.gateway.get(Placement, name, namespace)

    async def condition(self, namespace: str, name: str, kind: str) -> tuple[str, str, str]:
        placement = await self.placement(namespace, name)
        for c in (placement.status.conditions or []) if placement.status else []:
            if c.type == kind:
                return c.status, c.reason, c.message
        return "", "", ""

    async def relabel(self, cluster: str, labels: dict[str, str | None]) -> ManagedCluster:
        return await self.gateway.merge_patch(
            ManagedCluster, cluster, {"metadata": {"labels": labels}}
        )


@asynccontextmanager
async def hub(namespaces: Iterable[str] = ()) -> AsyncIterator[Hub]:
    """The hub, with `namespaces` created besides the cluster's own (`default`, ...)."""
    server = EmbeddedApiServer(bookmark_interval=0.2)
    await server.start()
    gateway = await Gateway.connect(ClusterAccess(url=server.url), backoff=0.01)
    state = Hub(server, gateway, ManualClock(start=0.0))
    try:
        await ensure_namespaces(gateway, namespaces)
        yield state
    finally:
        for manager in list(state.managers):
            await state.stop(manager)
        await gateway.close()
        await server.stop()
