"""The exact search for one node: kube's structured allocator (v1.36, the stable variant).

Claims in order, each claim's requests in order, each request's devices one after the other;
for each wanted device the node's devices are tried in walk order (pools, slices, devices),
skipping devices in use (allocated to other claims, assumed in flight, or taken earlier in
this search), not selected by the class and request selectors, tainted without a toleration,
or breaking a `matchAttribute` constraint, or that would take more of its pool's shared
counters than are left (`counters.CounterLedger`); on a dead end the search backs up to the previous
choice (exhaustive, first solution wins). `firstAvailable` tries its subrequests in order;
`All` takes every selected device of the node or fails. An `adminAccess` request may take
devices in use, but not one this claim takes for another request. One claim's allocation
holds at most 32 devices; a subrequest over that limit makes the search try the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from apis.resource import DeviceAttribute
from placement.pods.dra.counters import CounterLedger
from placement.pods.dra.devices import MAX_RESULTS, NAME_FIELD, AllocationError, DeviceKey
from placement.pods.dra.inventory import Catalog, PoolView
from placement.pods.dra.prepared import (
    ClaimPlan,
    PreparedClaims,
    RequestOption,
    Selection,
    SelectorSource,
)

__all__ = ["search_node"]


class _TooManyError(Exception):
    """kube's errAllocationResultMaxSizeExceeded: backtrack harder."""


@dataclass
class _Constraint:
    requests: frozenset[str]
    attribute: str
    value: DeviceAttribute | None = None
    members: int = 0

    def applies(self, option: RequestOption) -> bool:
        if not self.requests:
            return True
        return option.base in self.requests or (
            bool(option.sub) and option.result_name in self.requests
        )

    def add(self, option: RequestOption, found: DeviceAttribute | None) -> bool:
        if not self.applies(option):
            return True
        if found is None:
            return False
        if self.members == 0:
            self.value, self.members = found, 1
            return True
        held = self.value
        assert held is not None
        same = found.value() is not None and (
            (found.string_value is not None and found.string_value == held.string_value)
            or (found.int_value is not None and found.int_value == held.int_value)
            or (found.bool_value is not None and found.bool_value == held.bool_value)
            or (found.version_value is not None and found.version_value == held.version_value)
        )
        if same:
            self.members += 1
        return same

    def remove(self, option: RequestOption) -> None:
        if self.applies(option):
            self.members -= 1


@dataclass
class _Search:
    plans: tuple[ClaimPlan, ...]
    catalog: Catalog
    selections: dict[int, Selection]  # id(option) -> its selection
    node_devices: list[int]
    in_use: Set[DeviceKey]
    ledger: CounterLedger | None
    wanted: dict[tuple[int, int, int], tuple[int, list[int]]] = field(default_factory=dict)
    taking: dict[DeviceKey, set[int]] = field(default_factory=dict)
    results: list[list[tuple[RequestOption, int]]] = field(default_factory=list)
    constraints: list[list[_Constraint]] = field(default_factory=list)

    def busy(self, key: DeviceKey) -> bool:
        return key in self.in_use or bool(self.taking.get(key))

    def one(self, c: int, r: int, s: int, k: int, in_sub: bool) -> bool:
        if c >= len(self.plans):
            return True
        plan = self.plans[c]
        if r >= len(plan.slots):
            try:
                return self.one(c + 1, 0, 0, 0, False)
            except _TooManyError:
                return False
        slot = plan.slots[r]
        if slot.first_available and not in_sub:
            every_too_many = True
            for index in range(len(slot.options)):
                try:
                    done = self.one(c, r, index, 0, True)
                except _TooManyError:
                    continue
                every_too_many = False
                if done:
                    return True
            if every_too_many:
                raise _TooManyError
            return False
        option = slot.options[s]
        number, every = self.wanted[(c, r, s)]
        if option.all_devices and not every:
            return False
        if k >= number:
            return self.one(c, r + 1, 0, 0, False)
        if len(self.results[c]) + number - k > MAX_RESULTS:
            raise _TooManyError
        if option.all_devices:
            undo = self.take(c, option, every[k], must=True)
            if undo is None:
                return False
            try:
                done = self.one(c, r, s, k + 1, in_sub)
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        selection = self.selections[id(option)]
        for d in self.node_devices:
            key = self.catalog.devices[d].key
            if option.admin:
                if c in self.taking.get(key, ()):
                    continue
            elif self.busy(key):
                continue
            if not selection.check(d):
                continue
            undo = self.take(c, option, d, must=False)
            if undo is None:
                continue
            try:
                done = self.one(c, r, s, k + 1, in_sub)
            except BaseException:
                undo()
                raise
            if done:
                return True
            undo()
        return False

    def take(
        self, c: int, option: RequestOption, d: int, *, must: bool
    ) -> Callable[[], None] | None:
        view = self.catalog.devices[d]
        key = view.key
        if option.admin:
            if c in self.taking.get(key, ()):
                return None
        elif self.busy(key):
            return None
        counted = view.consumes_counters
        if counted:
            assert self.ledger is not None
            if not self.ledger.take(view):
                return None
        # kube-scheduler checks counters first and keeps the consumption of a device it
        # then refuses for a taint or a constraint until this node's search ends: so do we.
        selection = self.selections[id(option)]
        if not selection.usable[d]:
            return None  # a taint no toleration covers
        constraints = self.constraints[c]
        for i, constraint in enumerate(constraints):
            if not constraint.add(option, view.attribute(constraint.attribute)):
                if must:
                    raise AllocationError(
                        f"claim {self.plans[c].label}, request {option.own_name}: cannot add "
                        f"device {key} because a claim constraint would not be satisfied"
                    )
                for earlier in constraints[:i]:
                    earlier.remove(option)
                return None
        self.taking.setdefault(key, set()).add(c)
        self.results[c].append((option, d))

        def undo() -> None:
            for constraint in constraints:
                constraint.remove(option)
            self.taking[key].discard(c)
            self.results[c].pop()
            if counted:
                assert self.ledger is not None
                self.ledger.give_back(view)

        return undo


def search_node(
    prepared: PreparedClaims,
    catalog: Catalog,
    selectors: SelectorSource,
    node: str,
    pools: tuple[PoolView, ...],
    in_use: Set[DeviceKey],
) -> list[dict[str, Any]] | None:
    """The allocations of the prepared claims on the node, None when they do not fit;
    raises AllocationError as kube's allocator errs."""
    plans = prepared.claims
    options = prepared.options
    selections = {id(o): prepared.selection(o, catalog, selectors) for o in options}
    usable_pools = [p for p in pools if not (p.incomplete or p.invalid)]
    node_devices = [d for pool in usable_pools for d in pool.devices]
    ledger = None
    if catalog.counter_devices:
        counted = [((p.driver, p.pool), p.counter_sets, p.accounted) for p in usable_pools]
        ledger = CounterLedger(catalog.devices, counted, in_use)
    search = _Search(plans, catalog, selections, node_devices, in_use, ledger)
    for c, plan in enumerate(plans):
        least = 0
        for r, slot in enumerate(plan.slots):
            fewest: int | None = None
            for s, option in enumerate(slot.options):
                every: list[int] = []
                number = option.count
                if option.all_devices:
                    for pool in pools:
                        state = "being updated" if pool.incomplete else "invalid"
                        if pool.incomplete or pool.invalid:
                            raise AllocationError(
                                f"claim {plan.label}, request {option.own_name}: asks for all "
                                f"devices, but resource pool {pool} is currently {state}"
                            )
                        selection = selections[id(option)]
                        every += [d for d in pool.devices if selection.check(d)]
                    number = len(every)
                search.wanted[(c, r, s)] = (number, every)
                fewest = number if fewest is None else min(fewest, number)
            least += fewest or 0
        if least > MAX_RESULTS:
            raise AllocationError(
                f"claim {plan.label}: number of requested devices {least} exceeds the claim "
                f"limit of {MAX_RESULTS}"
            )
        search.results.append([])
        search.constraints.append([_Constraint(req, attr) for req, attr in plan.constraints])
    if not search.one(0, 0, 0, 0, False):
        if any(p.invalid for p in pools):
            raise AllocationError("invalid resource pools were encountered", "node")
        return None
    return [_allocation(catalog, plan, search.results[c], node) for c, plan in enumerate(plans)]


def _allocation(
    catalog: Catalog, plan: ClaimPlan, taken: list[tuple[RequestOption, int]], node: str
) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for option, d in taken:
        key = catalog.devices[d].key
        result: dict[str, Any] = {
            "request": option.result_name,
            "driver": key.driver,
            "pool": key.pool,
            "device": key.device,
        }
        if option.admin:
            result["adminAccess"] = True
        if option.tolerations:
            result["tolerations"] = [t.to_wire() for t in option.tolerations]
        results.append(result)
    devices: dict[str, Any] = {"results": results}
    config = _config(plan, taken)
    if config:
        devices["config"] = config
    allocation: dict[str, Any] = {"devices": devices}
    selector = _node_selector(catalog, [d for _, d in taken])
    if selector is not None:
        allocation["nodeSelector"] = selector
    return allocation


def _config(plan: ClaimPlan, taken: list[tuple[RequestOption, int]]) -> list[dict[str, Any]]:
    """The classes' configuration (once per class, naming its requests), then the claim's
    for the requests allocated; a configuration for every request names none."""
    chosen: dict[str, RequestOption] = {}
    for option, _ in taken:
        chosen.setdefault(option.base, option)
    out: list[dict[str, Any]] = []
    by_class: dict[str, list[dict[str, Any]]] = {}
    for slot in plan.slots:
        picked = chosen.get(slot.name)
        if picked is None:
            continue
        cls = picked.device_class
        entries = by_class.get(cls.name)
        if entries is not None:
            for entry in entries:
                entry["requests"].append(picked.result_name)
            continue
        entries = []
        for item in (cls.spec.model_extra or {}).get("config") or ():
            entry = {"source": "FromClass", "requests": [picked.result_name], **_plain(item)}
            entries.append(entry)
        by_class[cls.name] = entries
        out += entries
    devices = plan.claim.spec.devices
    for item in ((devices.model_extra or {}).get("config") if devices else None) or ():
        plain = _plain(item)
        names = list(plain.get("requests") or ())
        body = {k: v for k, v in plain.items() if k != "requests"}
        if not names:
            out.append({"source": "FromClaim", "requests": [], **body})
            continue
        # Once per request it names (or per chosen subrequest it names), as kube does.
        for slot in plan.slots:
            held = chosen.get(slot.name)
            named = slot.name in names or (
                held is not None and bool(held.sub) and held.result_name in names
            )
            if named:
                out.append({"source": "FromClaim", "requests": list(names), **body})
    for entry in out:
        if not entry["requests"] or len(entry["requests"]) == len(plan.slots):
            entry.pop("requests")
    return out


def _plain(item: Any) -> dict[str, Any]:
    return dict(item) if isinstance(item, Mapping) else {}


def _node_selector(catalog: Catalog, taken: list[int]) -> dict[str, Any] | None:
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for d in taken:
        entry = catalog.slices[catalog.slice_of[d]]
        reach = catalog.device_reach.get(d) if entry.per_device else entry.reach
        if reach is None:
            continue
        if reach.node_name:
            # One node-local device ties the whole claim to that node.
            name = {"key": NAME_FIELD, "operator": "In", "values": [reach.node_name]}
            return {"nodeSelectorTerms": [{"matchFields": [name]}]}
        terms = reach.selector.node_selector_terms if reach.selector else []
        if len(terms) == 1:
            for source, target in (
                (terms[0].match_fields, fields),
                (terms[0].match_expressions, expressions),
            ):
                for requirement in source or ():
                    wire = requirement.to_wire()
                    if not any(_same(wire, held) for held in target):
                        target.append(wire)
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]} if term else None


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (
        a.get("key") == b.get("key")
        and a.get("operator") == b.get("operator")
        and set(a.get("values") or ()) == set(b.get("values") or ())
    )
