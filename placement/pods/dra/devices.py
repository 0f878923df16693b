"""The small vocabulary of device allocation: a device's identity (`DeviceKey`), what the
inventory keeps of one device (`DeviceView`, also what CEL selectors read), the error the
allocator raises (`AllocationError`), the devices an allocated claim holds, device taints and
the requests' tolerations of them, and a node selector matched against one node.

Taints follow kube-scheduler v1.36, where DRADeviceTaints is beta and on by default: a device
tainted NoSchedule or NoExecute is allocated only for a request tolerating the taint; other
effects (None, or one kube does not know) never prevent allocation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal, NamedTuple

from apis.core import NodeSelector, NodeSelectorRequirement
from apis.resource import DeviceAttribute, DeviceCapacity, DeviceToleration, ResourceClaim

__all__ = [
    "MAX_RESULTS",
    "NAME_FIELD",
    "AllocationError",
    "DeviceKey",
    "DeviceView",
    "ErrorKind",
    "Taint",
    "allocated_devices",
    "blocking_taint",
    "node_matches",
    "tolerates",
]

MAX_RESULTS = 32
"""resource.k8s.io/v1 AllocationResultsMaxSize: the most devices one claim's allocation holds."""
NAME_FIELD = "metadata.name"

ErrorKind = Literal["error", "unschedulable", "node"]


class AllocationError(Exception):
    """A claim that cannot be allocated for a reason other than devices being short.

    `kind` says how kube-scheduler reports it: "error" aborts the scheduling attempt (a broken
    selector, an `All` request meeting a pool being updated), "unschedulable" makes the pod
    wait for an event (a DeviceClass that does not exist), "node" rejects this node only, with
    the message as the node's reason (invalid pools seen where allocation failed)."""

    def __init__(self, message: str, kind: ErrorKind = "error") -> None:
        super().__init__(message)
        self.message = message
        self.kind: ErrorKind = kind


class DeviceKey(NamedTuple):
    """A device as allocation results and `in_use` name it. A named tuple (immutable,
    ordered, by fields) rather than a dataclass: hashing it is a tuple's, in C, and the Filter
    looks up every device in use once per pod."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        # kube's DeviceID string, as its messages print a device.
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, eq=False)
class DeviceView:
    """One device of a ResourceSlice as the allocator and the CEL selectors read it."""

    driver: str
    pool: str
    name: str
    attributes: Mapping[str, DeviceAttribute]
    capacity: Mapping[str, DeviceCapacity]
    taints: tuple[Taint, ...] = ()
    binding_conditions: bool = False  # the device has bindingConditions (not supported)
    consumes_counters: bool = False  # the device consumes its pool's shared counters
    allow_multiple_allocations: bool = False  # read by selectors only
    # (counter set, counter, amount) per counter consumed: `counters.Consumption`.
    consumption: tuple[tuple[str, str, int | Fraction], ...] = ()
    key: DeviceKey = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", DeviceKey(self.driver, self.pool, self.name))

    def attribute(self, qualified: str) -> DeviceAttribute | None:
        """The attribute a `matchAttribute` names: fully qualified, or the driver's own
        domain spelled out for an attribute published with its bare id."""
        found = self.attributes.get(qualified)
        if found is not None:
            return found
        domain, slash, ident = qualified.partition("/")
        if not slash or domain != self.driver:
            return None
        return self.attributes.get(ident)


def allocated_devices(claim: ResourceClaim) -> set[DeviceKey]:
    """The devices `status.allocation` holds for the claim; results with adminAccess do not
    make a device busy, so they are left out."""
    allocation = claim.status.allocation if claim.status else None
    devices = allocation.devices if allocation else None
    out: set[DeviceKey] = set()
    for result in (devices.results if devices else None) or ():
        if not result.admin_access:
            out.add(DeviceKey(result.driver, result.pool, result.device))
    return out


def tolerates(toleration: DeviceToleration, taint: Taint) -> bool:
    """A toleration matches a taint as a pod's toleration matches a node taint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or "Equal"
    if operator == "Exists":
        return True
    if not toleration.key:
        return False  # Equal with an empty key matches nothing (validation forbids it)
    return (toleration.value or "") == taint.value


def blocking_taint(device: DeviceView, tolerations: Sequence[DeviceToleration]) -> bool:
    """True when a NoSchedule or NoExecute taint of the device is tolerated by none."""
    for taint in device.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return True
    return False


# --- one node against a NodeSelector (kube's nodeaffinity) -----------------------------------


def node_matches(selector: NodeSelector, node: str, labels: Mapping[str, str]) -> bool:
    """Does the node match any term? A term with neither expressions nor fields, or one kube
    would refuse to build, matches nothing."""
    for term in selector.node_selector_terms:
        expressions = term.match_expressions or []
        fields = term.match_fields or []
        if not expressions and not fields:
            continue
        if all(_label_ok(r, labels) for r in expressions) and all(
            _field_ok(r, node) for r in fields
        ):
            return True
    return False


def _label_ok(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    values = req.values or []
    present = req.key in labels
    value = labels.get(req.key, "")
    if req.operator == "In":
        return present and value in values
    if req.operator == "NotIn":
        return not present or value not in values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    if not present or len(values) != 1:
        return False
    try:
        have, bound = int(value, 10), int(values[0], 10)
    except ValueError:
        return False
    return have > bound if req.operator == "Gt" else have < bound


def _field_ok(req: NodeSelectorRequirement, node: str) -> bool:
    values = req.values or []
    if req.key != NAME_FIELD or len(values) != 1:
        return False
    if req.operator == "In":
        return node == values[0]
    if req.operator == "NotIn":
        return node != values[0]
    return False
