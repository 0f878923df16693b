"""The `placement` command line (kubectl conventions: `-f` files or folders, exit code 0 on
success, 1 on an error, 2 on a usage error, errors on stderr naming file, object and field)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from importlib import metadata

from controllers.manifests import load_paths

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

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
    validate.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="PATH",
        help="file or folder to read (repeatable)",
    )
    validate.set_defaults(func=_cmd_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
