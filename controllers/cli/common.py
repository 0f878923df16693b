"""What the verbs of `placement` share (docs/hub-admins.md, the command line): the exit codes,
the error a verb raises for bad input, the `-f`/`-o`/`--now` options, reading the objects
simulate and explain schedule, and printing JSON or YAML (tables: `controllers.cli.tables`).

Every verb module imports this one and none imports another verb or `main`, so the command
has no import cycles: main -> verbs -> common.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from controllers.cli.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError
from controllers.cli.strictness import VALIDATIONS, Validation

# The models, the manifest reader and the scheduling core are imported where they are used:
# every verb builds its parser from this module, and `placement <verb> --help` must not pay
# for what only the verb's work needs.
if TYPE_CHECKING:
    from typing import TypeAlias

    from apis.meta import KubeObject

    # What `add_subparsers` returns; each verb adds its parser to it.
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliError",
    "add_filename",
    "add_log_options",
    "add_manifest_options",
    "emit",
    "parse_now",
    "print_warnings",
    "scheduling_objects",
]


def parse_now(text: str | None) -> datetime:
    """The `--now` clock: the given RFC 3339 time, else the current time."""
    if text is None:
        return datetime.now(UTC)
    from apis.meta import parse_time

    try:
        return parse_time(text)
    except ValueError as exc:  # PydanticCustomError is a ValueError
        raise CliError(f"--now: {exc}") from None


def scheduling_objects(paths: list[str], validation: Validation = "strict") -> list[KubeObject]:
    """Read the objects simulate and explain use; other kinds are skipped with a warning.
    Unknown fields are errors, warnings or nothing as `validation` (`--validate`) says."""
    from controllers.cli.manifests import load_paths
    from placement.simulate import SCHEDULING_KINDS

    result = load_paths(paths, validation)
    print_warnings(result.warnings)
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


def emit(data: Any, output: str) -> None:
    """Print `data` on stdout as YAML when `output` is "yaml", else as indented JSON."""
    if output == "yaml":
        from controllers.cli.manifests import dump_yaml

        sys.stdout.write(dump_yaml([data]))
    else:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")


def print_warnings(warnings: Iterable[object]) -> None:
    """Each line of each warning on stderr, after `warning: `."""
    for warning in warnings:
        for line in str(warning).splitlines():
            print(f"warning: {line}", file=sys.stderr)


# kubectl's spellings of --validate: a bare flag or `true` is strict, `false` is ignore.
_VALIDATE_ALIASES: dict[str, Validation] = {"true": "strict", "false": "ignore"}


def _validation(text: str) -> Validation:
    value = _VALIDATE_ALIASES.get(text.lower(), text.lower())
    for known in VALIDATIONS:
        if value == known:
            return known
    choices = ", ".join([*VALIDATIONS, *_VALIDATE_ALIASES])
    raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {choices})")


def add_filename(parser: argparse.ArgumentParser) -> None:
    """`-f/--filename PATH`, required and repeatable, and `--validate`, how strictly the
    manifests are read (as kubectl's: unknown fields are errors unless told otherwise)."""
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="PATH",
        help="file or folder of YAML/JSON manifests, - for standard input (repeatable)",
    )
    parser.add_argument(
        "--validate",
        type=_validation,
        nargs="?",
        const="strict",
        default="strict",
        metavar="strict|warn|ignore",
        help=(
            "unknown fields (such as a misspelt spec.numberOfCluster) are errors (strict, the "
            "default, as kubectl's), warnings on stderr (warn) or not reported (ignore)"
        ),
    )


def add_manifest_options(parser: argparse.ArgumentParser, outputs: list[str]) -> None:
    """`-f`, `-o/--output` (one of `outputs`, the first the default) and `--now`."""
    add_filename(parser)
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


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _log_level(text: str) -> str:
    """An argparse type: a log level in any case (`info`, `Info`, `INFO`)."""
    if text.upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(LOG_LEVELS)}, in any case)"
        )
    return text.upper()


def add_log_options(parser: argparse.ArgumentParser) -> None:
    """`--log-format text|json` and `--log-level`, for every long-running verb."""
    parser.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="log lines on stderr as text (the default) or one JSON object each",
    )
    parser.add_argument(
        "--log-level",
        type=_log_level,
        default="INFO",
        metavar="LEVEL",
        help="the least severe level logged: DEBUG, INFO (the default), WARNING or ERROR, "
        "in any case",
    )
