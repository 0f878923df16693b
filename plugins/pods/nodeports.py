"""`NodePorts`: a pod asking for host ports fits only nodes where no pod holds a conflicting one.

A host port is `(hostIP, protocol, hostPort)` of a container port with `hostPort` above 0, taken
from the containers and the sidecars (init containers with `restartPolicy: Always`), which run
as long as the pod (kube's `GetHostPorts`); an empty `hostIP` is 0.0.0.0, an empty protocol
TCP. Two host ports conflict, as kube's `HostPortInfo.CheckConflict`, when protocol and port
are the same and either address is 0.0.0.0 or both are the same address.

PreFilter computes the pod's host ports once (a pod without any skips the Filter, as kube).
The Filter never walks every pod: the plugin keeps, per `(protocol, port)`, the nodes whose
counted pods hold it, built once from the counted pods' "host-ports" subset and then kept up
to date from the index's changes (`PodIndex.changes_since`), so a cycle looks only at the
holders of the ports the pod asks for, on candidate rows. A hypothetical cluster (preemption)
is honoured through the snapshot's overlay: a holder that is `gone` (a victim, or below the
priority being removed on its row) frees its port, and `added` pods (nominated, or placed
gang members) hold theirs. The reason is resolvable: evicting the holder makes room.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from apis.core import Pod
from apis.pluginargs import NoArgs
from placement.arrays import BoolMask
from placement.pods.framework import (
    SKIP,
    Filter,
    FilterResult,
    PodCycle,
    PodInfo,
    PreFilter,
    PreFilterResult,
    Reason,
)
from placement.pods.nodes import NodeSnapshot
from placement.pods.pod_index import PodChange, PodIndex
from plugins.pods._shared import args_of, frozen

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
    sidecars = [c for c in spec.init_containers or () if c.restart_policy == "Always"]
    for container in (*sidecars, *spec.containers):
        for port in container.ports or ():
            if port.host_port is not None and port.host_port > 0:
                ip = port.host_ip or ALL_ADDRESSES
                found.append(HostPort(ip, port.protocol or DEFAULT_PROTOCOL, port.host_port))
    return tuple(found)


def conflicts(held_ip: str, wanted_ip: str) -> bool:
    """Whether two addresses of the same protocol and port collide."""
    return held_ip == wanted_ip or ALL_ADDRESSES in (held_ip, wanted_ip)


def _holds_ports(info: PodInfo) -> bool:
    return bool(host_ports(info.pod))


_Slot = tuple[str, int]  # (protocol, port)
_Held = dict[str, tuple[PodInfo, tuple[str, ...]]]  # pod key -> (pod, addresses of the slot)


class _PortBook:
    """The counted pods' host ports: (protocol, port) -> node -> the pods holding it there."""

    def __init__(self) -> None:
        self.source: PodIndex | None = None
        self.generation = -1
        self.slots: dict[_Slot, dict[str, _Held]] = {}

    def sync(self, counted: PodIndex) -> None:
        if counted is self.source:
            changes = counted.changes_since(self.generation)
            if changes is not None:
                for change in changes:
                    self._apply(change)
                self.generation = counted.generation
                return
        self.slots = {}
        self.source = counted
        for key, info in counted.subset(SUBSET, _holds_ports).items():
            node = counted.node_of(key)
            if node is not None:
                self._apply(PodChange(info, node, 1))
        self.generation = counted.generation

    def _apply(self, change: PodChange) -> None:
        ports = host_ports(change.info.pod)
        if not ports:
            return
        key = change.info.key
        by_slot: dict[_Slot, list[str]] = {}
        for ip, protocol, port in ports:
            by_slot.setdefault((protocol, port), []).append(ip)
        for slot, ips in by_slot.items():
            if change.sign > 0:
                held = self.slots.setdefault(slot, {}).setdefault(change.node, {})
                held[key] = (change.info, tuple(ips))
                continue
            nodes = self.slots.get(slot)
            held_or_none = nodes.get(change.node) if nodes is not None else None
            if nodes is None or held_or_none is None:
                continue
            held_or_none.pop(key, None)
            if not held_or_none:
                del nodes[change.node]
                if not nodes:
                    del self.slots[slot]


class NodePorts(PreFilter, Filter):
    name = "NodePorts"

    def __init__(self) -> None:
        self._book = _PortBook()

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
        self._book.sync(cycle.cluster.counted)
        blocked = np.zeros(nodes.size, dtype=bool)
        overlay = nodes.overlay
        hypothetical = not overlay.empty
        for ip, protocol, port in wanted:
            for node, held in self._book.slots.get((protocol, port), {}).items():
                row = nodes.row_of(node)
                if row is None or blocked[row] or not candidates[row]:
                    continue
                for key, (info, ips) in held.items():
                    if key == pod.key or not any(conflicts(h, ip) for h in ips):
                        continue
                    if hypothetical and overlay.gone(info, row):
                        continue
                    blocked[row] = True
                    break
        for row, other in overlay.added:
            if blocked[row] or not candidates[row] or other.key == pod.key:
                continue
            if _collide(host_ports(other.pod), wanted):
                blocked[row] = True
        if not blocked.any():
            return FilterResult(candidates)
        return FilterResult(candidates & ~blocked, reasons=(Reason(frozen(blocked), ERR_REASON),))


def _collide(held: tuple[HostPort, ...], wanted: tuple[HostPort, ...]) -> bool:
    return any(
        h.protocol == w.protocol and h.port == w.port and conflicts(h.ip, w.ip)
        for h in held
        for w in wanted
    )
