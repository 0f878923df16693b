"""`placement explain -f PATH... --placement NS/NAME [-o json|table|wide] [--now RFC3339]`: why
one Placement selects what it selects, as OCM's debugger JSON (plus `filterReasons` and a
`spread` section) or a table with one row per cluster (docs/hub-admins.md).

The table shows, per cluster, each filter's verdict with the reason of a FAIL (the taint not
tolerated, the predicate requirement not met), each prioritizer's score, for a spread placement
the spread score (`raw/normalized`, with its weight in the header), the TOTAL the selector
compared (weight × spread + prioritizer total for a spread placement) and whether it was
picked (and when, for a spread placement). It fits 120 columns, cutting reasons; `-o wide` shows
them whole.
"""

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
)
from controllers.cli.tables import Cell, table

# The scheduling core is imported where it is used: `placement explain --help` builds its
# parser without it (start-up time).
if TYPE_CHECKING:
    from controllers.cli.common import Subparsers
    from placement.explain import ExplainRow
    from placement.scheduler import ScheduleResult
    from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["add_parser", "explain_table"]


def add_parser(subparsers: Subparsers) -> None:
    """Add `explain` to the command's subparsers."""
    explain = subparsers.add_parser(
        "explain",
        help="show why a Placement selects what it selects",
        description=(
            "Print OCM's debugger JSON for one placement (filter pipeline, prioritizer scores "
            "and weights, aggregated scores, plus why each filter removed each cluster and the "
            "spread selector's picks), or a table with one row per cluster: each filter's "
            "verdict and reason, each prioritizer's score, the spread score, the total compared "
            "and whether it was picked. -o table fits 120 columns; -o wide shows every reason "
            "whole; -o yaml is the JSON document as YAML."
        ),
    )
    add_manifest_options(explain, ["json", "yaml", "table", "wide"])
    explain.add_argument(
        "--placement", required=True, metavar="NS/NAME", help="the placement to explain"
    )
    explain.set_defaults(func=_cmd_explain)


def _verdict(row: ExplainRow, name: str) -> str:
    if name not in row.verdicts:
        return "-"  # an earlier filter removed it
    return "pass" if row.verdicts[name] else "FAIL"


def _failed(row: ExplainRow) -> tuple[str, str] | None:
    """The filter that removed the cluster and why, if one did."""
    for name, passed in row.verdicts.items():
        if not passed:
            return name, row.reasons.get(name, "")
    return None


def _spread_cell(row: ExplainRow) -> str:
    score = row.spread
    if score is None:
        return "-"
    if score.excluded:
        return "excluded"
    return f"{score.raw}/{score.normalized}"


def _picked(row: ExplainRow) -> str:
    if not row.picked:
        return ""
    return "yes" if row.pick is None else f"yes #{row.pick}"


def explain_table(result: ScheduleResult, fleet: FleetSnapshot, wide: bool = False) -> str:
    """The `-o table` (or `-o wide`) text of one explained placement.

    `-o table`: the clusters that passed every filter with their scores, the TOTAL compared
    and PICKED (for a spread placement also the spread score, and a NOTE saying why a cluster
    was excluded), then the clusters filtered out with the FILTER that removed them and the
    REASON; 120 columns, long notes and reasons cut. When the cycle stopped (a misconfigured
    spec, a plugin error) one table says, for each cluster, which PLUGIN stopped it and why.
    `-o wide`: one table, one row per cluster with every filter's verdict, every score and the
    reason whole."""
    from placement.explain import explain_rows, spread_weight

    rows = explain_rows(result, fleet)
    filters = [r.name.rsplit(",", 1)[-1] for r in result.filters]
    prioritizers = [f"{r.name}(x{r.weight})" for r in result.prioritizers]
    weight = spread_weight(result)
    spread = [] if weight is None else [f"Spread(x{weight})"]

    def scored(row: ExplainRow) -> list[Cell]:
        return [
            *["-" if v is None else str(v) for v in row.scores.values()],
            *([_spread_cell(row)] if spread else []),
            "-" if row.total is None else str(row.total),
            _picked(row),
        ]

    status = result.status
    stopped = None if status.ok else f"{status.code.name.capitalize()}: {status.message}"

    def note(row: ExplainRow) -> str:
        failed = _failed(row)
        if failed is not None:
            return failed[1]
        if row.spread is not None:
            return row.spread.excluded or ""
        return stopped or ""

    tail = [*prioritizers, *spread, "TOTAL", "PICKED"]
    if wide:
        header = ["CLUSTER", *filters, *tail, "REASON"]
        body = [
            [row.cluster, *[_verdict(row, f) for f in filters], *scored(row), note(row)]
            for row in rows
        ]
        return table(header, body, width=None)
    if stopped is not None:  # the cycle stopped: no cluster got further than this
        plugin = status.plugin or "scheduler"
        body = [[row.cluster, *(_failed(row) or (plugin, stopped))] for row in rows]
        return table(["CLUSTER", "PLUGIN", "REASON"], body, shrink=[2])
    feasible = [row for row in rows if _failed(row) is None]
    notes = spread and any(row.spread and row.spread.excluded for row in feasible)
    header = ["CLUSTER", *tail, *(["NOTE"] if notes else [])]
    body = [[row.cluster, *scored(row), *([note(row)] if notes else [])] for row in feasible]
    text = table(header, body, shrink=[len(header) - 1] if notes else [])
    removed = [(row.cluster, *failed) for row in rows if (failed := _failed(row)) is not None]
    if removed:
        text += "\n" + table(["CLUSTER", "FILTER", "REASON"], removed, shrink=[2])
    return text


def _cmd_explain(args: argparse.Namespace) -> int:
    from placement.explain import explain_json
    from placement.simulate import simulate
    from plugins import default_scheduler

    namespace, _, name = args.placement.partition("/")
    results = simulate(
        scheduling_objects(args.filename, args.validate),
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
    if args.output in ("table", "wide"):
        sys.stdout.write(explain_table(result, item.fleet, wide=args.output == "wide"))
        if not result.status.ok:
            print(f"error: {result.status}", file=sys.stderr)
        return EXIT_OK
    # The scheduler ran against the fleet as it was before this placement's new decisions.
    emit(explain_json(result, item.fleet), args.output)
    return EXIT_OK
