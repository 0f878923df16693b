"""Dynamic resource allocation's objects, `resource.k8s.io/v1`: DeviceClass, ResourceClaim,
ResourceClaimTemplate and ResourceSlice.

A DRA driver publishes the devices of its pools in ResourceSlices (per node, per set of nodes,
or for every node), each device with typed attributes and capacities. A DeviceClass names a
kind of device by CEL selectors over those attributes. A ResourceClaim asks for devices of
classes (`exactly` a count or all of them, or the `firstAvailable` of several alternatives),
with more selectors and constraints between its requests; the scheduler allocates devices to it
(`status.allocation`) and records the pods using it (`status.reservedFor`). A pod names its
claims in `spec.resourceClaims`, directly or through a ResourceClaimTemplate from which
kube-controller-manager creates one claim per pod (`status.resourceClaimStatuses` says which).

What scheduling reads is typed (shared counters and the devices' consumption of them
included); the drivers' opaque configuration, binding conditions and the alpha fields of
consumable capacity are kept as they came.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from apis.core import NodeSelector
from apis.meta import Int64, KubeModel, KubeObject, Time
from apis.quantity import QuantityField

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT_COUNT",
    "POD_CLAIM_NAME_ANNOTATION",
    "RESOURCE_GROUP",
    "RESOURCE_KINDS",
    "AllocationResult",
    "CELDeviceSelector",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClass",
    "DeviceClassSpec",
    "DeviceConstraint",
    "DeviceCounterConsumption",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSelector",
    "DeviceSubRequest",
    "DeviceTaint",
    "DeviceToleration",
    "ExactDeviceRequest",
    "ResourceClaim",
    "ResourceClaimConsumerReference",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
]

RESOURCE_GROUP = "resource.k8s.io"
ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""On a claim created from a template: the pod's `spec.resourceClaims[].name` it was made for."""


# --- selecting devices ---------------------------------------------------------------------


class CELDeviceSelector(KubeModel):
    """A CEL expression over one `device` (driver, attributes, capacity) that must be true."""

    expression: str


class DeviceSelector(KubeModel):
    cel: CELDeviceSelector | None = None


class DeviceToleration(KubeModel):
    """A request's toleration of device taints, spelled as a pod's toleration of node taints."""

    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = None


class DeviceTaint(KubeModel):
    key: str
    value: str | None = None
    effect: str
    time_added: Time | None = None


# --- DeviceClass ---------------------------------------------------------------------------


class DeviceClassSpec(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"config"})

    selectors: list[DeviceSelector] | None = None
    extended_resource_name: str | None = None


class DeviceClass(KubeObject):
    """A kind of device (cluster-scoped): the selectors every device allocated for it passes."""

    GROUP: ClassVar[str] = RESOURCE_GROUP
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "DeviceClass"
    PLURAL: ClassVar[str] = "deviceclasses"
    NAMESPACED: ClassVar[bool] = False

    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


# --- ResourceClaim -------------------------------------------------------------------------


class ExactDeviceRequest(KubeModel):
    """`exactly`: `count` devices (ExactCount, the default, count 1) or every matching device
    (All) of the class, passing the selectors."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"capacity"})

    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str | None = None
    count: Int64 | None = None
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None


class DeviceSubRequest(KubeModel):
    """One alternative of `firstAvailable`, tried in order; named `<request>/<name>`."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"capacity"})

    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str | None = None
    count: Int64 | None = None
    tolerations: list[DeviceToleration] | None = None


class DeviceRequest(KubeModel):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceConstraint(KubeModel):
    """`matchAttribute`: every device allocated for `requests` (all of the claim's when empty)
    has the same value of that fully qualified attribute."""

    requests: list[str] | None = None
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaim(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"config"})

    requests: list[DeviceRequest] | None = None
    constraints: list[DeviceConstraint] | None = None


class ResourceClaimSpec(KubeModel):
    devices: DeviceClaim | None = None


class DeviceRequestAllocationResult(KubeModel):
    """One device allocated for the request (or `request/subrequest`) named."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"tolerations", "bindingConditions", "bindingFailureConditions", "consumedCapacity"}
    )

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    share_id: str | None = Field(default=None, alias="shareID")


class DeviceAllocationResult(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"config"})

    results: list[DeviceRequestAllocationResult] | None = None


class AllocationResult(KubeModel):
    """The devices allocated and the nodes they can be used from."""

    devices: DeviceAllocationResult | None = None
    node_selector: NodeSelector | None = None
    allocation_timestamp: Time | None = None


class ResourceClaimConsumerReference(KubeModel):
    """A consumer of an allocated claim (a pod: resource `pods`, no apiGroup)."""

    api_group: str | None = None
    resource: str
    name: str
    uid: str


class ResourceClaimStatus(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"devices"})

    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] | None = None


class ResourceClaim(KubeObject):
    """A request for devices (namespaced), allocated by the scheduler for its first consumer."""

    GROUP: ClassVar[str] = RESOURCE_GROUP
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "ResourceClaim"
    PLURAL: ClassVar[str] = "resourceclaims"
    HAS_STATUS: ClassVar[bool] = True

    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus | None = None


class ResourceClaimTemplateSpec(KubeModel):
    """The claim made for each pod: its labels and annotations, and its spec."""

    metadata: dict[str, Any] | None = None
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(KubeObject):
    GROUP: ClassVar[str] = RESOURCE_GROUP
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "ResourceClaimTemplate"
    PLURAL: ClassVar[str] = "resourceclaimtemplates"

    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)


# --- ResourceSlice -------------------------------------------------------------------------


class DeviceAttribute(KubeModel):
    """Exactly one of a 64-bit integer, a boolean, a string or a semantic version."""

    int_value: Int64 | None = Field(default=None, alias="int")
    bool_value: bool | None = Field(default=None, alias="bool")
    string_value: str | None = Field(default=None, alias="string")
    version_value: str | None = Field(default=None, alias="version")

    def value(self) -> int | bool | str | None:
        """The one value set (a version as its string), None when none is."""
        for found in (self.int_value, self.bool_value, self.string_value, self.version_value):
            if found is not None:
                return found
        return None


class DeviceCapacity(KubeModel):
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"requestPolicy"})

    value: QuantityField


class Counter(KubeModel):
    value: QuantityField


class CounterSet(KubeModel):
    """Named counters a pool shares (partitionable devices): what its devices consume."""

    name: str = ""
    counters: dict[str, Counter] | None = None


class DeviceCounterConsumption(KubeModel):
    """The amounts of the counters of one of its pool's counter sets a device uses while
    allocated."""

    counter_set: str = ""
    counters: dict[str, Counter] | None = None


class Device(KubeModel):
    """One device of a pool: its name, attributes and capacities, keyed by qualified name
    (`domain/id`, or a bare id meaning the driver's own domain)."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"bindingConditions", "bindingFailureConditions"}
    )

    name: str
    attributes: dict[str, DeviceAttribute] | None = None
    capacity: dict[str, DeviceCapacity] | None = None
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] | None = None
    binds_to_node: bool | None = None
    allow_multiple_allocations: bool | None = None
    consumes_counters: list[DeviceCounterConsumption] | None = None


class ResourcePool(KubeModel):
    """A driver's pool: its slices share a name; only the highest generation counts, and the
    pool is whole once `resourceSliceCount` slices of it are seen."""

    name: str = ""
    generation: Int64 = 0
    resource_slice_count: Int64 = 1


class ResourceSliceSpec(KubeModel):
    """One slice of a pool: devices, or (never both) the counter sets its devices share."""

    driver: str = ""  # required by kube's validation (apis.resourcevalidation), as the pool
    pool: ResourcePool = Field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] | None = None
    shared_counters: list[CounterSet] | None = None


class ResourceSlice(KubeObject):
    """Devices of one pool of one driver (cluster-scoped), reachable from one node
    (`nodeName`), the nodes of a `nodeSelector`, every node (`allNodes`), or per device."""

    GROUP: ClassVar[str] = RESOURCE_GROUP
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "ResourceSlice"
    PLURAL: ClassVar[str] = "resourceslices"
    NAMESPACED: ClassVar[bool] = False

    spec: ResourceSliceSpec = Field(default_factory=ResourceSliceSpec)


RESOURCE_KINDS: tuple[type[KubeObject], ...] = (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
"""The resource.k8s.io kinds the pod scheduler reads, in the order a world is fed."""
