"""`NodePorts`: a pod asking for host ports fits only nodes where no pod holds a conflicting one.

A host port is `(hostIP, protocol, hostPort)` of a container port with `hostPort` above 0, taken
from the containers and the sidecars (init containers with `restartPolicy: Always`), which run
as long as the pod (kube's `GetHostPorts`); an empty `hostIP` is 0.0.0.0, an empty protocol
TCP. Two host ports conflict, as kube's `HostPortInfo.CheckConflict`, when protocol and port
are the same and either address is 0.0.0.0 or both are the same address.

PreFilter computes the pod's host ports once (a pod without any skips the Filter, as kube).
The Filter never walks every pod: the plugin keeps, per `(protocol, port)`, the nodes whose
counted pods hold it (`_PortBook`), built once from the counted pods' "host-ports" subset and
then kept up to date from the index's changes (`PodIndex.changes_since`). On the real cluster
a port is answered from per-address count vectors over the rows (`_SlotCounts`, moved by the
same changes), so a port held on every node costs a vector comparison, not a walk over its
holders. A hypothetical cluster (preemption) walks the holders of the asked ports on candidate
rows and honours the snapshot's overlay: a holder that is `gone` (a victim, or below the
priority being removed on its row) frees its port, and `added` pods (nominated, or placed
gang members) hold theirs. The reason is resolvable: evicting the holder makes room.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from apis.core import Pod
from apis.pluginargs import NoArgs
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.cluster.pod_index import PodChange, PodIndex
from placement.pods.framework.interface import (
    SKIP,
    Filter,
    FilterResult,
    PodCycle,
    PodInfo,
    PreFilter,
    PreFilterResult,
    Reason,
)
from plugins.pods.helper.args import args_of
from plugins.pods.helper.snapshot_cache import frozen

__all__ = [
    "ALL_ADDRESSES",
    "ERR_REASON",
    "SUBSET",
    "HostPort",
    "NodePorts",
    "conflicts",
    "host_ports",
]

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
ALL_ADDRESSES = "0.0.0.0"
DEFAULT_PROTOCOL = "TCP"
SUBSET = "host-ports"
"""The `PodIndex.subset` of the counted pods holding at least one host port."""


class HostPort(NamedTuple):
    ip: str
    protocol: str
    port: int


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """The host ports the pod takes on its node: sidecars' first, then its containers'."""
    spec = pod.spec
    found: list[HostPort] = []
    # The API server defaults a host-network pod's hostPort to its containerPort; a manifest
    # given to `scheduler simulate` has not been through it.
    host_network = spec.host_network is True
    sidecars = [c for c in spec.init_containers or () if c.restart_policy == "Always"]
    for container in (*sidecars, *spec.containers):
        for port in container.ports or ():
            number = port.host_port or (port.container_port if host_network else 0)
            if number > 0:
                ip = port.host_ip or ALL_ADDRESSES
                found.append(HostPort(ip, port.protocol or DEFAULT_PROTOCOL, number))
    return tuple(found)


def conflicts(held_ip: str, wanted_ip: str) -> bool:
    """Whether two addresses of the same protocol and port collide."""
    return held_ip == wanted_ip or ALL_ADDRESSES in (held_ip, wanted_ip)


def _holds_ports(info: PodInfo) -> bool:
    return bool(host_ports(info.pod))


_Slot = tuple[str, int]  # (protocol, port)
_Held = dict[str, tuple[PodInfo, tuple[str, ...]]]  # pod key -> (pod, addresses of the slot)


class _Delta(NamedTuple):
    """A pod's addresses of one slot counted on (+1) or uncounted from (-1) a node."""

    slot: _Slot
    node: str
    addresses: tuple[str, ...]
    sign: int


class _PortBook:
    """The counted pods' host ports: (protocol, port) -> node -> the pods holding it there."""

    def __init__(self) -> None:
        self.source: PodIndex | None = None
        self.generation = -1
        self.slots: dict[_Slot, dict[str, _Held]] = {}

    def sync(self, counted: PodIndex) -> list[_Delta] | None:
        """Catch up with the index: the deltas applied, or None when the book was rebuilt."""
        if counted is self.source:
            changes = counted.changes_since(self.generation)
            if changes is not None:
                deltas: list[_Delta] = []
                for change in changes:
                    deltas += self._apply(change)
                self.generation = counted.generation
                return deltas
        self.slots = {}
        self.source = counted
        for key, info in counted.subset(SUBSET, _holds_ports).items():
            node = counted.node_of(key)
            if node is not None:
                self._apply(PodChange(info, node, 1))
        self.generation = counted.generation
        return None

    def _apply(self, change: PodChange) -> list[_Delta]:
        ports = host_ports(change.info.pod)
        if not ports:
            return []
        key, node = change.info.key, change.node
        by_slot: dict[_Slot, list[str]] = {}
        for ip, protocol, port in ports:
            by_slot.setdefault((protocol, port), []).append(ip)
        deltas: list[_Delta] = []
        for slot, ips in by_slot.items():
            if change.sign > 0:
                # The index uncounts a pod before counting it again: no key is here twice.
                held = self.slots.setdefault(slot, {}).setdefault(node, {})
                held[key] = (change.info, tuple(ips))
                deltas.append(_Delta(slot, node, tuple(ips), 1))
                continue
            on_nodes = self.slots.get(slot, {})
            held = on_nodes.get(node, {})
            gone = held.pop(key, None)
            if gone is None:
                continue
            deltas.append(_Delta(slot, node, gone[1], -1))
            if not held:
                del on_nodes[node]
                if not on_nodes:
                    del self.slots[slot]
        return deltas


_ANY = ""  # the `_SlotCounts` key counting every address


class _SlotCounts:
    """Per slot, per held address (and `_ANY`), how many counted pods hold it on each row of
    one node set: built on first use from the book, then moved by the book's deltas, so a
    pod asking for a port pays a vector comparison whatever the number of holders."""

    def __init__(self) -> None:
        self.names: object = None
        self.rows: dict[str, int] = {}
        self.counts: dict[_Slot, dict[str, npt.NDArray[np.int32]]] = {}

    def follow(self, deltas: list[_Delta] | None, nodes: NodeSnapshot) -> None:
        if deltas is None or nodes.names is not self.names:
            self.names = nodes.names
            self.rows = {name: row for row, name in enumerate(nodes.names)}
            self.counts = {}
            return
        for slot, node, addresses, sign in deltas:
            counts = self.counts.get(slot)
            row = self.rows.get(node)
            if counts is not None and row is not None:
                self._add(counts, row, addresses, sign, nodes.size)

    def of(self, slot: _Slot, book: _PortBook, size: int) -> dict[str, npt.NDArray[np.int32]]:
        counts = self.counts.get(slot)
        if counts is None:
            counts = self.counts[slot] = {}
            for node, held in book.slots.get(slot, {}).items():
                row = self.rows.get(node)
                if row is not None:
                    for _, addresses in held.values():
                        self._add(counts, row, addresses, 1, size)
        return counts

    @staticmethod
    def _add(
        counts: dict[str, npt.NDArray[np.int32]],
        row: int,
        addresses: tuple[str, ...],
        sign: int,
        size: int,
    ) -> None:
        for address in (_ANY, *addresses):
            column = counts.get(address)
            if column is None:
                column = counts[address] = np.zeros(size, dtype=np.int32)
            column[row] += sign


class NodePorts(PreFilter, Filter):
    name = "NodePorts"

    def __init__(self) -> None:
        self._book = _PortBook()
        self._counts = _SlotCounts()

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> NodePorts:
        args_of(NoArgs, args)  # no args: any field is refused
        return cls()

    def pre_filter(self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot) -> PreFilterResult:
        wanted = host_ports(pod.pod)
        if not wanted:
            return PreFilterResult(SKIP)
        cycle.scratch[self.name] = (pod.key, wanted)
        return PreFilterResult()

    def _wanted(self, cycle: PodCycle, pod: PodInfo) -> tuple[HostPort, ...]:
        kept = cycle.scratch.get(self.name)
        if kept is not None and kept[0] == pod.key:
            wanted: tuple[HostPort, ...] = kept[1]
            return wanted
        return host_ports(pod.pod)

    def filter(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, candidates: BoolMask
    ) -> FilterResult:
        wanted = self._wanted(cycle, pod)
        if not wanted:
            return FilterResult(candidates)
        self._counts.follow(self._book.sync(cycle.cluster.counted), nodes)
        blocked = np.zeros(nodes.size, dtype=bool)
        if nodes.overlay.empty:
            for host_port in wanted:
                self._block_held(blocked, host_port, nodes)
        else:
            for host_port in wanted:
                self._block_hypothetical(blocked, host_port, pod, nodes, candidates)
            for row, other in nodes.overlay.added:
                if not blocked[row] and other.key != pod.key:
                    blocked[row] = _collide(host_ports(other.pod), wanted)
        blocked &= candidates
        if not blocked.any():
            return FilterResult(candidates)
        return FilterResult(candidates & ~blocked, reasons=(Reason(frozen(blocked), ERR_REASON),))

    def _block_held(self, blocked: BoolMask, wanted: HostPort, nodes: NodeSnapshot) -> None:
        """Every row where a counted pod holds the port at an address colliding with it."""
        slot = (wanted.protocol, wanted.port)
        if slot not in self._book.slots:
            return
        counts = self._counts.of(slot, self._book, nodes.size)
        addresses = (_ANY,) if wanted.ip == ALL_ADDRESSES else (ALL_ADDRESSES, wanted.ip)
        for address in addresses:
            column = counts.get(address)
            if column is not None:
                blocked |= column > 0

    def _block_hypothetical(
        self,
        blocked: BoolMask,
        wanted: HostPort,
        pod: PodInfo,
        nodes: NodeSnapshot,
        candidates: BoolMask,
    ) -> None:
        """`_block_held` on a hypothetical cluster: holders the overlay removed are skipped."""
        overlay = nodes.overlay
        rows_of = self._counts.rows  # for this node set: `follow` ran first
        for node, held in self._book.slots.get((wanted.protocol, wanted.port), {}).items():
            row = rows_of.get(node)
            if row is None or blocked[row] or not candidates[row]:
                continue
            blocked[row] = any(
                key != pod.key
                and any(conflicts(h, wanted.ip) for h in ips)
                and not overlay.gone(info, row)
                for key, (info, ips) in held.items()
            )


def _collide(held: tuple[HostPort, ...], wanted: tuple[HostPort, ...]) -> bool:
    return any(
        h.protocol == w.protocol and h.port == w.port and conflicts(h.ip, w.ip)
        for h in held
        for w in wanted
    )
