"""The controller benchmarks' hub in the shape of OCM's own placement benchmark
(`test/benchmark/placement` in open-cluster-management-io/ocm) at our sizes, and the small helpers a
run needs: what the server stored, waiting until the controller is idle, the decisions on the
server, the process's peak memory. `perf.controller_run` runs controllers against it.

Every placement picks `numberOfClusters: 10` among the clusters labelled `pool=a` (half of
them), Additive mode with Balance and Steady (the defaults) + ResourceAllocatableCPU (weight 1) +
AddOn `demo/demo` (weight 1); every cluster has an AddOnPlacementScore valid for 1,000 minutes;
one `global` set (every cluster) bound in each of the placements' namespaces. Objects are stored
directly (`EmbeddedApiServer.add`).
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from apis.meta import KubeObject
from apis.placements import PLACEMENT_LABEL, PlacementDecision
from controllers.embedded import EmbeddedApiServer
from controllers.embedded.faults import Faults
from controllers.hub.manager import Manager
from controllers.kube.gateway import Gateway
from placement.testing import (
    addon,
    binding,
    builtin,
    cluster,
    cluster_set,
    placement,
    predicate,
    score,
)

__all__ = [
    "POOL",
    "CountingFaults",
    "Hub",
    "Shape",
    "cluster_name",
    "decisions_on_server",
    "hub_objects",
    "peak_rss_mib",
    "placement_name",
    "requests_by_resource",
    "running_hub",
    "stored_writes",
    "until_idle",
]

POOL = "pool"  # half the clusters have pool=a, the placements' predicate
POLL_SECONDS = 0.002  # how often the waits look at the queue


@dataclass(frozen=True)
class Shape:
    """One benchmark hub: sizes and the controller's workers."""

    clusters: int
    placements: int
    workers: int = 4
    namespaces: int = 10

    def namespace(self, i: int) -> str:
        return f"bench-{i % self.namespaces}"


def cluster_name(i: int) -> str:
    return f"cluster-{i:06d}"


def placement_name(i: int) -> str:
    return f"placement-{i:05d}"


def hub_objects(shape: Shape, now: datetime) -> Iterator[KubeObject]:
    """The hub's objects, generated one at a time (so that they need not all be alive at once)."""
    until = now + timedelta(minutes=1000)
    for i in range(shape.clusters):
        name = cluster_name(i)
        yield cluster(
            name,
            labels={POOL: "a" if i % 2 == 0 else "b", "region": f"r{i % 10}"},
            cpu=str(8 + (i * 13) % 57),
            memory=f"{32 + (i * 7) % 97}Gi",
        )
        yield score(name, "demo", {"demo": (i * 7919) % 201 - 100}, valid_until=until)
    yield cluster_set("global", {})
    for n in range(min(shape.namespaces, shape.placements)):
        yield binding(shape.namespace(n), "global")
    policy = {
        "mode": "Additive",
        "configurations": [builtin("ResourceAllocatableCPU", 1), addon("demo", "demo", 1)],
    }
    for i in range(shape.placements):
        yield placement(
            shape.namespace(i),
            placement_name(i),
            numberOfClusters=10,
            predicates=[predicate(labels={POOL: "a"})],
            prioritizerPolicy=policy,
        )


@dataclass
class CountingFaults(Faults):
    """No faults; counts the server's requests by verb (every request asks for its fault)."""

    requests: Counter[str] = field(default_factory=Counter)

    def error_for(self, verb: str) -> int | None:
        self.requests[verb] += 1
        return super().error_for(verb)


def peak_rss_mib() -> float:
    """This process's peak resident set size: `VmHWM`, since `ru_maxrss` survives exec on Linux
    (a child of a big pytest process would report its parent's peak)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Hub:
    """A server holding the shape's objects (in this process, or `url` of another one)."""

    shape: Shape
    url: str
    server: EmbeddedApiServer | None = None
    faults: CountingFaults | None = None
    loaded_s: float = 0.0


@contextlib.asynccontextmanager
async def running_hub(
    shape: Shape, objects: Iterable[KubeObject] | None = None, writes_per_placement: int = 10
) -> AsyncIterator[Hub]:
    """An embedded server in this process with the shape's objects (or `objects`) stored."""
    faults = CountingFaults()
    # History enough for every stored object and every write of the run: informers resume
    # watches from the list's resourceVersion, which must not be compacted away, and
    # `stored_writes` counts from it.
    history = 2 * shape.clusters + writes_per_placement * shape.placements + 10_000
    server = EmbeddedApiServer(faults=faults, history=history)
    began = time.perf_counter()
    server.add(hub_objects(shape, datetime.now(UTC)) if objects is None else objects)
    loaded = time.perf_counter() - began
    await server.start()
    try:
        yield Hub(shape, server.url, server, faults, loaded)
    finally:
        await server.stop()


def stored_writes(server: EmbeddedApiServer, since_rv: int) -> dict[str, int]:
    """What the server stored after `since_rv`: `Kind VERB` -> count."""
    # An Event is served under two groups (core and events.k8s.io): the history holds one
    # entry per group for each write, at the same resourceVersion.
    written = {
        (event.rv, event.resource.kind): event.type
        for event in server.store.history
        if event.rv > since_rv
    }
    counts = Counter(f"{kind} {verb}" for (_, kind), verb in written.items())
    return dict(sorted(counts.items()))


def requests_by_resource(server: EmbeddedApiServer) -> dict[str, int]:
    """The requests the server served since its audit was last cleared: `resource[/sub] verb`
    -> count, whatever the namespace."""
    counts: Counter[str] = Counter()
    for entry, n in server.audit.items():
        counts[f"{entry.rule_resource} {entry.verb}"] += n
    return dict(sorted(counts.items()))


async def until_idle(manager: Manager, keys: set[str] | None = None) -> None:
    """Until no key is queued or in flight (and, with `keys`, all of them have run)."""
    seen: set[str] = set()
    while True:
        if keys is not None and not keys <= seen:
            seen.update(manager.reconciler.history)
        elif not manager.busy:
            return
        await asyncio.sleep(POLL_SECONDS)


async def decisions_on_server(gateway: Gateway) -> dict[str, list[str]]:
    """`namespace/placement` -> its decided clusters, from the server."""
    out: dict[str, list[str]] = {}
    for pd in (await gateway.list(PlacementDecision)).items:
        owner = (pd.metadata.labels or {}).get(PLACEMENT_LABEL, "")
        clusters = [d.cluster_name for d in (pd.status.decisions if pd.status else [])]
        out.setdefault(f"{pd.namespace}/{owner}", []).extend(clusters)
    return out
