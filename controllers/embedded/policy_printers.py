"""Table columns of policy/v1 PodDisruptionBudget for `kubectl get`, as kube-apiserver's printer
gives them: `MIN AVAILABLE` and `MAX UNAVAILABLE` as set (`N/A` when not), `ALLOWED
DISRUPTIONS` from the status the disruption controller writes (0 before it has)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from controllers.embedded.printers import Printer, column, since

__all__ = ["POLICY_PRINTERS"]

_NOT_SET = "N/A"


def _budget(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        obj["metadata"]["name"],
        _NOT_SET if low is None else str(low),
        _NOT_SET if high is None else str(high),
        int(status.get("disruptionsAllowed") or 0),
        since((obj.get("metadata") or {}).get("creationTimestamp"), now),
    ]


POLICY_PRINTERS: dict[tuple[str, str], Printer] = {
    ("policy", "PodDisruptionBudget"): Printer(
        [
            column("Name", format_="name"),
            column("Min Available"),
            column("Max Unavailable"),
            column("Allowed Disruptions", type_="integer"),
            column("Age"),
        ],
        _budget,
    ),
}
