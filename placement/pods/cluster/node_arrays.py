"""The numpy arrays of a `NodeTable` (`placement.pods.cluster.nodes`) and what pods count in them.

`NodeArrays` holds the matrices [nodes x resources] in the scheduler's units
(`placement.pods.cluster.requests`) and the cordon mask, shared with the table's snapshots and
copied on the next write (copy on write) unless their reference counts show nothing else holds them
any more (`_unseen`): pod events write only `requested` and `non_zero`, so those are tracked apart
from the node-side arrays. `non_zero` has the columns NON_ZERO_RESOURCES (cpu, memory), what scoring
counts. `NodeArrays.rebuilt` makes fresh arrays from the table's per-node dicts (after a bulk
update)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from placement.arrays import BoolMask
from placement.pods.cluster.requests import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Requests

__all__ = [
    "BASE_RESOURCES",
    "NON_ZERO_RESOURCES",
    "Counted",
    "NodeArrays",
    "ResourceMatrix",
    "counted",
    "summed",
]

BASE_RESOURCES = (CPU, MEMORY, PODS, EPHEMERAL_STORAGE)
NON_ZERO_RESOURCES = (CPU, MEMORY)  # the columns of `non_zero_requested`

ResourceMatrix = npt.NDArray[np.int64]
"""One row per node, one column per resource (`NodeSnapshot.resources`)."""


class Counted(NamedTuple):
    """What one pod counts on its node."""

    requests: Requests
    non_zero: tuple[int, int]  # cpu, memory (NON_ZERO_RESOURCES)


def counted(requests: Requests, non_zero: Requests | None = None) -> Counted:
    """A pod's `pod_requests` and `non_zero_requests` (the same when not given)."""
    scoring = non_zero or requests
    return Counted(dict(requests), (scoring.get(CPU, 0), scoring.get(MEMORY, 0)))


def summed(requests: Iterable[Mapping[str, int]]) -> Requests:
    """Amounts added up per resource."""
    out: Requests = {}
    for one in requests:
        for name, value in one.items():
            out[name] = out.get(name, 0) + value
    return out


class NodeArrays:
    """allocatable, requested and non_zero matrices and the unschedulable mask, row per node."""

    __slots__ = (
        "allocatable",
        "non_zero",
        "requested",
        "shared_nodes",
        "shared_pods",
        "unschedulable",
    )

    def __init__(
        self,
        allocatable: ResourceMatrix,
        requested: ResourceMatrix,
        non_zero: ResourceMatrix,
        unschedulable: BoolMask,
    ) -> None:
        self.allocatable = allocatable
        self.requested = requested
        self.non_zero = non_zero
        self.unschedulable = unschedulable
        # The arrays are referenced by a snapshot: copy before writing.
        self.shared_pods = False  # requested, non_zero
        self.shared_nodes = False  # allocatable, unschedulable

    @classmethod
    def empty(cls, width: int) -> NodeArrays:
        """No node, `width` resource columns."""
        zeros = np.zeros((0, width), dtype=np.int64)
        return cls(
            zeros,
            zeros.copy(),
            np.zeros((0, len(NON_ZERO_RESOURCES)), dtype=np.int64),
            np.zeros(0, dtype=bool),
        )

    @classmethod
    def rebuilt(
        cls,
        names: Sequence[str],
        resources: Sequence[str],
        allocatable_of: Mapping[str, Requests],
        cordoned: Mapping[str, bool],
        per_node: Mapping[str, Mapping[str, Counted]],
    ) -> NodeArrays:
        """Fresh arrays over the rows `names` and the columns `resources` (which name every
        resource met), from each node's allocatable amounts and cordon and what each of its
        pods counts; pods of nodes not in `names` count nowhere."""
        rows = {name: row for row, name in enumerate(names)}
        cols = {name: col for col, name in enumerate(resources)}
        size, width = len(names), len(resources)
        cells: tuple[list[int], list[int], list[int]] = ([], [], [])
        for row, name in enumerate(names):
            for resource, value in allocatable_of[name].items():
                cells[0].append(row)
                cells[1].append(cols[resource])
                cells[2].append(value)
        allocatable = np.zeros((size, width), dtype=np.int64)
        allocatable[cells[0], cells[1]] = cells[2]
        used: tuple[list[int], list[int], list[int]] = ([], [], [])
        non_zero = np.zeros((size, len(NON_ZERO_RESOURCES)), dtype=np.int64)
        for node_name, pods in per_node.items():
            row_of = rows.get(node_name)
            if row_of is None:
                continue
            cpu = memory = 0
            for pod in pods.values():
                for resource, value in pod.requests.items():
                    used[0].append(row_of)
                    used[1].append(cols[resource])
                    used[2].append(value)
                cpu += pod.non_zero[0]
                memory += pod.non_zero[1]
            non_zero[row_of] = (cpu, memory)
        requested = np.zeros((size, width), dtype=np.int64)
        np.add.at(requested, (used[0], used[1]), np.array(used[2], dtype=np.int64))
        unschedulable = np.array([cordoned[name] for name in names], dtype=bool)
        return cls(allocatable, requested, non_zero, unschedulable)

    def share(self) -> None:
        """A snapshot now holds the arrays: make them read-only, copy them on the next write."""
        for array in (self.allocatable, self.requested, self.non_zero, self.unschedulable):
            array.flags.writeable = False
        self.shared_pods = self.shared_nodes = True

    def writable(self, nodes: bool) -> None:
        """Make the arrays an event writes private again: `requested` and `non_zero`, and with
        `nodes` (a node event) the node-side arrays too."""
        if self.shared_pods:
            if _unseen(self.requested) and _unseen(self.non_zero):
                self.requested.flags.writeable = self.non_zero.flags.writeable = True
            else:
                self.requested = self.requested.copy()
                self.non_zero = self.non_zero.copy()
            self.shared_pods = False
        if nodes and self.shared_nodes:
            self.allocatable = self.allocatable.copy()
            self.unschedulable = self.unschedulable.copy()
            self.shared_nodes = False

    def insert_row(self, row: int) -> None:
        """An empty row at `row` (fresh arrays: nothing shared any more)."""
        width = self.allocatable.shape[1]
        self.allocatable = np.insert(self.allocatable, row, np.zeros(width, np.int64), axis=0)
        self.requested = np.insert(self.requested, row, np.zeros(width, np.int64), axis=0)
        self.non_zero = np.insert(
            self.non_zero, row, np.zeros(len(NON_ZERO_RESOURCES), np.int64), axis=0
        )
        self.unschedulable = np.insert(self.unschedulable, row, False)
        self.shared_pods = self.shared_nodes = False

    def delete_row(self, row: int) -> None:
        """Row `row` goes (fresh arrays: nothing shared any more)."""
        self.allocatable = np.delete(self.allocatable, row, axis=0)
        self.requested = np.delete(self.requested, row, axis=0)
        self.non_zero = np.delete(self.non_zero, row, axis=0)
        self.unschedulable = np.delete(self.unschedulable, row)
        self.shared_pods = self.shared_nodes = False

    def widen(self) -> None:
        """A new resource column, 0 on every row."""
        pad = np.zeros((self.allocatable.shape[0], 1), dtype=np.int64)
        self.allocatable = np.hstack([self.allocatable, pad])
        self.requested = np.hstack([self.requested, pad])


def _unseen(array: npt.NDArray[np.int64]) -> bool:
    """Nothing but `NodeArrays` holds `array` (no snapshot taken from it is alive any more,
    no view of it): writing it in place cannot be seen, and the copy is saved. The count
    seen here: the attribute, the parameter and `sys.getrefcount`'s own argument."""
    return array.base is None and sys.getrefcount(array) <= 3
