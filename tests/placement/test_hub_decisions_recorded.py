"""The hub scheduler's decisions on the harness's fleets equal those recorded in
`tests/data/hub_decisions_recorded.json`: the speed work on the hub cycle (issue 31) must leave
every decision, status condition, PlacementDecision page, score and ScoreUpdate note as it was.

The fleets are the harness's, at small sizes: the generated workload (`perf.workload`, plain and
with wide placements), the cold start's (`perf._controller_hub`) and the cycle benchmark's
synthetic fleet with its placement. Every placement is scheduled in namespace/name order, each
seeing the decisions of the ones before it (`placement.simulate`). Besides the decisions, each
cycle's candidates and their total and per-prioritizer scores are compared as a digest, so a
changed score is caught even where it changes no decision.

After a deliberate change of behaviour, record again with
`python -m tests.placement.test_hub_decisions_recorded` and review the diff. (The recording
committed was made with the code before that work: this file run with the older checkout first
on PYTHONPATH.)"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from apis.meta import KubeObject
from perf._controller_hub import Shape, hub_objects
from perf.test_scheduling_bench import SEED, bench_placement
from perf.workload import generate
from placement.outcome import outcome, score_note
from placement.scheduler import ScheduleResult
from placement.simulate import fleet_of
from placement.testing import NOW, placement, synthetic_fleet
from plugins import default_scheduler

RECORDED = Path(__file__).resolve().parents[1] / "data" / "hub_decisions_recorded.json"


def _mixed() -> list[KubeObject]:
    return generate(3_000, 240, seed=31).objects()


def _wide() -> list[KubeObject]:
    return generate(1_500, 100, seed=32, wide=0.2).objects()


def _cold_start() -> list[KubeObject]:
    return list(hub_objects(Shape(clusters=1_000, placements=60), NOW))


def _cycle() -> list[KubeObject]:
    fleet = synthetic_fleet(2_000, SEED, decided={"bench": 0.02})
    unranked = placement(fleet.namespace, "unranked", numberOfClusters=7)
    return [*fleet.objects(), bench_placement(2_000), unranked]


FLEETS: dict[str, Callable[[], list[KubeObject]]] = {
    "mixed": _mixed,
    "wide": _wide,
    "cold-start": _cold_start,
    "cycle": _cycle,
}


def _digest(result: ScheduleResult) -> str:
    """The candidates, their totals and each prioritizer's scores, hashed."""
    h = hashlib.sha256()
    for array in (result.rows, result.row_total):
        if array is not None:
            h.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
    for record in result.prioritizers:
        h.update(f"{record.name}/{record.weight}".encode())
        h.update(np.ascontiguousarray(record.row_scores, dtype=np.int64).tobytes())
        if record.row_scored is not None:
            h.update(np.ascontiguousarray(record.row_scored, dtype=np.bool_).tobytes())
    for f in result.filters:
        h.update(f.name.encode())
        h.update(np.flatnonzero(f.mask).astype(np.int64).tobytes())
    return h.hexdigest()[:16]


def _short(page: dict[str, Any]) -> dict[str, Any]:
    """A page of more than 20 clusters as its first ones, its count and a hash of them all."""
    names: list[str] = page["clusters"]
    if len(names) <= 20:
        return page
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    return {**page, "clusters": names[:5], "count": len(names), "sha": digest}


def schedule(objects: Iterable[KubeObject]) -> dict[str, Any]:
    """Placement key -> what its cycle decided, in namespace/name order."""
    scheduler = default_scheduler()
    fleet, placements = fleet_of(objects)
    out: dict[str, Any] = {}
    for p in placements:
        result = scheduler.schedule(p, fleet, NOW)
        done = outcome(result, fleet, p.status, NOW)
        entry: dict[str, Any] = {
            "status": [done.status.code.name, done.status.plugin, done.status.message],
            "conditions": [
                [c.type, c.status, c.reason, c.message]
                for c in done.placement_status.conditions or []
            ],
            "selected": done.placement_status.number_of_selected_clusters,
            "groups": [
                g.model_dump(mode="json", by_alias=True, exclude_none=True)
                for g in done.placement_status.decision_groups or []
            ],
            "scores": _digest(result),
            "note": score_note(result, fleet),
        }
        if done.paged is not None:
            pages = []
            for pd in done.paged.decisions:
                labels = dict(pd.metadata.labels or {})
                names = [d.cluster_name for d in pd.status.decisions] if pd.status else []
                pages.append({"name": pd.name, "labels": labels, "clusters": names})
            chosen = [c for page in pages for c in page["clusters"]]
            fleet = fleet.with_decisions(p.namespace, p.name, chosen)
            entry["decisions"] = [_short(page) for page in pages]
        out[f"{p.namespace}/{p.name}"] = entry
    return out


def record() -> dict[str, Any]:
    return {name: schedule(build()) for name, build in FLEETS.items()}


@pytest.mark.parametrize("name", sorted(FLEETS))
def test_decisions_are_as_recorded(name: str) -> None:
    expected = json.loads(RECORDED.read_text())[name]
    got = schedule(FLEETS[name]())
    assert sorted(got) == sorted(expected)
    for key, entry in expected.items():
        assert got[key] == entry, key


def test_the_recording_decides_something() -> None:
    """The fixture exercises what it should: decisions on every fleet, and scores."""
    recorded = json.loads(RECORDED.read_text())
    assert sorted(recorded) == sorted(FLEETS)
    for placements in recorded.values():
        decided = [e for e in placements.values() if e.get("decisions")]
        assert len(decided) >= len(placements) // 2


def _dumps(recorded: dict[str, Any]) -> str:
    """JSON with one line per placement, so that a re-recording's diff reads by placement."""
    lines = []
    for name in sorted(recorded):
        entries = recorded[name]
        body = ",\n".join(
            f"  {json.dumps(key)}: {json.dumps(entries[key], sort_keys=True)}"
            for key in sorted(entries)
        )
        lines.append(f" {json.dumps(name)}: {{\n{body}\n }}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


if __name__ == "__main__":
    RECORDED.write_text(_dumps(record()))
