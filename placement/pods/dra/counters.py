"""Partitionable devices (DRAPartitionableDevices, beta and on by default in kube-scheduler
v1.36): counter sets a pool shares, the counters each device consumes while allocated, and
the ledger one node's search keeps of them.

A driver publishes the counter sets of a pool (a GPU's memory slices, say) in slices of their
own, without devices; each device lists, per counter set of its pool, how much of which
counters it uses (a whole GPU all eight slices, a 1g profile one). Such a slice reaches every
node that sees the pool, whatever its node selection says. A pool is invalid (none of its
devices used) when two counter sets share a name, or a device consumes from a counter set or
a counter the pool does not declare.

For one node's search (`CounterLedger`) a pool's counters start at their declared values less
what the devices in use (allocated to other claims, or assumed in flight) consume; a device
can be taken only while, after adding its consumption to that of the devices this search has
already taken from the pool, no counter of the pool is above what is left; backing up gives
its consumption back. As in kube-scheduler, the counters are checked before the device's
taints and the claim's constraints, and a device refused for one of those keeps its
consumption in the ledger for the rest of that node's search.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from fractions import Fraction

from apis.resource import Device, ResourceSliceSpec
from placement.pods.dra.devices import DeviceKey, DeviceView

__all__ = [
    "Amount",
    "Consumption",
    "CounterLedger",
    "CounterSets",
    "consumption_of",
    "counter_sets_of",
    "valid_counter_sets",
]

Amount = int | Fraction
"""A counter's value or a device's use of it, exact: an int when whole (most are: bytes,
slices), as Fraction arithmetic is several times slower and the search does a lot of it."""
Consumption = tuple[tuple[str, str, Amount], ...]
"""(counter set, counter, amount) for every counter a device consumes, as listed."""
CounterSets = dict[str, dict[str, Amount]]
"""Counter set name -> counter name -> value."""


def _amount(value: Fraction) -> Amount:
    return value.numerator if value.denominator == 1 else value


def counter_sets_of(spec: ResourceSliceSpec) -> tuple[tuple[str, dict[str, Amount]], ...]:
    """The counter sets a slice declares, in order (names may repeat: validated per pool)."""
    return tuple(
        (s.name, {name: _amount(c.value.value) for name, c in (s.counters or {}).items()})
        for s in spec.shared_counters or ()
    )


def consumption_of(device: Device) -> Consumption:
    return tuple(
        (entry.counter_set, name, _amount(c.value.value))
        for entry in device.consumes_counters or ()
        for name, c in (entry.counters or {}).items()
    )


def valid_counter_sets(
    declared: Iterable[tuple[tuple[str, dict[str, Amount]], ...]],
    devices: Iterable[DeviceView],
) -> CounterSets | None:
    """A pool's counter sets from its counter slices, or None when the pool is invalid as
    kube's allocator finds it: two counter sets of one name ("duplicate counter set name"),
    a device consuming from a set or a counter not declared ("counter set %s not found",
    "counter %s not found in counter set %s")."""
    out: CounterSets = {}
    for sets in declared:
        for name, counters in sets:
            if name in out:
                return None
            out[name] = counters
    for view in devices:
        for set_name, counter, _ in view.consumption:
            known = out.get(set_name)
            if known is None or counter not in known:
                return None
    return out


class _PoolCounters:
    """One pool's counters during one node's search."""

    __slots__ = ("consumed", "left", "overdrawn")

    def __init__(self, left: CounterSets) -> None:
        self.left = left
        # Devices in use may already consume more than a counter holds (the driver shrank
        # the pool): kube then refuses every device of the pool that consumes counters.
        self.overdrawn = any(v < 0 for counters in left.values() for v in counters.values())
        self.consumed: dict[tuple[str, str], Amount] = {}


class CounterLedger:
    """The counters of the pools one node sees, for one search over it."""

    def __init__(
        self,
        devices: Sequence[DeviceView],
        pools: Iterable[tuple[tuple[str, str], CounterSets, Sequence[int]]],
        in_use: Set[DeviceKey],
    ) -> None:
        """`pools`: per pool (driver, name), its counter sets and the catalog indices of
        its devices that consume counters (those of every slice of its generation)."""
        self._devices = devices
        self._in_use = in_use
        self._declared = {key: (sets, accounted) for key, sets, accounted in pools}
        self._pools: dict[tuple[str, str], _PoolCounters] = {}

    def _pool(self, key: tuple[str, str]) -> _PoolCounters:
        found = self._pools.get(key)
        if found is None:
            sets, accounted = self._declared.get(key, ({}, ()))
            left = {name: dict(counters) for name, counters in sets.items()}
            for d in accounted:
                view = self._devices[d]
                if view.key not in self._in_use:
                    continue
                for set_name, counter, amount in view.consumption:
                    counters = left.get(set_name)
                    if counters is not None and counter in counters:
                        counters[counter] -= amount
            found = _PoolCounters(left)
            self._pools[key] = found
        return found

    def take(self, view: DeviceView) -> bool:
        """Adds the device's consumption if every counter of its pool stays within what is
        left; otherwise changes nothing and says False."""
        pool = self._pool((view.driver, view.pool))
        if pool.overdrawn:
            return False
        consumed = pool.consumed
        for set_name, counter, amount in view.consumption:
            consumed[set_name, counter] = consumed.get((set_name, counter), 0) + amount
        for set_name, counter, _ in view.consumption:
            counters = pool.left.get(set_name)
            if counters is None or counter not in counters:
                continue  # not declared: the pool would be invalid, never searched
            if consumed[set_name, counter] > counters[counter]:
                self.give_back(view)
                return False
        return True

    def give_back(self, view: DeviceView) -> None:
        consumed = self._pool((view.driver, view.pool)).consumed
        for set_name, counter, amount in view.consumption:
            consumed[set_name, counter] -= amount
