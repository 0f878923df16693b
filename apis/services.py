"""core/v1 Service: the pods a Service selects are what kube-scheduler's default topology
spreading counts together (`spec.selector`), and what `kubectl get services` shows.

Only the fields the scheduler reads and `kubectl get` prints are typed (type, selector, cluster
and external IPs, ports); the others are kept as they came (`UNTYPED_FIELDS`), so a typo is
still reported as an unknown field. The status (load balancer ingress) is typed loosely.

`service_defaults` and `replication_controller_defaults` are what kube-apiserver fills in on
create (a Service's type, session affinity, traffic policies, IP family, each port's protocol
and target port and, given an address, its cluster IP; node ports are not allocated; a
ReplicationController's selector and labels from its template, one replica).
`service_problems` and `replication_controller_problems` are its validation of what the
scheduler reads of them (a Service's `spec.ports` required unless headless or ExternalName,
port and target port numbers in range, the selector's label keys and values; a
ReplicationController's selector required and matching its template's labels), in kube's
words.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Container
from typing import Any, ClassVar

from pydantic import Field

from apis.errors import FieldProblem
from apis.fieldrules import as_dict, as_list, invalid, required
from apis.meta import Int32, KubeModel, KubeObject
from apis.names import NameRule
from apis.podspecvalidation import labels_problems
from apis.workloads import ReplicaSet, ReplicationController, StatefulSet

__all__ = [
    "SELECTING_MODELS",
    "Service",
    "ServicePort",
    "ServiceSpec",
    "free_cluster_ip",
    "replication_controller_defaults",
    "replication_controller_problems",
    "service_defaults",
    "service_problems",
]


class ServicePort(KubeModel):
    """One port a Service exposes."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"appProtocol"})

    name: str | None = None
    protocol: str | None = None
    port: Int32 | None = None
    target_port: int | str | None = None
    node_port: Int32 | None = None


class ServiceSpec(KubeModel):
    """What a Service selects and exposes."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {
            *("sessionAffinity", "sessionAffinityConfig", "loadBalancerIP"),
            *("loadBalancerSourceRanges", "loadBalancerClass", "externalTrafficPolicy"),
            *("internalTrafficPolicy", "healthCheckNodePort", "publishNotReadyAddresses"),
            *("ipFamilies", "ipFamilyPolicy", "allocateLoadBalancerNodePorts"),
            "trafficDistribution",
        }
    )

    type: str | None = None
    selector: dict[str, str] | None = None
    """The pods it selects (labels); absent or empty: none (a Service without a selector)."""
    cluster_ip: str | None = Field(default=None, alias="clusterIP")
    cluster_ips: list[str] | None = Field(default=None, alias="clusterIPs")
    external_ips: list[str] | None = Field(default=None, alias="externalIPs")
    external_name: str | None = None
    ports: list[ServicePort] | None = None


class Service(KubeObject):
    """A v1 Service (namespaced)."""

    KIND: ClassVar[str] = "Service"
    PLURAL: ClassVar[str] = "services"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("svc",)
    NAME_RULE: ClassVar[NameRule | None] = "dns1035"
    HAS_STATUS: ClassVar[bool] = True

    spec: ServiceSpec | None = None
    status: dict[str, Any] | None = None


_PORT_RANGE = "must be between 1 and 65535, inclusive"


def service_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    """What kube-apiserver refuses in a Service's spec, of the fields above (kube's order); a
    port's absent targetPort is its port, as the server defaults it."""
    problems: list[FieldProblem] = []
    ports = as_list(spec.get("ports"))
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and spec.get("type") != "ExternalName":
        problems.append(required("spec.ports"))
    for i, raw in enumerate(ports):
        port = as_dict(raw)
        number = port.get("port")
        if not _in_range(number):
            problems.append(invalid(f"spec.ports[{i}].port", number or 0, _PORT_RANGE))
        target = port.get("targetPort", number)
        if (isinstance(target, int) or target is None) and not _in_range(target):
            problems.append(invalid(f"spec.ports[{i}].targetPort", target or 0, _PORT_RANGE))
    selector = spec.get("selector")
    if isinstance(selector, dict):
        problems += labels_problems(selector, "spec.selector")
    return problems


def _in_range(number: Any) -> bool:
    return isinstance(number, int) and not isinstance(number, bool) and 0 < number <= 65535


def replication_controller_problems(spec: dict[str, Any]) -> list[FieldProblem]:
    """A ReplicationController's selector: required (the API server defaults it to the
    template's labels first), and matched by the template's labels."""
    labels = as_dict(as_dict(as_dict(spec.get("template")).get("metadata")).get("labels"))
    selector = as_dict(spec.get("selector")) or labels
    if not selector:
        return [required("spec.selector")]
    if spec.get("template") is not None and any(labels.get(k) != v for k, v in selector.items()):
        detail = "`selector` does not match template `labels`"
        return [invalid("spec.template.metadata.labels", labels, detail)]
    return []


def service_defaults(wire: dict[str, Any], cluster_ip: str | None = None) -> None:
    """kube-apiserver's defaults of a new Service, in place; `cluster_ip` the address its
    allocator chose (used unless the Service is headless, ExternalName or names its own)."""
    spec = wire.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    kind = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in as_list(spec.get("ports")):
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])
    if kind == "ExternalName":
        return
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    if cluster_ip is not None and not spec.get("clusterIP"):
        spec["clusterIP"] = cluster_ip
    if spec.get("clusterIP"):
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("ipFamilies", ["IPv6" if ":" in spec["clusterIP"] else "IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")


def replication_controller_defaults(wire: dict[str, Any]) -> None:
    """kube-apiserver's defaults of a ReplicationController, in place: the template's labels
    as its selector and its own labels when it has none, one replica."""
    spec = wire.get("spec")
    if not isinstance(spec, dict):
        return
    labels = as_dict(as_dict(as_dict(spec.get("template")).get("metadata")).get("labels"))
    if labels and not spec.get("selector"):
        spec["selector"] = dict(labels)
    meta = wire.setdefault("metadata", {})
    if labels and isinstance(meta, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)
    spec.setdefault("replicas", 1)


SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
"""kube-apiserver's default `--service-cluster-ip-range`."""


def free_cluster_ip(taken: Container[Any]) -> str:
    """The first address of SERVICE_CIDR not in `taken` (the network address excluded)."""
    for address in SERVICE_CIDR.hosts():
        if str(address) not in taken:
            return str(address)
    raise ValueError("the service cluster IP range is full")


SELECTING_MODELS: tuple[type[KubeObject], ...] = (
    Service,
    ReplicationController,
    ReplicaSet,
    StatefulSet,
)
"""The kinds whose selectors give kube-scheduler's default topology spreading its selector
(what `scheduler run` watches for it)."""
