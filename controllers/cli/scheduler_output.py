"""What `placement scheduler simulate` prints: the `v1 List` of -o json|yaml and the table of
-o table|wide (one row per pod, then the PodGroups, ElasticQuotas and the plugins' report).
-o table keeps to 120 columns: a MESSAGE cut in its column is printed whole under the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from apis.core import Pod
from controllers.cli.tables import TABLE_WIDTH, Cell, column_widths, table
from placement.pods.simulator.simulation import (
    DEFAULT_SCHEDULER,
    DISRUPTION_TARGET,
    SimulationResult,
)

__all__ = ["foreign_pods_line", "simulation_list", "simulation_table"]

HEADER = ["NAMESPACE", "NAME", "NODE", "STATUS", "REASON", "MESSAGE"]
WIDE_HEADER = ["NAMESPACE", "NAME", "NODE", "STATUS", "REASON", "PRIORITY", "NOMINATED", "MESSAGE"]
_NAMED = 3  # pods named on the line of a message they share, under the table


def simulation_list(result: SimulationResult) -> dict[str, Any]:
    """The `v1 List` printed by -o json and -o yaml."""
    items: list[dict[str, Any]] = [p.to_wire() for p in result.pods]
    items.extend(p.to_wire() for p in result.evicted)
    items.extend(o.to_wire() for o in result.objects)
    items.extend(e.to_wire() for e in result.events)
    return {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}


def _condition(pod: Pod, kind: str) -> dict[str, Any] | None:
    for condition in (pod.status.conditions or []) if pod.status else []:
        if condition.get("type") == kind:
            return condition
    return None


def _state(
    pod: Pod, result: SimulationResult, evicted: bool, names: Sequence[str]
) -> tuple[str, str, str]:
    """(STATUS, REASON, MESSAGE) of a pod as the table shows it; `names`: the profiles'."""
    disruption = _condition(pod, DISRUPTION_TARGET)
    if evicted or pod.metadata.deletion_timestamp is not None:
        state = "Evicted" if evicted else "Terminating"
        if disruption is not None:
            return state, str(disruption.get("reason", "")), str(disruption.get("message", ""))
        return state, "", ""
    if pod.spec.node_name:
        phase = pod.status.phase if pod.status and pod.status.phase else "Running"
        return phase, "", ""
    if pod.spec.scheduling_gates:
        gates = ", ".join(g.name for g in pod.spec.scheduling_gates)
        return "SchedulingGated", "SchedulingGated", f"waiting for gates: {gates}"
    if (pod.spec.scheduler_name or "") not in names:
        runs = ", ".join(repr(n) for n in names)
        message = f"spec.schedulerName is {pod.spec.scheduler_name!r}; this simulation runs {runs}"
        return "Pending", "OtherScheduler", message
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        return "Pending", str(scheduled.get("reason", "")), str(scheduled.get("message", ""))
    return "Pending", "", ""


def _rows(result: SimulationResult, wide: bool, names: Sequence[str]) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    pods = [(p, False) for p in result.pods] + [(p, True) for p in result.evicted]
    for pod, evicted in pods:
        state, reason, message = _state(pod, result, evicted, names)
        node = pod.spec.node_name or "<none>"
        row: list[Cell] = [pod.namespace, pod.name, node, state, reason or "-"]
        if wide:
            priority = pod.spec.priority_class_name or (
                str(pod.spec.priority) if pod.spec.priority is not None else "-"
            )
            nominated = (pod.status.nominated_node_name if pod.status else None) or "-"
            row.extend([priority, nominated])
        row.append(message)
        rows.append(row)
    return rows


def _object_lines(result: SimulationResult) -> list[str]:
    """Each PodGroup's status as its controller writes it and each ElasticQuota's conditions
    that are not True, then the plugins' report (gangs; quotas with min, max, used and
    borrowed; preemptions with their victims and rule)."""
    lines = []
    for obj in result.objects:
        if obj.KIND not in ("PodGroup", "ElasticQuota"):
            continue
        status = dict(obj.to_wire().get("status") or {})
        conditions = status.pop("conditions", None) or []
        # A quota's used is in the capacity plugin's report line with its min, max, borrowed.
        shown = {} if obj.KIND == "ElasticQuota" else status
        parts = [f"{key} {_short(value)}" for key, value in shown.items()]
        parts += [
            f"{c['type']}={c['status']} ({c['reason']}: {c['message']})"
            for c in conditions
            if c.get("status") != "True"
        ]
        if parts or obj.KIND == "PodGroup":
            lines.append(f"{obj.KIND} {obj.key}: {', '.join(parts) or 'no status'}")
    return [*lines, *result.reports]


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


def _whole_messages(rows: list[list[Cell]], message_width: int) -> list[str]:
    """`<pods>: <reason>: <message>` for each message cut in its column, whole; the pods
    sharing one reason and message on one line, in the table's order (the first few named,
    the others counted)."""
    cut: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        message = str(row[-1])
        if len(message) > message_width:
            cut.setdefault((str(row[4]), message), []).append(f"{row[0]}/{row[1]}")
    lines = []
    for (reason, message), pods in cut.items():
        named = ", ".join(pods[:_NAMED])
        if len(pods) > _NAMED:
            named += f" and {len(pods) - _NAMED} more"
        lines.append(f"{named}: {reason}: {message}")
    return lines


def simulation_table(
    result: SimulationResult, wide: bool = False, scheduler_names: Sequence[str] = ()
) -> str:
    """One row per pod (then the evicted ones), 120 columns wide unless `wide`, each message
    cut there printed whole under the table; then the status of each PodGroup and
    ElasticQuota, the plugins' report and a summary line. `scheduler_names`: every profile's
    (default: the result's one)."""
    header = WIDE_HEADER if wide else HEADER
    rows = _rows(result, wide, tuple(scheduler_names) or (result.scheduler_name,))
    width, shrink = (None if wide else TABLE_WIDTH), (len(header) - 1,)
    text = table(header, rows, width=width, shrink=shrink)
    widths = column_widths(header, rows, width=width, shrink=shrink)
    bound = sum(1 for p in result.pods if p.spec.node_name)
    elapsed = int((result.finished - result.started).total_seconds())
    summary = (
        f"{len(result.pods)} pods: {bound} bound, {len(result.pods) - bound} pending; "
        f"{len(result.evicted)} evicted; {elapsed}s simulated"
        + (" (stopped at the time limit)" if result.timed_out else "")
    )
    lines = [*_whole_messages(rows, widths[-1]), *_object_lines(result), summary]
    return text + "".join(f"{line}\n" for line in lines)


def foreign_pods_line(result: SimulationResult, scheduler_names: Sequence[str]) -> str | None:
    """One line when pods wait for a scheduler and none names a profile of this simulation
    (nothing was scheduled): the profiles' schedulerNames and those the pods ask for."""
    pods = [*result.pods, *result.evicted]
    asked = [p.spec.scheduler_name or DEFAULT_SCHEDULER for p in pods]
    if any(name in scheduler_names for name in asked):
        return None
    if all(p.spec.node_name for p in result.pods):
        return None  # nothing waits: every pod came bound
    counts: dict[str, int] = {}
    for name in asked:
        counts[name] = counts.get(name, 0) + 1
    wanted = ", ".join(
        f"{name!r} ({n} pod{'s' if n > 1 else ''})" for name, n in sorted(counts.items())
    )
    profiles = ", ".join(repr(n) for n in scheduler_names)
    return (
        f"warning: no pod names a profile of this configuration, so none was scheduled: "
        f"the profiles' schedulerName {profiles}; the pods' spec.schedulerName {wanted}"
    )
