"""The `placement` command line (kubectl conventions: `-f` files or folders, exit code 0 on
success, 1 on an error, 2 on a usage error, errors on stderr naming file, object and field)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from apis.meta import KubeObject, parse_time
from controllers.cli.manifests import dump_yaml, load_paths
from placement.explain import explain_json, explain_rows
from placement.simulate import SCHEDULING_KINDS, Simulated, simulate
from plugins import default_scheduler

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "CliError", "build_parser", "main"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def _version() -> str:
    try:
        return metadata.version("ocm-placement")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


def _cmd_validate(args: argparse.Namespace) -> int:
    result = load_paths(args.filename)
    for error in result.errors:
        print(error, file=sys.stderr)
    counts = Counter(type(o.obj).__name__ for o in result.objects)
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "no objects"
    if result.errors:
        print(f"{len(result.errors)} invalid document(s); valid: {summary}", file=sys.stderr)
        return EXIT_ERROR
    print(f"valid: {summary}")
    return EXIT_OK


class CliError(Exception):
    """Bad input: printed on stderr, exit code 1."""


def _now(text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        return parse_time(text)
    except ValueError as exc:  # PydanticCustomError is a ValueError
        raise CliError(f"--now: {exc}") from None


def _scheduling_objects(paths: list[str]) -> list[KubeObject]:
    """Read the objects simulate and explain use; other kinds are skipped with a warning."""
    result = load_paths(paths)
    errors = [e for e in result.errors if not e.unknown_kind]
    if errors:
        raise CliError("\n".join(str(e) for e in errors))
    kinds = Counter(
        e.message.split("'")[1] if e.message.count("'") >= 2 else "unknown"
        for e in result.errors
        if e.unknown_kind
    )
    kinds.update(
        type(o.obj).KIND for o in result.objects if not isinstance(o.obj, SCHEDULING_KINDS)
    )
    if kinds:
        listed = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        print(f"warning: skipped objects of other kinds: {listed}", file=sys.stderr)
    return [o.obj for o in result.objects if isinstance(o.obj, SCHEDULING_KINDS)]


def _emit(data: Any, output: str) -> None:
    if output == "yaml":
        sys.stdout.write(dump_yaml([data]))
    else:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    lines = [
        "   ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join(lines) + "\n"


def _satisfied(item: Simulated) -> tuple[str, str]:
    for condition in item.placement.status.conditions or [] if item.placement.status else []:
        if condition.type == "PlacementSatisfied":
            return condition.status, condition.reason
    return "", ""


def _cmd_simulate(args: argparse.Namespace) -> int:
    results = simulate(_scheduling_objects(args.filename), default_scheduler(), _now(args.now))
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
        sys.stdout.write(_table(header, rows))
        return EXIT_OK
    items: list[dict[str, Any]] = []
    for item in results:
        items.append(item.placement.to_wire())
        items.extend(pd.to_wire() for pd in item.decisions)
    _emit({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}, args.output)
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:
    namespace, _, name = args.placement.partition("/")
    results = simulate(
        _scheduling_objects(args.filename),
        default_scheduler(),
        _now(args.now),
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
        sys.stdout.write(_table(header, body))
        if not result.status.ok:
            print(f"error: {result.status}", file=sys.stderr)
        return EXIT_OK
    # The scheduler ran against the fleet as it was before this placement's new decisions.
    _emit(explain_json(result, item.fleet), "json")
    return EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    # Imported here: the offline commands should not pay for the client libraries.
    from controllers.cli.run import RunOptions, run_controller
    from controllers.runtime.logs import setup_logging

    if args.workers < 1:
        raise CliError(f"--workers: must be at least 1 (got {args.workers})")
    if args.resync <= 0:
        raise CliError(f"--resync: must be positive (got {args.resync})")
    setup_logging(args.log_format, args.log_level)
    options = RunOptions(
        kubeconfig=args.kubeconfig,
        context=args.context,
        embedded=args.embedded,
        load=args.load,
        workers=args.workers,
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        http_addr=args.http_addr,
        resync=args.resync,
    )
    return asyncio.run(run_controller(options))


def _cmd_demo(args: argparse.Namespace) -> int:
    from controllers.cli.demo import run_demo

    return asyncio.run(run_demo(timeout=args.timeout))


def _add_filename(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="PATH",
        help="file or folder of YAML/JSON manifests (repeatable)",
    )


def _add_common(parser: argparse.ArgumentParser, outputs: list[str]) -> None:
    _add_filename(parser)
    parser.add_argument(
        "-o",
        "--output",
        choices=outputs,
        default=outputs[0],
        help=f"output format (default {outputs[0]})",
    )
    parser.add_argument(
        "--now", metavar="RFC3339", help="the clock for toleration and score expiry (default: now)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="placement",
        description="OCM-compatible multi-cluster placement controller and tools.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    validate = commands.add_parser(
        "validate",
        help="check manifests against the API models and CRD rules",
        description=(
            "Read YAML/JSON manifests (files or folders, multi-document, v1 Lists) and report "
            "every document that breaks a rule of its kind, naming file, document, object and "
            "field. Exit 0 if all are valid, 1 otherwise."
        ),
    )
    _add_filename(validate)
    validate.set_defaults(func=_cmd_validate)

    sim = commands.add_parser(
        "simulate",
        help="schedule every Placement in the manifests, offline",
        description=(
            "Schedule every Placement found in the manifests (sorted by namespace/name, each "
            "seeing the decisions of those before it) and print a v1 List of each Placement "
            "with its computed status followed by its PlacementDecisions, as the controller "
            "would write them. PlacementDecisions in the input are the current state."
        ),
    )
    _add_common(sim, ["json", "yaml", "table"])
    sim.set_defaults(func=_cmd_simulate)

    explain = commands.add_parser(
        "explain",
        help="show why a Placement selects what it selects",
        description=(
            "Print OCM's debugger JSON for one placement (filter pipeline, prioritizer scores "
            "and weights, aggregated scores), or a table with one row per cluster."
        ),
    )
    _add_common(explain, ["json", "table"])
    explain.add_argument(
        "--placement", required=True, metavar="NS/NAME", help="the placement to explain"
    )
    explain.set_defaults(func=_cmd_explain)

    run = commands.add_parser(
        "run",
        help="run the placement controller",
        description=(
            "Run the hub placement controller: watch Placements, ManagedClusters, sets, "
            "bindings, PlacementDecisions and AddOnPlacementScores, and write decisions. The "
            "hub is --kubeconfig (and --context), else $KUBECONFIG, else the in-cluster "
            "service account, else an embedded API server on 127.0.0.1 whose kubeconfig is "
            "printed. Stops cleanly on SIGTERM or SIGINT."
        ),
    )
    run.add_argument("--kubeconfig", type=Path, metavar="FILE", help="kubeconfig of the hub")
    run.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    run.add_argument(
        "--embedded", action="store_true", help="start an embedded hub even if one is configured"
    )
    run.add_argument(
        "--load", type=Path, metavar="DIR", help="embedded hub only: manifests to store at start"
    )
    run.add_argument("--workers", type=int, default=4, help="concurrent reconciles (default 4)")
    run.add_argument(
        "--leader-elect",
        action="store_true",
        help="elect a leader over a coordination.k8s.io Lease; only the leader writes",
    )
    run.add_argument(
        "--lease-namespace",
        metavar="NS",
        help="namespace of the Lease (default: $POD_NAMESPACE, the pod's namespace, "
        "or open-cluster-management-hub)",
    )
    run.add_argument(
        "--http-addr",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="/healthz, /readyz, /metrics and /debug/placements (default 127.0.0.1:8080; "
        "':8080' listens on every interface)",
    )
    run.add_argument(
        "--resync",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="schedule every placement again this often (default 600, as OCM)",
    )
    run.add_argument("--log-format", choices=["text", "json"], default="text")
    run.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default="INFO")
    run.set_defaults(func=_cmd_run)

    demo = commands.add_parser(
        "demo",
        help="embedded hub + controller + sample fleet: show the decisions, then a live change",
        description=(
            "Start an embedded hub with config/samples grown to 200 clusters, run the "
            "controller until every placement is scheduled, print the decisions per group, "
            "taint the most selected cluster and show the decisions that moved. Exit 0."
        ),
    )
    demo.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for each step (default 60)"
    )
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    placement = getattr(args, "placement", None)
    if placement is not None and not all(placement.partition("/")[::2]):
        parser.error(f"--placement: expected NAMESPACE/NAME (got {placement!r})")
    try:
        code: int = args.func(args)
    except CliError as exc:
        print(exc, file=sys.stderr)
        return EXIT_ERROR
    return code


if __name__ == "__main__":
    sys.exit(main())
