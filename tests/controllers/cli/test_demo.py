"""`placement demo`'s output: the decisions table within 120 columns, a misconfigured placement
with its message, and "what moved" counting placements and clusters as the lines below it do,
with the indirect moves told apart."""

from __future__ import annotations

import io
import re

import pytest

from apis.placements import Placement, PlacementDecision
from controllers.cli.demo import _report, run_demo, what_moved
from placement.testing import decision

BEFORE = {
    "apps/a": ["x", "victim"],
    "apps/b": ["victim"],
    "apps/c": ["y", "z"],
    "apps/d": ["y"],
}
AFTER = {"apps/a": ["x", "w"], "apps/b": [], "apps/c": ["y", "w"], "apps/d": ["y"]}


def test_what_moved_counts_what_it_lists() -> None:
    text = what_moved(BEFORE, AFTER, "victim", balance={"apps/a", "apps/b", "apps/c"})
    lines = text.splitlines()
    assert lines[0] == "what moved: 3 placements, 3 clusters out and 2 in"
    assert lines[1] == "  2 placements had selected victim; 2 dropped it:"
    assert lines[2:4] == ["    apps/a: -victim +w", "    apps/b: -victim"]
    assert "1 placement never selected victim but moved indirectly" in lines[4]
    assert "Balance" in lines[4]
    assert lines[-1] == "    apps/c: -z +w"  # apps/d did not move: not listed


def test_an_indirect_move_without_balance_says_so() -> None:
    text = what_moved(BEFORE, AFTER, "victim", balance={"apps/a", "apps/b"})
    assert text.splitlines()[-1] == "    apps/c: -z +w (does not weigh Balance)"


def test_a_placement_that_kept_the_tainted_cluster_is_counted_but_not_as_dropping_it() -> None:
    after = {**AFTER, "apps/b": ["victim"]}  # tolerates the taint
    lines = what_moved(BEFORE, after, "victim", balance=BEFORE.keys()).splitlines()
    assert lines[0] == "what moved: 2 placements, 2 clusters out and 2 in"
    assert lines[1] == "  2 placements had selected victim; 1 dropped it:"


def _placement(name: str, status: dict[str, object]) -> Placement:
    return Placement.model_validate(
        {"metadata": {"name": name, "namespace": "apps"}, "spec": {}, "status": status}
    )


def _conditions(satisfied: tuple[str, str, str], misconfigured: str = "") -> list[object]:
    time = "2026-11-01T00:00:00Z"
    out: list[object] = [
        {
            "type": "PlacementSatisfied",
            "status": satisfied[0],
            "reason": satisfied[1],
            "message": satisfied[2],
            "lastTransitionTime": time,
        }
    ]
    if misconfigured:
        out.append(
            {
                "type": "PlacementMisconfigured",
                "status": "True",
                "reason": "Misconfigured",
                "message": misconfigured,
                "lastTransitionTime": time,
            }
        )
    return out


def test_the_report_fits_120_columns_and_shows_a_misconfigured_placement() -> None:
    names = [f"a-rather-long-cluster-name-{i:03d}" for i in range(150)]
    big = _placement(
        "big",
        {
            "numberOfSelectedClusters": 150,
            "decisionGroups": [
                {
                    "decisionGroupIndex": 0,
                    "decisions": ["big-decision-1", "big-decision-2"],
                    "clusterCount": 150,
                }
            ],
            "conditions": _conditions(("True", "AllDecisionsScheduled", "")),
        },
    )
    bad = _placement(
        "bad",
        {"conditions": _conditions(("False", "NoManagedClusterMatched", "none"), "a typo")},
    )
    decisions: list[PlacementDecision] = [
        decision("apps", "big", names[:100], 1),
        decision("apps", "big", names[100:], 2),
    ]
    text = _report([big, bad], decisions)
    assert max(len(line) for line in text.splitlines()) <= 120
    lines = text.splitlines()
    assert re.match(
        r"apps/big +AllDecisionsScheduled +0 +150: a-rather-long-cluster-name-000", lines[1]
    )
    assert lines[1].endswith(f"(+{150 - lines[1].count(',') - 1})")
    assert lines[2].split()[:2] == ["apps/bad", "Misconfigured"]
    assert lines[-1] == "apps/bad: Misconfigured: a typo"


@pytest.mark.asyncio
async def test_the_demo_counts_the_moves_it_lists_within_120_columns() -> None:
    out = io.StringIO()
    assert await run_demo(out) == 0
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 120
    selected_by = re.search(
        r"live change: taint (\S+) \(selected by (\d+) of \d+ placements\)", text
    )
    assert selected_by is not None
    victim, had = selected_by.group(1), int(selected_by.group(2))
    head = re.search(r"what moved: (\d+) placements?, (\d+) clusters? out and (\d+) in", text)
    assert head is not None
    section = text[head.start() :].splitlines()
    moves = [line.strip() for line in section if line.startswith("    ")]
    assert int(head.group(1)) == len(moves)
    assert int(head.group(2)) == sum(line.count(" -") for line in moves)
    assert int(head.group(3)) == sum(line.count(" +") for line in moves)
    assert f"  {had} placements had selected {victim}; {had} dropped it:" in text
    assert sum(f"-{victim}" in line.split() for line in moves) == had
