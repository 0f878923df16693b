"""The `placement` command line (kubectl conventions: `-f` files or folders, exit code 0 on
success, 1 on an error, 2 on a usage error, errors on stderr naming file, object and field).

This module is the top-level parser and `main`, the console script's entry point; each verb
lives in its own module with its options and its handler (`validate`, `simulate`, `explain`,
`run`, `demo`), and what they share in `controllers.cli.common`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from controllers.cli import demo, explain, run, scheduler, simulate, validate, webhook
from controllers.cli.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "CliError", "build_parser", "main"]

# In the order `placement --help` lists them.
VERBS = (validate, simulate, explain, run, demo, scheduler, webhook)


def _version() -> str:
    try:
        return metadata.version("ocm-placement")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="placement",
        description="OCM-compatible multi-cluster placement controller and tools.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for verb in VERBS:
        verb.add_parser(commands)
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
