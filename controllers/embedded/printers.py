"""Table columns of the core kinds the embedded server serves, as kube-apiserver's printers
give them to `kubectl get` (Namespace, Pod, Node, Event, Lease, PriorityClass, Deployment,
ReplicaSet, StatefulSet, Job): column definitions, and the cells of one object. Columns with
priority 1 show with `-o wide` only. Ages and times are printed as kubectl prints them (`45s`,
`3m12s`, `5h`, `2d3h`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from apis.meta import parse_time

__all__ = ["PRINTERS", "Printer", "column", "format_selector", "human_duration", "since"]

Row = Callable[[dict[str, Any], datetime], list[Any]]


def column(
    name: str, priority: int = 0, type_: str = "string", format_: str = ""
) -> dict[str, Any]:
    """A meta.k8s.io TableColumnDefinition."""
    return {
        "name": name,
        "type": type_,
        "format": format_,
        "description": "",
        "priority": priority,
    }


def human_duration(seconds: float) -> str:
    """A duration as kubectl's ages read (Kubernetes' `duration.HumanDuration`)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // (24 * 365)}y{days}d" if days else f"{hours // (24 * 365)}y"
    return f"{hours // (24 * 365)}y"


def since(stamp: Any, now: datetime) -> str:
    """The age of an RFC 3339 timestamp, `<unknown>` when there is none."""
    if not isinstance(stamp, str) or not stamp:
        return "<unknown>"
    try:
        return human_duration((now - parse_time(stamp)).total_seconds())
    except ValueError:
        return "<invalid>"


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since(_meta(obj).get("creationTimestamp"), now)


def _namespace(obj: dict[str, Any], now: datetime) -> list[Any]:
    phase = (obj.get("status") or {}).get("phase") or ""
    return [_meta(obj)["name"], phase, _age(obj, now)]


def _pod(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    for s in statuses:
        waiting = (s.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            reason = waiting["reason"]
    if _meta(obj).get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [
        _meta(obj)["name"],
        f"{ready}/{len(containers)}",
        reason,
        restarts,
        _age(obj, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"0/{len(gates)}" if gates else "<none>",
    ]


def _node(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    state = {"True": "Ready", "False": "NotReady"}.get(conditions.get("Ready") or "", "Unknown")
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    prefix = "node-role.kubernetes.io/"
    labels = _meta(obj).get("labels") or {}
    roles = sorted(key[len(prefix) :] for key in labels if key.startswith(prefix))
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        _meta(obj)["name"],
        state,
        ",".join(roles) or "<none>",
        _age(obj, now),
        info.get("kubeletVersion") or "",
        addresses.get("InternalIP") or "<none>",
        addresses.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _event(obj: dict[str, Any], now: datetime) -> list[Any]:
    """A core/v1 Event (the events.k8s.io view is converted to it first)."""
    series = obj.get("series") or {}
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    last = series.get("lastObservedTime") or obj.get("lastTimestamp") or obj.get("eventTime")
    involved = obj.get("involvedObject") or {}
    source = obj.get("source") or {}
    if source.get("component"):
        origin = ", ".join(v for v in (source["component"], source.get("host")) if v)
    else:
        parts = (obj.get("reportingComponent"), obj.get("reportingInstance"))
        origin = ", ".join(v for v in parts if v)
    count = series.get("count") or obj.get("count") or 1
    return [
        since(last, now),
        obj.get("type") or "",
        obj.get("reason") or "",
        f"{(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
        involved.get("fieldPath") or "",
        origin,
        (obj.get("message") or "").strip(),
        since(first, now),
        count,
        _meta(obj)["name"],
    ]


def _lease(obj: dict[str, Any], now: datetime) -> list[Any]:
    holder = (obj.get("spec") or {}).get("holderIdentity") or ""
    return [_meta(obj)["name"], holder, _age(obj, now)]


def _priority_class(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [
        _meta(obj)["name"],
        obj.get("value", 0),
        bool(obj.get("globalDefault")),
        _age(obj, now),
        obj.get("preemptionPolicy") or "",
    ]


def format_selector(selector: Any) -> str:
    """A LabelSelector as kubectl prints it (metav1.FormatLabelSelector): `app=web,tier in
    (a,b)`, `<none>` when it selects everything."""
    if not isinstance(selector, dict):
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for req in selector.get("matchExpressions") or ():
        key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
        if op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            parts.append(f"{key} {op.lower()} ({','.join(sorted(values))})")
    return ",".join(parts) or "<none>"


def _template(obj: dict[str, Any]) -> tuple[str, str]:
    """The (containers, images) cells of a workload's pod template."""
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    return (
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _deployment(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    desired = spec.get("replicas", 1)
    containers, images = _template(obj)
    return [
        _meta(obj)["name"],
        f"{_int(status.get('readyReplicas'))}/{_int(desired)}",
        _int(status.get("updatedReplicas")),
        _int(status.get("availableReplicas")),
        _age(obj, now),
        containers,
        images,
        format_selector(spec.get("selector")),
    ]


def _replica_set(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers, images = _template(obj)
    return [
        _meta(obj)["name"],
        _int(spec.get("replicas", 1)),
        _int(status.get("replicas")),
        _int(status.get("readyReplicas")),
        _age(obj, now),
        containers,
        images,
        format_selector(spec.get("selector")),
    ]


def _stateful_set(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers, images = _template(obj)
    return [
        _meta(obj)["name"],
        f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas', 1))}",
        _age(obj, now),
        containers,
        images,
    ]


def _job_state(status: dict[str, Any]) -> str:
    conditions = {
        c.get("type"): c.get("status")
        for c in status.get("conditions") or []
        if isinstance(c, dict)
    }
    for state in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        if conditions.get(state) == "True":
            return state
    return "Terminating" if _int(status.get("terminating")) else "Running"


def _job(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    succeeded = _int(status.get("succeeded"))
    completions, parallelism = spec.get("completions"), _int(spec.get("parallelism", 1))
    if isinstance(completions, int):
        done = f"{succeeded}/{completions}"
    elif parallelism > 1:
        done = f"{succeeded}/1 of {parallelism}"
    else:
        done = f"{succeeded}/1"
    start, end = status.get("startTime"), status.get("completionTime")
    duration = ""
    if isinstance(start, str) and start:
        try:
            finish = parse_time(end) if isinstance(end, str) and end else now
            duration = human_duration((finish - parse_time(start)).total_seconds())
        except ValueError:
            duration = "<invalid>"
    containers, images = _template(obj)
    return [
        _meta(obj)["name"],
        _job_state(status),
        done,
        duration,
        _age(obj, now),
        containers,
        images,
        format_selector(spec.get("selector")),
    ]


class Printer:
    """The columns of a kind and the function giving one object's cells."""

    def __init__(self, columns: list[dict[str, Any]], row: Row) -> None:
        self.columns = columns
        self.row = row


_NAME = column("Name", format_="name")
REPLICA_COLUMNS = [
    _NAME,
    column("Desired", type_="integer"),
    column("Current", type_="integer"),
    column("Ready", type_="integer"),
    column("Age"),
    column("Containers", 1),
    column("Images", 1),
    column("Selector", 1),
]
"""kubectl's columns of a ReplicaSet, and of a ReplicationController."""

# (group, kind) -> printer; the events.k8s.io Event is printed from its core/v1 view.
PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "Namespace"): Printer([_NAME, column("Status"), column("Age")], _namespace),
    ("", "Pod"): Printer(
        [
            _NAME,
            column("Ready"),
            column("Status"),
            column("Restarts", type_="integer"),
            column("Age"),
            column("IP", 1),
            column("Node", 1),
            column("Nominated Node", 1),
            column("Readiness Gates", 1),
        ],
        _pod,
    ),
    ("", "Node"): Printer(
        [
            _NAME,
            column("Status"),
            column("Roles"),
            column("Age"),
            column("Version"),
            column("Internal-IP", 1),
            column("External-IP", 1),
            column("OS-Image", 1),
            column("Kernel-Version", 1),
            column("Container-Runtime", 1),
        ],
        _node,
    ),
    ("", "Event"): Printer(
        [
            column("Last Seen"),
            column("Type"),
            column("Reason"),
            column("Object"),
            column("Subobject", 1),
            column("Source", 1),
            column("Message"),
            column("First Seen", 1),
            column("Count", 1, "integer"),
            column("Name", 1),
        ],
        _event,
    ),
    ("coordination.k8s.io", "Lease"): Printer([_NAME, column("Holder"), column("Age")], _lease),
    ("scheduling.k8s.io", "PriorityClass"): Printer(
        [
            _NAME,
            column("Value", type_="integer"),
            column("Global-Default", type_="boolean"),
            column("Age"),
            column("PreemptionPolicy"),
        ],
        _priority_class,
    ),
    ("apps", "Deployment"): Printer(
        [
            _NAME,
            column("Ready"),
            column("Up-to-date", type_="integer"),
            column("Available", type_="integer"),
            column("Age"),
            column("Containers", 1),
            column("Images", 1),
            column("Selector", 1),
        ],
        _deployment,
    ),
    ("apps", "ReplicaSet"): Printer(
        REPLICA_COLUMNS,
        _replica_set,
    ),
    ("apps", "StatefulSet"): Printer(
        [_NAME, column("Ready"), column("Age"), column("Containers", 1), column("Images", 1)],
        _stateful_set,
    ),
    ("batch", "Job"): Printer(
        [
            _NAME,
            column("Status"),
            column("Completions"),
            column("Duration"),
            column("Age"),
            column("Containers", 1),
            column("Images", 1),
            column("Selector", 1),
        ],
        _job,
    ),
}
