"""`placement simulate -f PATH... [-o json|yaml|table] [--now RFC3339]`: schedule every
Placement in the manifests offline and print what the controller would write (DESIGN §6)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from apis.placements import PLACEMENT_SATISFIED
from controllers.cli.common import (
    EXIT_OK,
    add_manifest_options,
    emit,
    parse_now,
    scheduling_objects,
    table,
)
from placement.simulate import Simulated, simulate
from plugins import default_scheduler

if TYPE_CHECKING:
    from controllers.cli.common import Subparsers

__all__ = ["add_parser"]


def add_parser(subparsers: Subparsers) -> None:
    """Add `simulate` to the command's subparsers."""
    sim = subparsers.add_parser(
        "simulate",
        help="schedule every Placement in the manifests, offline",
        description=(
            "Schedule every Placement found in the manifests (sorted by namespace/name, each "
            "seeing the decisions of those before it) and print a v1 List of each Placement "
            "with its computed status followed by its PlacementDecisions, as the controller "
            "would write them. PlacementDecisions in the input are the current state."
        ),
    )
    add_manifest_options(sim, ["json", "yaml", "table"])
    sim.set_defaults(func=_cmd_simulate)


def _satisfied(item: Simulated) -> tuple[str, str]:
    for condition in item.placement.status.conditions or [] if item.placement.status else []:
        if condition.type == PLACEMENT_SATISFIED:
            return condition.status, condition.reason
    return "", ""


def _cmd_simulate(args: argparse.Namespace) -> int:
    results = simulate(scheduling_objects(args.filename), default_scheduler(), parse_now(args.now))
    if args.output == "table":
        rows = []
        for item in results:
            satisfied, reason = _satisfied(item)
            clusters = [
                d.cluster_name for pd in item.decisions if pd.status for d in pd.status.decisions
            ]
            rows.append(
                [
                    item.placement.namespace,
                    item.placement.name,
                    "skipped" if item.outcome is None else satisfied,
                    reason,
                    str(len(clusters)),
                    ",".join(clusters),
                ]
            )
        header = ["NAMESPACE", "NAME", "SATISFIED", "REASON", "SELECTED", "CLUSTERS"]
        sys.stdout.write(table(header, rows))
        return EXIT_OK
    items: list[dict[str, Any]] = []
    for item in results:
        items.append(item.placement.to_wire())
        items.extend(pd.to_wire() for pd in item.decisions)
    emit({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}, args.output)
    return EXIT_OK
