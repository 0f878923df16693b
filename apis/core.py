"""Subsets of core Kubernetes objects the project reads or writes: Namespace, Pod, Node,
Binding, Eviction, Event (core and events.k8s.io) and Lease.

Only the fields the project uses are typed; everything else is kept as it came.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from apis.meta import Int32, Int64, KubeModel, KubeObject, MicroTime, Time
from apis.names import NameRule
from apis.podaffinity import PodAffinity, PodAntiAffinity
from apis.podclaims import PodResourceClaim, PodResourceClaimStatus, ResourceClaimRef
from apis.quantity import ResourceList
from apis.topologyspread import TopologySpreadConstraint

__all__ = [
    "Affinity",
    "Binding",
    "ConfigMap",
    "Container",
    "ContainerImage",
    "ContainerPort",
    "CoreEvent",
    "Event",
    "EventSeries",
    "Eviction",
    "Lease",
    "LeaseSpec",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "NodeTaint",
    "ObjectReference",
    "PersistentVolumeClaimVolumeSource",
    "Pod",
    "PodResourceClaim",
    "PodResourceClaimStatus",
    "PodSchedulingGate",
    "PodSpec",
    "PodStatus",
    "PodToleration",
    "PreferredSchedulingTerm",
    "ResourceClaimRef",
    "ResourceRequirements",
    "Volume",
]


class ObjectReference(KubeModel):
    """A reference to another object (core/v1 ObjectReference)."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"fieldPath"})

    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None


class Namespace(KubeObject):
    """A namespace (cluster-scoped)."""

    KIND: ClassVar[str] = "Namespace"
    PLURAL: ClassVar[str] = "namespaces"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("ns",)
    NAME_RULE: ClassVar[NameRule | None] = "label"
    HAS_STATUS: ClassVar[bool] = True

    spec: dict[str, Any] | None = None
    status: dict[str, Any] | None = None


class ConfigMap(KubeObject):
    """A v1 ConfigMap: string data (what the example add-on manager rolls out)."""

    KIND: ClassVar[str] = "ConfigMap"
    PLURAL: ClassVar[str] = "configmaps"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("cm",)

    data: dict[str, str] | None = None
    binary_data: dict[str, str] | None = None
    immutable: bool | None = None


# --- pods and nodes ----------------------------------------------------------------------------


class ResourceRequirements(KubeModel):
    """A container's resource requests and limits, and the pod's resource claims it uses."""

    requests: ResourceList | None = None
    limits: ResourceList | None = None
    claims: list[ResourceClaimRef] | None = None


class ContainerPort(KubeModel):
    """A port a container exposes; a `hostPort` above 0 takes that port on the node (the
    NodePorts plugin). `hostIP` defaults to 0.0.0.0 (every address), `protocol` to TCP."""

    container_port: Int32
    host_port: Int32 | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    protocol: str | None = None
    name: str | None = None


class Container(KubeModel):
    """A container of a pod: its name, image, resources and ports matter for scheduling."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {
            *("command", "args", "workingDir", "envFrom", "env", "resizePolicy"),
            *("volumeMounts", "volumeDevices", "livenessProbe"),
            *("readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath"),
            *("terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin"),
            *("stdinOnce", "tty"),
        }
    )

    name: str
    image: str | None = None
    resources: ResourceRequirements | None = None
    ports: list[ContainerPort] | None = None
    # "Always" on an init container makes it a sidecar, which changes the pod's requests.
    restart_policy: str | None = None
    # A rule whose action is RestartAllContainers needs a node declaring that feature.
    restart_policy_rules: list[dict[str, Any]] | None = None


class NodeSelectorRequirement(KubeModel):
    """A node selector requirement (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] | None = None


class NodeSelectorTerm(KubeModel):
    """Requirements ANDed; the terms of a NodeSelector are ORed."""

    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(KubeModel):
    """Required node affinity: a node must match at least one term."""

    node_selector_terms: list[NodeSelectorTerm]


class PreferredSchedulingTerm(KubeModel):
    """A weighted preference for nodes matching a term."""

    weight: Int32
    preference: NodeSelectorTerm


class NodeAffinity(KubeModel):
    """Required and preferred node affinity."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )


class Affinity(KubeModel):
    """Node affinity, inter-pod affinity and anti-affinity."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


class PodToleration(KubeModel):
    """A pod toleration of node taints."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = None


class PodSchedulingGate(KubeModel):
    """A gate that keeps a pod out of scheduling until removed (`spec.schedulingGates`)."""

    name: str


class PersistentVolumeClaimVolumeSource(KubeModel):
    """A pod volume naming a claim of the pod's namespace."""

    claim_name: str
    read_only: bool | None = None


class Volume(KubeModel):
    """A pod volume: only the claims (`persistentVolumeClaim`, and `ephemeral`, whose claim
    `<pod>-<volume>` the ephemeral volume controller creates) are typed; every other source is
    kept as it came."""

    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    name: str
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: dict[str, Any] | None = None


class PodSpec(KubeModel):
    """The scheduling-relevant part of a pod spec."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {
            *("ephemeralContainers", "restartPolicy"),
            *("activeDeadlineSeconds", "dnsPolicy", "serviceAccountName", "serviceAccount"),
            *("automountServiceAccountToken", "hostPID", "hostIPC"),
            *("shareProcessNamespace", "securityContext", "imagePullSecrets", "hostname"),
            *("subdomain", "hostAliases", "dnsConfig", "readinessGates", "runtimeClassName"),
            *("enableServiceLinks",),
            *("setHostnameAsFQDN", "os"),
            *("resources", "hostnameOverride"),
        }
    )

    scheduler_name: str | None = None
    node_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: list[PodToleration] | None = None
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] | None = None
    overhead: ResourceList | None = None
    priority: Int32 | None = None
    priority_class_name: str | None = None
    preemption_policy: Literal["Never", "PreemptLowerPriority"] | None = None
    scheduling_gates: list[PodSchedulingGate] | None = None
    termination_grace_period_seconds: Int64 | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None
    volumes: list[Volume] | None = None
    # Both set (hostNetwork true, hostUsers false): the pod needs a node declaring
    # UserNamespacesHostNetworkSupport (NodeDeclaredFeatures).
    host_network: bool | None = None
    host_users: bool | None = None
    # Devices the pod needs (DynamicResources): claims by name or made from templates.
    resource_claims: list[PodResourceClaim] | None = None


class PodStatus(KubeModel):
    """Pod phase and conditions."""

    # Written by the kubelet; its many fields change with the Kubernetes version.
    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    phase: str | None = None
    conditions: list[dict[str, Any]] | None = None
    nominated_node_name: str | None = None
    # The claims kube-controller-manager made from the pod's templates (name -> claim name).
    resource_claim_statuses: list[PodResourceClaimStatus] | None = None


class Pod(KubeObject):
    """A pod."""

    KIND: ClassVar[str] = "Pod"
    PLURAL: ClassVar[str] = "pods"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("po",)
    HAS_STATUS: ClassVar[bool] = True

    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus | None = None


class NodeTaint(KubeModel):
    """A node taint (NoSchedule, PreferNoSchedule, NoExecute)."""

    key: str
    value: str | None = None
    effect: str
    time_added: Time | None = None


class NodeSpec(KubeModel):
    """Node taints and cordon state."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"podCIDR", "podCIDRs", "providerID", "configSource", "externalID"}
    )

    taints: list[NodeTaint] | None = None
    unschedulable: bool | None = None


class ContainerImage(KubeModel):
    """An image present on a node (`status.images`): its names and size."""

    names: list[str] | None = None
    size_bytes: Int64 | None = None


class NodeStatus(KubeModel):
    """Node resources, conditions and the images it holds."""

    # Written by the kubelet; its many fields change with the Kubernetes version.
    ALL_FIELDS_KNOWN: ClassVar[bool] = False

    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    conditions: list[dict[str, Any]] | None = None
    images: list[ContainerImage] | None = None
    declared_features: list[str] | None = None
    """The features the node's kubelet declares (NodeDeclaredFeatures), sorted."""


class Node(KubeObject):
    """A node (cluster-scoped)."""

    KIND: ClassVar[str] = "Node"
    PLURAL: ClassVar[str] = "nodes"
    NAMESPACED: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("no",)
    HAS_STATUS: ClassVar[bool] = True

    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus | None = None


class Binding(KubeObject):
    """The body of `pods/binding`: assigns a pod to a node."""

    KIND: ClassVar[str] = "Binding"
    PLURAL: ClassVar[str] = "bindings"

    target: ObjectReference


class Eviction(KubeObject):
    """The body of `pods/eviction` (policy/v1)."""

    GROUP: ClassVar[str] = "policy"
    KIND: ClassVar[str] = "Eviction"
    PLURAL: ClassVar[str] = "evictions"

    delete_options: dict[str, Any] | None = None


# --- events and leases -------------------------------------------------------------------------


class CoreEvent(KubeObject):
    """A core/v1 Event (what `kubectl get events` lists)."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"source", "series", "related"})

    KIND: ClassVar[str] = "Event"
    PLURAL: ClassVar[str] = "events"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("ev",)

    involved_object: ObjectReference | None = None
    reason: str | None = None
    message: str | None = None
    type: str | None = None
    count: Int32 | None = None
    first_timestamp: Time | None = None
    last_timestamp: Time | None = None
    event_time: MicroTime | None = None
    reporting_component: str | None = None
    reporting_instance: str | None = None
    action: str | None = None


class EventSeries(KubeModel):
    """Repeats of an events.k8s.io Event."""

    count: Int32
    last_observed_time: MicroTime


class Event(KubeObject):
    """An events.k8s.io/v1 Event, as OCM's event recorder writes them."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
        }
    )

    GROUP: ClassVar[str] = "events.k8s.io"
    KIND: ClassVar[str] = "Event"
    PLURAL: ClassVar[str] = "events"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("ev",)

    event_time: MicroTime | None = None
    series: EventSeries | None = None
    reporting_controller: str | None = None
    reporting_instance: str | None = None
    action: str | None = None
    reason: str | None = None
    regarding: ObjectReference | None = None
    related: ObjectReference | None = None
    note: str | None = None
    type: Literal["Normal", "Warning"] | None = None


class LeaseSpec(KubeModel):
    """Who holds a lease and until when."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"strategy", "preferredHolder"})

    holder_identity: str | None = None
    lease_duration_seconds: Int32 | None = None
    acquire_time: MicroTime | None = None
    renew_time: MicroTime | None = None
    lease_transitions: Int32 | None = None


class Lease(KubeObject):
    """A coordination.k8s.io/v1 Lease, used for leader election."""

    GROUP: ClassVar[str] = "coordination.k8s.io"
    KIND: ClassVar[str] = "Lease"
    PLURAL: ClassVar[str] = "leases"

    spec: LeaseSpec = Field(default_factory=LeaseSpec)
