"""Explain records: OCM's debugger JSON for one scheduled placement, and a per-cluster table.

`explain_json` mirrors `GET /debug/placements/<ns>/<name>` of OCM's debugger: `placement`,
`filteredPipelineResults`, `prioritizeResults` (non-zero weights only), `aggregatedScores`
(score descending, name ascending) and `error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.scheduler import ScheduleResult
from placement.snapshot import FleetSnapshot

__all__ = ["ExplainRow", "explain_json", "explain_rows"]


def _placement_summary(result: ScheduleResult) -> dict[str, Any]:
    wire = result.placement.to_wire()
    meta = wire.get("metadata", {})
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    return {"metadata": kept, "spec": wire.get("spec", {})}


def explain_json(result: ScheduleResult, fleet: FleetSnapshot) -> dict[str, Any]:
    """The OCM debugger's JSON document for this result."""
    feasible = result.feasible
    total = result.total if result.total is not None else np.zeros(fleet.size, np.int64)
    return {
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
        "error": "" if result.status.ok else str(result.status),
        **_spread_section(result),
    }


def _spread_section(result: ScheduleResult) -> dict[str, Any]:
    trace = result.selection.trace if result.selection else {}
    if "steps" not in trace:
        return {}
    return {"spread": {"weight": trace.get("weight"), "picks": trace["steps"]}}


@dataclass(frozen=True)
class ExplainRow:
    """One cluster's story: each filter's verdict, each prioritizer's score, total, picked."""

    cluster: str
    verdicts: dict[str, bool]
    scores: dict[str, int | None]
    total: int | None
    picked: bool


def explain_rows(result: ScheduleResult, fleet: FleetSnapshot) -> list[ExplainRow]:
    """Rows for every cluster that was available to the placement, feasible ones first in
    score order, then the filtered-out ones by name."""
    avail = result.availability.available if result.availability else fleet.empty_mask()
    picked = {int(r) for r in result.selected}
    feasible = [int(r) for r in result.feasible]
    feasible_set = set(feasible)
    rest = [int(r) for r in np.flatnonzero(avail) if int(r) not in feasible_set]
    rows: list[ExplainRow] = []
    previous_mask = avail
    masks = []
    for record in result.filters:
        masks.append((record.name.rsplit(",", 1)[-1], previous_mask, record.mask))
        previous_mask = record.mask
    for row in feasible + rest:
        verdicts = {name: bool(after[row]) for name, before, after in masks if before[row]}
        scores = {
            rec.name: (int(rec.scores[row]) if rec.scored[row] else None)
            for rec in result.prioritizers
        }
        total = int(result.total[row]) if result.total is not None and row in feasible_set else None
        rows.append(ExplainRow(fleet.names[row], verdicts, scores, total, row in picked))
    return rows
