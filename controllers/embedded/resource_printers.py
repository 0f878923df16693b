"""Table columns of the resource.k8s.io/v1 kinds (dynamic resource allocation) for `kubectl get`,
as kube-apiserver's printers give them: DeviceClass and ResourceClaimTemplate show NAME and AGE;
a ResourceClaim its STATE, the states that apply joined by commas (`deleted` once marked for
deletion, `pending` while unallocated and not deleted, `allocated`, then `reserved` when a
consumer is recorded: `allocated,reserved`); a ResourceSlice its NODE, DRIVER and POOL (the node
empty for a slice that is not one node's).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from controllers.embedded.printers import Printer, column, since

__all__ = ["RESOURCE_PRINTERS", "claim_state"]

_GROUP = "resource.k8s.io"


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def claim_state(obj: dict[str, Any]) -> str:
    """A ResourceClaim's STATE cell: `pending`, `allocated`, `allocated,reserved`, `deleted`..."""
    deleted = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    status = obj.get("status") or {}
    states = ["deleted"] if deleted else []
    if status.get("allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _named(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [obj["metadata"]["name"], _age(obj, now)]


def _claim(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [obj["metadata"]["name"], claim_state(obj), _age(obj, now)]


def _slice(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    return [
        obj["metadata"]["name"],
        spec.get("nodeName") or "",
        spec.get("driver") or "",
        (spec.get("pool") or {}).get("name") or "",
        _age(obj, now),
    ]


_NAME = column("Name", format_="name")
_AGE = column("Age")

RESOURCE_PRINTERS: dict[tuple[str, str], Printer] = {
    (_GROUP, "DeviceClass"): Printer([_NAME, _AGE], _named),
    (_GROUP, "ResourceClaim"): Printer([_NAME, column("State"), _AGE], _claim),
    (_GROUP, "ResourceClaimTemplate"): Printer([_NAME, _AGE], _named),
    (_GROUP, "ResourceSlice"): Printer(
        [_NAME, column("Node"), column("Driver"), column("Pool"), _AGE], _slice
    ),
}
