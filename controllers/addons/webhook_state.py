"""What the spot webhook knows of the cluster, kept by informers so that an admission makes no
API call in the steady state: ReplicaSet owners, Deployments and StatefulSets (replicas and
annotations), and the on-demand pods alive, fed into the ledger.

The pod informer watches only pods labelled on-demand (a label selector): they are the ones
the count reads, and a cluster's other pods cost neither memory nor events. A pod relabelled
away from on-demand leaves the watch as a deletion, as the API server sends it.

`LeaseReservations` is the shared half of the ledger for several replicas: one Lease per
workload, in its namespace, whose annotation holds the reservations, written with its
resourceVersion (a compare-and-swap; a 409 means read again). The Lease is owned by the
workload, so it goes when the workload goes.

The workload kinds are read with the apps/v1 models of `apis.workloads` (the ones the embedded
API server serves); the informers keep only what the rules read of each object (owner reference,
or replicas, annotations and uid), not the objects.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from apis.core import Lease, Pod
from apis.meta import KubeObject, ObjectMeta, OwnerReference
from apis.workloads import Deployment, ReplicaSet, StatefulSet
from controllers.kube.errors import ConflictError, NotFoundError
from controllers.kube.gateway import Gateway
from controllers.runtime.cache import Informer, Keep
from placement.spot.ledger import Ledger, decode, encode
from placement.spot.mutation import (
    RESERVATION,
    Capacity,
    MutationConfig,
    Workload,
    WorkloadRef,
    is_on_demand_alive,
    workload_of,
)

__all__ = [
    "RESERVATIONS_ANNOTATION",
    "WATCHED_WORKLOADS",
    "ClusterView",
    "LeaseReservations",
    "WorkloadCache",
    "WorkloadSource",
    "lease_name",
]

log = logging.getLogger(__name__)

RESERVATIONS_ANNOTATION = "distributed-scheduling/reservations"


WATCHED_WORKLOADS: tuple[type[KubeObject], ...] = (ReplicaSet, Deployment, StatefulSet)
"""The apps/v1 kinds the webhook lists and watches (its RBAC grants exactly these)."""

AppsWorkload = Deployment | StatefulSet


def _replicas(obj: AppsWorkload) -> int:
    replicas = obj.spec.replicas
    return 1 if replicas is None else replicas  # the API server's default


def _workload(obj: AppsWorkload) -> tuple[str | None, Workload]:
    ref = WorkloadRef(obj.KIND, obj.namespace, obj.name)
    meta = obj.metadata
    workload = Workload(ref, _replicas(obj), dict(meta.annotations or {}), meta.uid or "")
    return meta.resource_version, workload


def _owner(obj: ReplicaSet) -> tuple[str | None, dict[str, Any] | None]:
    owners = obj.metadata.owner_references or []
    chosen = next((o for o in owners if o.controller), owners[0] if owners else None)
    return obj.metadata.resource_version, chosen.to_wire() if chosen is not None else None


def _version(item: tuple[str | None, Any]) -> str | None:
    return item[0]


def pod_document(pod: Pod) -> dict[str, Any]:
    """The parts of a pod the rules read, as the wire document they are written for."""
    meta = pod.metadata
    doc_meta: dict[str, Any] = {
        "name": meta.name,
        "namespace": meta.namespace,
        "labels": dict(meta.labels or {}),
        "annotations": dict(meta.annotations or {}),
        "ownerReferences": [o.to_wire() for o in meta.owner_references or []],
    }
    if meta.deletion_timestamp is not None:
        doc_meta["deletionTimestamp"] = meta.deletion_timestamp.isoformat()
    return {"metadata": doc_meta, "status": {"phase": pod.status.phase if pod.status else None}}


class WorkloadSource(Protocol):
    """Where an admission finds a pod's workload (the informers, or a fixed set in tests)."""

    def replica_set_owner(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def workload(self, ref: WorkloadRef) -> Workload | None: ...


class WorkloadCache:
    """Informers of ReplicaSets (their owners), Deployments and StatefulSets."""

    def __init__(self, gateway: Gateway) -> None:
        self.replica_sets: Informer[ReplicaSet, tuple[str | None, dict[str, Any] | None]]
        self.replica_sets = Informer(
            gateway, ReplicaSet, keep=Keep(_owner, _version), retry_delay=0.05
        )
        self.deployments: Informer[Deployment, tuple[str | None, Workload]]
        self.deployments = Informer(
            gateway, Deployment, keep=Keep(_workload, _version), retry_delay=0.05
        )
        self.statefulsets: Informer[StatefulSet, tuple[str | None, Workload]]
        self.statefulsets = Informer(
            gateway, StatefulSet, keep=Keep(_workload, _version), retry_delay=0.05
        )
        self.informers: tuple[Informer[Any, Any], ...] = (
            self.replica_sets,
            self.deployments,
            self.statefulsets,
        )

    def replica_set_owner(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        item = self.replica_sets.get(f"{namespace}/{name}")
        return item[1] if item is not None else None

    def workload(self, ref: WorkloadRef) -> Workload | None:
        informer = self.deployments if ref.kind == "Deployment" else self.statefulsets
        item = informer.get(f"{ref.namespace}/{ref.name}")
        return item[1] if item is not None else None


class ClusterView:
    """The informers of the webhook and the ledger they feed. `workloads` defaults to the
    informers of `WorkloadCache`."""

    def __init__(
        self,
        gateway: Gateway,
        ledger: Ledger,
        config: MutationConfig,
        clock: Callable[[], float],
        workloads: WorkloadSource | None = None,
    ) -> None:
        self.ledger = ledger
        self.config = config
        self.clock = clock
        self.gateway = gateway
        self._queued: dict[str, asyncio.Future[int]] = {}
        self._read_locks: dict[str, asyncio.Lock] = {}
        self._reading: set[asyncio.Future[None]] = set()
        cache = None
        if workloads is None:
            cache = workloads = WorkloadCache(gateway)
        self.workloads: WorkloadSource = workloads
        self.pods = Informer(
            gateway,
            Pod,
            label_selector=f"{config.desired_label}={Capacity.ON_DEMAND.value}",
            on_add=self._pod_seen,
            on_update=lambda _old, new: self._pod_seen(new),
            on_delete=self._pod_gone,
            retry_delay=0.05,
        )
        # Workloads first, so the first pods resolve to them.
        self.informers: tuple[Informer[Any, Any], ...] = (
            *(cache.informers if cache is not None else ()),
            self.pods,
        )

    def replica_set_owner(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.workloads.replica_set_owner(namespace, name)

    def workload(self, ref: WorkloadRef) -> Workload | None:
        return self.workloads.workload(ref)

    # --- pods into the ledger ------------------------------------------------------------------

    def _pod_seen(self, pod: Pod) -> None:
        doc = pod_document(pod)
        ref = workload_of(doc, self.replica_set_owner)
        token = doc["metadata"]["annotations"].get(RESERVATION)
        alive = is_on_demand_alive(doc, self.config)
        key = ref.key if ref is not None else None
        self.ledger.observe(pod.key, key, alive, token, self.clock())

    def _pod_gone(self, pod: Pod) -> None:
        self.ledger.forget(pod.key, self.clock())

    async def recount(self, ref: WorkloadRef) -> int:
        """Check a full count against the API server before a pod is sent to spot: a
        consistent list of the namespace's on-demand pods, and the ledger forgets the pods of
        `ref` it counted before the list was sent that the list no longer holds (a deletion the
        watch has not delivered yet). Returns how many places that freed.

        Reads are grouped per workload: one list at a time, and every admission that arrives
        while one is on the wire waits for the next, which answers them all. Each admission is
        thus answered by a list sent after it arrived (so after any deletion its pod replaces),
        and a burst of spot admissions costs a list per round trip, not one each."""
        waiter = self._queued.get(ref.key)
        if waiter is None:
            waiter = self._queued[ref.key] = asyncio.get_running_loop().create_future()
            task = asyncio.ensure_future(self._read(ref, waiter))
            self._reading.add(task)
            task.add_done_callback(self._reading.discard)
        return await asyncio.shield(waiter)

    async def _read(self, ref: WorkloadRef, waiter: asyncio.Future[int]) -> None:
        async with self._read_locks.setdefault(ref.key, asyncio.Lock()):
            if self._queued.get(ref.key) is waiter:
                del self._queued[ref.key]  # later arrivals wait for the next list
            try:
                waiter.set_result(await self._confirm(ref))
            except Exception as exc:  # every waiter gets the failure, none hangs
                waiter.set_exception(exc)
                waiter.exception()  # retrieved, should every waiter have gone meanwhile

    async def _confirm(self, ref: WorkloadRef) -> int:
        before = self.ledger.alive(ref.key)
        if not before:
            return 0
        selector = f"{self.config.desired_label}={Capacity.ON_DEMAND.value}"
        listed = await self.gateway.list(Pod, ref.namespace, label_selector=selector)
        alive = set()
        for pod in listed.items:
            doc = pod_document(pod)
            owner = workload_of(doc, self.replica_set_owner)
            if owner is not None and owner.key == ref.key and is_on_demand_alive(doc, self.config):
                alive.add(pod.key)
        return self.ledger.confirm(ref.key, before, alive, self.clock())

    # --- running -------------------------------------------------------------------------------

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    async def wait_synced(self, timeout: float | None = None) -> None:
        for informer in self.informers:
            await informer.wait_synced(timeout)

    async def synced_unless(self, stop: asyncio.Event) -> bool:
        """Wait for the informers' first lists (True) or `stop` (False), whichever first."""
        synced = asyncio.ensure_future(self.wait_synced())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({synced, stopping}, return_when=asyncio.FIRST_COMPLETED)
        for task in (synced, stopping):
            task.cancel()
        return synced.done() and not synced.cancelled() and synced.exception() is None

    @property
    def synced(self) -> bool:
        return all(informer.synced for informer in self.informers)

    async def stop(self) -> None:
        for informer in self.informers:
            await informer.stop()


def lease_name(ref: WorkloadRef) -> str:
    """`spot-<kind>-<name>`, a DNS subdomain; long names end in a hash so two never meet."""
    name = f"spot-{ref.kind.lower()}-{ref.name}"
    if len(name) <= 253:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{name[:236]}-{digest}"


class LeaseReservations:
    """The shared reservations of each workload, in a Lease, read and written through the API:
    `read` gives (reservations, resourceVersion or None when there is no Lease yet); `write`
    returns False on a conflict (another replica wrote first: read again)."""

    def __init__(self, gateway: Gateway, identity: str) -> None:
        self.gateway = gateway
        self.identity = identity
        self.conflicts = 0
        self.writes = 0

    async def read(self, ref: WorkloadRef) -> tuple[dict[str, float], str | None]:
        try:
            lease = await self.gateway.get(Lease, lease_name(ref), ref.namespace)
        except NotFoundError:
            return {}, None
        text = (lease.metadata.annotations or {}).get(RESERVATIONS_ANNOTATION)
        return decode(text), lease.metadata.resource_version or ""

    async def write(
        self, workload: Workload, shared: Mapping[str, float], version: str | None
    ) -> bool:
        ref = workload.ref
        annotations = {RESERVATIONS_ANNOTATION: encode(shared)}
        meta = ObjectMeta(name=lease_name(ref), namespace=ref.namespace, annotations=annotations)
        if workload.uid:
            meta.owner_references = [
                OwnerReference(
                    api_version="apps/v1", kind=ref.kind, name=ref.name, uid=workload.uid
                )
            ]
        lease = Lease(metadata=meta)
        lease.spec.holder_identity = self.identity
        try:
            if version is None:
                await self.gateway.create(lease)
            else:
                meta.resource_version = version
                await self.gateway.replace(lease)
        except ConflictError:  # AlreadyExistsError too: another replica created it first
            self.conflicts += 1
            return False
        self.writes += 1
        return True
