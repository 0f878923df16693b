"""`placement simulate -f PATH... [-o json|yaml|table|wide] [--now RFC3339]`: schedule every
Placement in the manifests offline and print what the controller would write (docs/hub-admins.md).

The table has one row per placement: PlacementSatisfied's status, the reason (`Misconfigured`
when PlacementMisconfigured is True, whatever PlacementSatisfied says) and the clusters
selected; the message of each placement that is not satisfied follows the table. It fits 120
columns (cluster lists keep the first names and count the rest); `-o wide` shows everything in
the table, plus the decision groups. A run longer than 5 s (10k clusters) prints its progress on
stderr every 5 s: what it is doing, placements scheduled of the total, the time elapsed.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from controllers.cli.common import (
    EXIT_OK,
    add_manifest_options,
    emit,
    parse_now,
    scheduling_objects,
)
from controllers.cli.progress import Progress
from controllers.cli.tables import TABLE_WIDTH, Cell, fit, table

# The models and the scheduling core are imported where they are used: `placement simulate
# --help` builds its parser without them (start-up time).
if TYPE_CHECKING:
    from apis.placements import Placement
    from controllers.cli.common import Subparsers
    from placement.simulate import Simulated

__all__ = ["add_parser", "simulate_table"]

PROGRESS_AFTER = 5.0
"""Seconds before a run starts printing its progress on stderr (a shorter run prints none)."""
PROGRESS_EVERY = 5.0
"""Seconds between two progress lines."""

HEADER = ["NAMESPACE", "NAME", "SATISFIED", "REASON", "SELECTED", "CLUSTERS"]
WIDE_HEADER = [*HEADER, "GROUPS", "MESSAGE"]


def add_parser(subparsers: Subparsers) -> None:
    """Add `simulate` to the command's subparsers."""
    sim = subparsers.add_parser(
        "simulate",
        help="schedule every Placement in the manifests, offline",
        description=(
            "Schedule every Placement found in the manifests (sorted by namespace/name, each "
            "seeing the decisions of those before it) and print a v1 List of each Placement "
            "with its computed status followed by its PlacementDecisions, as the controller "
            "would write them. PlacementDecisions in the input are the current state. "
            "-o table: one row per placement, 120 columns wide; -o wide: every cluster, "
            "message and decision group."
        ),
    )
    add_manifest_options(sim, ["json", "yaml", "table", "wide"])
    sim.set_defaults(func=_cmd_simulate)


def _condition(placement: Placement, kind: str) -> tuple[str, str, str] | None:
    """(status, reason, message) of the placement's condition of this type."""
    for c in (placement.status.conditions or []) if placement.status else []:
        if c.type == kind:
            return c.status, c.reason, c.message
    return None


def _groups(item: Simulated) -> list[str]:
    """Each decision group as `name:count` (the index when the group has no name)."""
    status = item.placement.status
    return [
        f"{g.decision_group_name or g.decision_group_index}:{g.cluster_count}"
        for g in (status.decision_groups or [] if status else [])
    ]


def _row(item: Simulated) -> tuple[list[Cell], str]:
    """The placement's row (without its message), and its message."""
    from apis.placements import DISABLE_ANNOTATION, PLACEMENT_MISCONFIGURED, PLACEMENT_SATISFIED

    placement = item.placement
    clusters = [d.cluster_name for pd in item.decisions if pd.status for d in pd.status.decisions]
    satisfied = _condition(placement, PLACEMENT_SATISFIED)
    misconfigured = _condition(placement, PLACEMENT_MISCONFIGURED)
    if item.outcome is None:
        state, reason = "skipped", "SchedulingDisabled"
        message = f"{DISABLE_ANNOTATION} is true, or the placement is being deleted"
    elif misconfigured is not None and misconfigured[0] == "True":
        state, reason, message = (satisfied or ("False",))[0], "Misconfigured", misconfigured[2]
    elif satisfied is not None:
        state, reason = satisfied[0], satisfied[1]
        message = "" if satisfied[0] == "True" else satisfied[2]
    else:
        state, reason, message = "Unknown", "", ""
    row: list[Cell] = [
        placement.namespace,
        placement.name,
        state,
        reason,
        str(len(clusters)),
        clusters,
    ]
    return row, message


def simulate_table(results: list[Simulated], wide: bool = False) -> str:
    """The `-o table` (or `-o wide`) text of simulated placements. The table keeps one line per
    placement within 120 columns, so the message of each placement that is not satisfied
    (misconfigured, skipped, short of clusters) follows it as `NS/NAME: REASON: message`;
    `-o wide` has every column, the decision groups and the messages in the table."""
    rows = [(item, *_row(item)) for item in results]
    if wide:
        body = [[*row, _groups(item), message] for item, row, message in rows]
        return table(WIDE_HEADER, body, width=None)
    text = table(HEADER, [row for _, row, _ in rows], shrink=(5,))
    notes = [
        fit(f"{row[0]}/{row[1]}: {row[3]}: {message}", TABLE_WIDTH)
        for _, row, message in rows
        if message
    ]
    return text + "".join(f"\n{note}" for note in notes) + ("\n" if notes else "")


def _cmd_simulate(args: argparse.Namespace) -> int:
    from placement.simulate import simulate
    from plugins import default_scheduler

    now = parse_now(args.now)
    progress = Progress(
        "placement simulate", sys.stderr, after=PROGRESS_AFTER, every=PROGRESS_EVERY
    )
    progress.stage("reading the manifests")
    with progress:
        objects = scheduling_objects(args.filename, args.validate)
        progress.stage("loading the fleet")
        results = simulate(objects, default_scheduler(), now, progress=progress.advance)
        progress.stage("writing the output")
        if args.output in ("table", "wide"):
            sys.stdout.write(simulate_table(results, wide=args.output == "wide"))
            return EXIT_OK
        items: list[dict[str, Any]] = []
        for item in results:
            items.append(item.placement.to_wire())
            items.extend(pd.to_wire() for pd in item.decisions)
        emit({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}, args.output)
    return EXIT_OK
