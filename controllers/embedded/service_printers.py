"""Table columns of v1 Service and ReplicationController for `kubectl get`, as kube-apiserver's
printers give them: a Service's type, cluster IP, external IP (`<none>`, `<pending>` for a load
balancer without ingress, the external name), ports (`80/TCP`, `80:30080/TCP` with a node port)
and, with `-o wide`, its selector; a ReplicationController's desired, current and ready counts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from controllers.embedded.printers import REPLICA_COLUMNS, Printer, column, since

__all__ = ["SERVICE_PRINTERS", "format_labels"]

_NONE = "<none>"


def format_labels(labels: Any) -> str:
    """A label map as kubectl prints a selector map: `a=1,b=2` sorted, `<none>` when empty."""
    if not isinstance(labels, dict) or not labels:
        return _NONE
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def _strings(values: Any) -> list[str]:
    return [v for v in values or () if isinstance(v, str)]


def _load_balancer(status: dict[str, Any], wide: bool) -> str:
    ingress = (status.get("loadBalancer") or {}).get("ingress") or []
    found = [i.get("ip") or i.get("hostname") or "" for i in ingress if isinstance(i, dict)]
    text = ",".join(v for v in found if v)
    if not wide and len(text) > 16:
        text = text[:13] + "..."
    return text


def _external_ip(spec: dict[str, Any], status: dict[str, Any]) -> str:
    kind = spec.get("type") or "ClusterIP"
    external = _strings(spec.get("externalIPs"))
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else _NONE
    if kind == "LoadBalancer":
        balancer = _load_balancer(status, wide=False)
        if external:
            return ",".join([*external, *([balancer] if balancer else [])])
        return balancer or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _ports(ports: Any) -> str:
    cells = []
    for port in ports or ():
        if not isinstance(port, dict):
            continue
        protocol = port.get("protocol") or "TCP"
        node_port = port.get("nodePort")
        if isinstance(node_port, int) and node_port > 0:
            cells.append(f"{port.get('port', 0)}:{node_port}/{protocol}")
        else:
            cells.append(f"{port.get('port', 0)}/{protocol}")
    return ",".join(cells) or _NONE


def _service(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        spec.get("type") or "ClusterIP",
        spec.get("clusterIP") or _NONE,
        _external_ip(spec, status),
        _ports(spec.get("ports")),
        _age(obj, now),
        format_labels(spec.get("selector")),
    ]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _replication_controller(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    containers = [c for c in template.get("containers") or [] if isinstance(c, dict)]
    return [
        obj["metadata"]["name"],
        _int(spec.get("replicas", 1)),
        _int(status.get("replicas")),
        _int(status.get("readyReplicas")),
        _age(obj, now),
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        format_labels(spec.get("selector")),
    ]


_NAME = column("Name", format_="name")

SERVICE_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "Service"): Printer(
        [
            _NAME,
            column("Type"),
            column("Cluster-IP"),
            column("External-IP"),
            column("Port(s)"),
            column("Age"),
            column("Selector", 1),
        ],
        _service,
    ),
    ("", "ReplicationController"): Printer(
        REPLICA_COLUMNS,
        _replication_controller,
    ),
}
