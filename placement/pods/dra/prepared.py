"""A pod's unallocated claims read once per scheduling cycle (`PreparedClaims`): each request
with its DeviceClass, selectors, mode and count, `firstAvailable` alternatives in order, the
`matchAttribute` constraints; and, per device of the inventory, whether each request may take
it (`Selection`), computed with one CEL evaluation per selector over all devices.

The checks kube-scheduler makes before any node is tried are made here, with its words: a
DeviceClass that does not exist (the pod waits: unschedulable), a request of no known kind,
a selector that is not CEL, an unknown allocation mode or constraint, more devices asked of
one claim than an allocation holds. A CEL error (compiling, or evaluating on one device) is
kept per device and raised only when the search reaches that device, as kube's lazy
evaluation does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from apis.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClass,
    DeviceSelector,
    DeviceToleration,
    ResourceClaim,
)
from placement.arrays import BoolMask
from placement.cel.devices import DeviceSelectorError
from placement.pods.dra.devices import MAX_RESULTS, AllocationError, DeviceView, blocking_taint
from placement.pods.dra.inventory import Catalog

__all__ = [
    "ClaimPlan",
    "PreparedClaims",
    "Program",
    "RequestOption",
    "RequestSlot",
    "Selection",
    "SelectorSource",
    "prepare_claims",
]

MATCH, NO_MATCH, FAILED = 1, 0, -1


class Program(Protocol):
    def matches(
        self,
        driver: str,
        attributes: Mapping[str, DeviceAttribute] | None,
        capacity: Mapping[str, DeviceCapacity] | None,
        allow_multiple_allocations: bool = False,
    ) -> bool: ...


class SelectorSource(Protocol):
    """What the allocator needs of `placement.cel.devices.DeviceSelectors` (which raises
    DeviceSelectorError, its text kube's)."""

    def program(self, expression: str) -> Program: ...

    def mask(self, expression: str, devices: Sequence[DeviceView]) -> BoolMask: ...


@dataclass(frozen=True, eq=False)
class RequestOption:
    """A request of `exactly`, or one `firstAvailable` subrequest."""

    claim: int
    base: str  # the request's name
    sub: str  # the subrequest's name, "" for `exactly`
    device_class: DeviceClass
    selectors: tuple[str, ...]
    all_devices: bool
    count: int
    admin: bool
    tolerations: tuple[DeviceToleration, ...]

    @property
    def result_name(self) -> str:
        return f"{self.base}/{self.sub}" if self.sub else self.base

    @property
    def own_name(self) -> str:
        """The name kube's messages give it: the subrequest's own for a subrequest."""
        return self.sub or self.base


@dataclass(frozen=True)
class RequestSlot:
    name: str
    options: tuple[RequestOption, ...]
    first_available: bool


@dataclass(frozen=True)
class ClaimPlan:
    claim: ResourceClaim
    label: str  # namespace/name, as kube's messages print a claim
    slots: tuple[RequestSlot, ...]
    constraints: tuple[tuple[frozenset[str], str], ...]  # (requests, empty = all; attribute)


@dataclass
class Selection:
    """Per catalog device, for one option: MATCH, NO_MATCH or FAILED (with its message)."""

    state: npt.NDArray[np.int8]
    errors: dict[int, str]
    usable: BoolMask  # MATCH (or FAILED: counted, the search raises) and allocatable

    def check(self, device: int) -> bool:
        state = int(self.state[device])
        if state == FAILED:
            raise AllocationError(self.errors[device])
        return state == MATCH


@dataclass
class PreparedClaims:
    claims: tuple[ClaimPlan, ...]
    _selections: dict[tuple[int, int], Selection] = field(default_factory=dict)
    _version: int = -1

    @property
    def options(self) -> list[RequestOption]:
        return [o for plan in self.claims for slot in plan.slots for o in slot.options]

    def selection(
        self, option: RequestOption, catalog: Catalog, selectors: SelectorSource
    ) -> Selection:
        if self._version != catalog.version:
            self._selections.clear()
            self._version = catalog.version
        key = (id(option), catalog.version)
        found = self._selections.get(key)
        if found is None:
            label = self.claims[option.claim].label
            # Pods asking alike share one evaluation per inventory: the cache lives on it.
            shared = (
                option.device_class.name,
                tuple(
                    s.cel.expression if s.cel else ""
                    for s in option.device_class.spec.selectors or ()
                ),
                option.selectors,
                label if option.selectors else "",
                tuple(repr(t.to_wire()) for t in option.tolerations),
            )
            found = catalog.selections.get(shared)
            if found is None:
                found = _select(option, label, catalog, selectors)
                catalog.selections[shared] = found
            self._selections[key] = found
        return found


def prepare_claims(
    claims: Sequence[ResourceClaim], classes: Mapping[str, DeviceClass]
) -> PreparedClaims:
    """The claims' requests resolved; raises AllocationError in kube's words."""
    # kube-scheduler's PreFilter first checks every class of every claim, then its allocator
    # checks each claim's requests and constraints.
    for claim in claims:
        for request in (claim.spec.devices.requests if claim.spec.devices else None) or ():
            if request.first_available:
                for sub in request.first_available:
                    _class_of(f"{request.name}/{sub.name}", sub.device_class_name, classes)
            elif request.exactly is None:
                raise AllocationError(f"request {request.name}: unsupported request type")
            else:
                _class_of(request.name, request.exactly.device_class_name, classes)
    return PreparedClaims(tuple(_plan(i, c, classes) for i, c in enumerate(claims)))


def _class_of(name: str, class_name: str, classes: Mapping[str, DeviceClass]) -> DeviceClass:
    if not class_name:
        raise AllocationError(f"request {name}: unsupported request type")
    found = classes.get(class_name)
    if found is None:
        message = f"request {name}: device class {class_name} does not exist"
        raise AllocationError(message, "unschedulable")
    return found


def _plan(index: int, claim: ResourceClaim, classes: Mapping[str, DeviceClass]) -> ClaimPlan:
    label = f"{claim.namespace}/{claim.name}"
    devices = claim.spec.devices
    slots: list[RequestSlot] = []
    least = 0
    for request in (devices.requests if devices else None) or ():
        if request.first_available:
            options = tuple(
                _option(index, label, request.name, s.name, s, classes, False)
                for s in request.first_available
            )
            least += min((o.count for o in options if not o.all_devices), default=0)
            slots.append(RequestSlot(request.name, options, True))
        else:
            exact = request.exactly
            assert exact is not None  # prepare_claims checked
            option = _option(
                index, label, request.name, "", exact, classes, bool(exact.admin_access)
            )
            least += 0 if option.all_devices else option.count
            slots.append(RequestSlot(request.name, (option,), False))
    if least > MAX_RESULTS:
        raise AllocationError(
            f"claim {label}: number of requested devices {least} exceeds the claim limit "
            f"of {MAX_RESULTS}"
        )
    constraints: list[tuple[frozenset[str], str]] = []
    for i, constraint in enumerate((devices.constraints if devices else None) or ()):
        if not constraint.match_attribute:
            raise AllocationError(
                f"claim {label}, constraint #{i}: empty constraint (unsupported constraint type?)"
            )
        constraints.append((frozenset(constraint.requests or ()), constraint.match_attribute))
    return ClaimPlan(claim, label, tuple(slots), tuple(constraints))


def _option(
    claim: int,
    label: str,
    base: str,
    sub: str,
    request: Any,
    classes: Mapping[str, DeviceClass],
    admin: bool,
) -> RequestOption:
    own = sub or base
    selectors: list[str] = []
    for i, selector in enumerate(request.selectors or ()):
        assert isinstance(selector, DeviceSelector)
        if selector.cel is None:
            raise AllocationError(
                f"claim {label}, request {own}, selector #{i}: CEL expression empty "
                "(unsupported selector type?)"
            )
        selectors.append(selector.cel.expression)
    mode = request.allocation_mode or ALLOCATION_MODE_EXACT_COUNT
    if mode not in (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL):
        raise AllocationError(f"claim {label}, request {own}: unsupported count mode {mode}")
    count = 1 if request.count is None else int(request.count)
    return RequestOption(
        claim,
        base,
        sub,
        classes[request.device_class_name],
        tuple(selectors),
        mode == ALLOCATION_MODE_ALL,
        count,
        admin,
        tuple(request.tolerations or ()),
    )


def _select(
    option: RequestOption, label: str, catalog: Catalog, selectors: SelectorSource
) -> Selection:
    devices = catalog.devices
    state = np.full(len(devices), MATCH, dtype=np.int8)
    errors: dict[int, str] = {}
    cls = option.device_class
    stages = [
        (f"class {cls.name}", s.cel.expression if s.cel else "") for s in cls.spec.selectors or ()
    ] + [(f"claim {label}", expression) for expression in option.selectors]
    # Selectors are ANDed in order, the class's first: a device a selector rejects is not
    # shown to the next one, so an error there cannot happen (kube stops there too).
    counters: dict[str, int] = {}
    for owner, expression in stages:
        number = counters.get(owner, 0)
        counters[owner] = number + 1
        active = np.flatnonzero(state == MATCH)
        if not len(active):
            break
        try:
            program = selectors.program(expression)
        except DeviceSelectorError as err:
            state[active] = FAILED
            for d in active.tolist():
                errors[d] = f"{owner}: selector #{number}: CEL compile error: {err}"
            continue
        subset = [devices[d] for d in active.tolist()]
        try:
            hits = np.asarray(selectors.mask(expression, subset), dtype=bool)
        except DeviceSelectorError:
            hits = np.zeros(len(subset), dtype=bool)
            for position, view in enumerate(subset):
                try:
                    hits[position] = program.matches(
                        view.driver,
                        view.attributes,
                        view.capacity,
                        view.allow_multiple_allocations,
                    )
                except DeviceSelectorError as err:
                    d = int(active[position])
                    state[d] = FAILED
                    errors[d] = (
                        f"{owner}: selector #{number} on device {view.key}: "
                        f"CEL runtime error: {err}"
                    )
                    hits[position] = True  # keep FAILED below
        rejected = active[~hits]
        state[rejected] = NO_MATCH
    # Devices with binding conditions are never selectable (that beta feature is not
    # followed); tainted ones are selectable but not allocatable. Devices consuming counters
    # count here: the search accounts for their counters.
    allocatable = np.ones(len(devices), dtype=bool)
    for d in catalog.special:
        view = devices[d]
        if view.binding_conditions:
            state[d] = NO_MATCH
        if blocking_taint(view, option.tolerations):
            allocatable[d] = False
    return Selection(state, errors, (state != NO_MATCH) & allocatable)
