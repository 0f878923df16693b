"""`placement explain -f PATH... --placement NS/NAME [-o json|table] [--now RFC3339]`: why one
Placement selects what it selects, as OCM's debugger JSON (plus a `spread` section) or a table
with one row per cluster (DESIGN §6)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from controllers.cli.common import (
    EXIT_OK,
    CliError,
    add_manifest_options,
    emit,
    parse_now,
    scheduling_objects,
    table,
)
from placement.explain import explain_json, explain_rows
from placement.simulate import simulate
from plugins import default_scheduler

if TYPE_CHECKING:
    from controllers.cli.common import Subparsers

__all__ = ["add_parser"]


def add_parser(subparsers: Subparsers) -> None:
    """Add `explain` to the command's subparsers."""
    explain = subparsers.add_parser(
        "explain",
        help="show why a Placement selects what it selects",
        description=(
            "Print OCM's debugger JSON for one placement (filter pipeline, prioritizer scores "
            "and weights, aggregated scores), or a table with one row per cluster."
        ),
    )
    add_manifest_options(explain, ["json", "table"])
    explain.add_argument(
        "--placement", required=True, metavar="NS/NAME", help="the placement to explain"
    )
    explain.set_defaults(func=_cmd_explain)


def _cmd_explain(args: argparse.Namespace) -> int:
    namespace, _, name = args.placement.partition("/")
    results = simulate(
        scheduling_objects(args.filename),
        default_scheduler(),
        parse_now(args.now),
        explain=[(namespace, name)],
    )
    found = [r for r in results if (r.placement.namespace, r.placement.name) == (namespace, name)]
    if not found:
        raise CliError(f"Placement {namespace}/{name}: not found in {', '.join(args.filename)}")
    item = found[0]
    if item.outcome is None:
        raise CliError(f"Placement {namespace}/{name}: scheduling is disabled for it")
    result = item.outcome.result
    if args.output == "table":
        rows = explain_rows(result, item.fleet)
        filters = [r.name.rsplit(",", 1)[-1] for r in result.filters]
        prioritizers = [f"{r.name}(x{r.weight})" for r in result.prioritizers]
        header = ["CLUSTER", *filters, *prioritizers, "TOTAL", "PICKED"]
        body = [
            [
                row.cluster,
                *[
                    ("pass" if row.verdicts[f] else "FAIL") if f in row.verdicts else "-"
                    for f in filters
                ],
                *["-" if v is None else str(v) for v in row.scores.values()],
                "-" if row.total is None else str(row.total),
                "yes" if row.picked else "",
            ]
            for row in rows
        ]
        sys.stdout.write(table(header, body))
        if not result.status.ok:
            print(f"error: {result.status}", file=sys.stderr)
        return EXIT_OK
    # The scheduler ran against the fleet as it was before this placement's new decisions.
    emit(explain_json(result, item.fleet), "json")
    return EXIT_OK
