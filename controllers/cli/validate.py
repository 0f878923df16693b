"""`placement validate -f PATH... [--validate strict|warn|ignore]`: check manifests against the
API models, the CRD rules, Kubernetes' name rules and (as kubectl's `--validate=strict`) the
fields each kind knows, offline; every bad document is reported on stderr and the exit code is 1.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import TYPE_CHECKING

from controllers.cli.common import EXIT_ERROR, EXIT_OK, add_filename, print_warnings
from controllers.cli.manifests import load_paths

if TYPE_CHECKING:
    from controllers.cli.common import Subparsers

__all__ = ["add_parser"]


def add_parser(subparsers: Subparsers) -> None:
    """Add `validate` to the command's subparsers."""
    validate = subparsers.add_parser(
        "validate",
        help="check manifests against the API models and CRD rules",
        description=(
            "Read YAML/JSON manifests (files or folders, multi-document, v1 Lists) and report "
            "every document that breaks a rule of its kind (types, ranges, patterns, names, "
            "fields the kind does not know), naming file, document, object and field. Exit 0 "
            "if all are valid, 1 otherwise."
        ),
    )
    add_filename(validate)
    validate.set_defaults(func=_cmd_validate)


def _cmd_validate(args: argparse.Namespace) -> int:
    result = load_paths(args.filename, args.validate)
    print_warnings(result.warnings)
    for error in result.errors:
        print(error, file=sys.stderr)
    counts = Counter(type(o.obj).__name__ for o in result.objects)
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "no objects"
    if result.errors:
        print(f"{len(result.errors)} invalid document(s); valid: {summary}", file=sys.stderr)
        return EXIT_ERROR
    print(f"valid: {summary}")
    return EXIT_OK
