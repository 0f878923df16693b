"""Explain records: OCM's debugger JSON for one scheduled placement, and a per-cluster table.

`explain_json` mirrors `GET /debug/placements/<ns>/<name>` of OCM's debugger: `placement`,
`filteredPipelineResults`, `prioritizeResults` (non-zero weights only), `aggregatedScores`
(score descending, name ascending) and `error`; plus, in an explain cycle, `filterReasons` (why
each filter removed each cluster) and, for a spread placement, `spread` (each pick with every
remaining cluster's spread score or exclusion, and the step that stopped short, if any).

`explain_rows` tells each cluster's story in the same terms: each filter's verdict and reason,
each prioritizer's score, and the total the selector compared (for a spread placement,
weight × spread score + prioritizer total, at the step that picked the cluster or the last one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.outcome import truncate_message
from placement.scheduler import ScheduleResult
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["ExplainRow", "SpreadScore", "explain_json", "explain_rows", "spread_weight"]


def _placement_summary(result: ScheduleResult) -> dict[str, Any]:
    wire = result.placement.to_wire()
    meta = wire.get("metadata", {})
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    return {"metadata": kept, "spec": wire.get("spec", {})}


def _short(pipeline: str) -> str:
    """The filter a pipeline record ends with (`Predicate,TaintToleration` -> `TaintToleration`)."""
    return pipeline.rsplit(",", 1)[-1]


def explain_json(result: ScheduleResult, fleet: FleetSnapshot) -> dict[str, Any]:
    """The OCM debugger's JSON document for this result."""
    feasible = result.feasible
    total = result.total if result.total is not None else np.zeros(fleet.size, np.int64)
    doc: dict[str, Any] = {
        "placement": _placement_summary(result),
        "filteredPipelineResults": [
            {
                "name": record.name,
                "filteredClusters": fleet.rows_to_names(np.flatnonzero(record.mask)),
            }
            for record in result.filters
        ],
        "prioritizeResults": [
            {
                "name": record.name,
                "weight": record.weight,
                "scores": {
                    fleet.names[row]: int(record.scores[row])
                    for row in np.flatnonzero(record.scored)
                },
            }
            for record in result.prioritizers
        ],
        "aggregatedScores": [
            {"clusterName": fleet.names[row], "score": int(total[row])} for row in feasible
        ],
        # Cut as the condition's message is (a 40,000-character mode is quoted in it).
        "error": "" if result.status.ok else truncate_message(str(result.status)),
    }
    reasons = {
        _short(record.name): {
            fleet.names[row]: reason for row, reason in sorted(record.reasons.items())
        }
        for record in result.filters
        if record.reasons
    }
    if reasons:
        doc["filterReasons"] = reasons
    trace = _spread_trace(result)
    if trace is not None:
        doc["spread"] = {"weight": trace.get("weight"), "picks": trace["steps"]}
        if "stopped" in trace:
            doc["spread"]["stopped"] = trace["stopped"]
    return doc


def _spread_trace(result: ScheduleResult) -> dict[str, Any] | None:
    """The spread selector's explain trace (None for other selectors or a plain cycle)."""
    trace = result.selection.trace if result.selection else {}
    return trace if "steps" in trace else None


def spread_weight(result: ScheduleResult) -> int | None:
    """The weight of the spread score in an explained spread placement, else None."""
    trace = _spread_trace(result)
    return None if trace is None else int(trace.get("weight") or 0)


@dataclass(frozen=True)
class SpreadScore:
    """A cluster's spread score in the comparison that decided it: the step that picked it,
    else the step that stopped the selector short, else the last pick. `excluded` says which
    DoNotSchedule term kept it out of that comparison (then there are no scores)."""

    raw: int | None = None
    normalized: int | None = None
    final: int | None = None
    excluded: str | None = None


@dataclass(frozen=True)
class ExplainRow:
    """One cluster's story: each filter's verdict and, for a FAIL, why; each prioritizer's
    score; the total compared; whether (and, for a spread placement, when) it was picked."""

    cluster: str
    verdicts: dict[str, bool]
    scores: dict[str, int | None]
    total: int | None
    picked: bool
    reasons: dict[str, str]
    pick: int | None = None
    """1-based pick order (spread placements)."""
    spread: SpreadScore | None = None


_NOT_SELECTABLE = SpreadScore(excluded="no domain for a DoNotSchedule term (topology key missing)")


def _spread_scores(trace: dict[str, Any]) -> tuple[dict[str, int], dict[str, SpreadScore]]:
    """Pick order and the deciding spread score of every cluster the selector considered."""
    steps: list[dict[str, Any]] = trace["steps"]
    order = {step["picked"]: i + 1 for i, step in enumerate(steps)}
    last = [trace["stopped"]] if "stopped" in trace else steps[-1:]
    scores: dict[str, SpreadScore] = {}
    for step in [*steps, *last]:
        picked = step.get("picked")
        for record in step["candidates"]:
            name = record["cluster"]
            if name in order and name != picked:
                continue  # a picked cluster is told at the step that picked it
            scores[name] = _spread_score(record)
    return order, scores


def _spread_score(record: dict[str, Any]) -> SpreadScore:
    excluded = record.get("excluded")
    if excluded:
        domain = "/".join(excluded["domain"])
        return SpreadScore(
            excluded=(
                f"{excluded['topologyKey']} {domain}: skew {excluded['skew']} > "
                f"maxSkew {excluded['maxSkew']}"
            )
        )
    return SpreadScore(record["rawSpreadScore"], record["spreadScore"], record["finalScore"])


def explain_rows(result: ScheduleResult, fleet: FleetSnapshot) -> list[ExplainRow]:
    """Rows for every cluster that was available to the placement, feasible ones first in
    score order (a spread placement's picks first, in pick order), then the filtered-out ones
    by name."""
    avail = result.availability.available if result.availability else fleet.empty_mask()
    picked = {int(r) for r in result.selected}
    feasible = [int(r) for r in result.feasible]
    feasible_set = set(feasible)
    rest = [int(r) for r in np.flatnonzero(avail) if int(r) not in feasible_set]
    previous_mask = avail
    masks = []
    for record in result.filters:
        masks.append((_short(record.name), previous_mask, record.mask, record.reasons or {}))
        previous_mask = record.mask
    trace = _spread_trace(result)
    order, spread = _spread_scores(trace) if trace is not None else ({}, {})
    if order:  # a spread placement's picks in pick order, then the others by total
        feasible.sort(key=lambda row: order.get(fleet.names[row], len(order) + 1))
    rows: list[ExplainRow] = []
    for row in feasible + rest:
        name = fleet.names[row]
        verdicts = {f: bool(after[row]) for f, before, after, _ in masks if before[row]}
        reasons = {f: why[row] for f, before, after, why in masks if row in why and before[row]}
        scores = {
            rec.name: (int(rec.scores[row]) if rec.scored[row] else None)
            for rec in result.prioritizers
        }
        total = int(result.total[row]) if result.total is not None and row in feasible_set else None
        score = None
        if trace is not None and row in feasible_set:
            considered = bool(trace["steps"]) or "stopped" in trace
            score = spread.get(name, _NOT_SELECTABLE if considered else None)
            total = score.final if score is not None else total
        rows.append(
            ExplainRow(
                name, verdicts, scores, total, row in picked, reasons, order.get(name), score
            )
        )
    return rows
