"""`placement validate -f PATH... [--validate strict|warn|ignore]`: check manifests against the
API models, the CRD rules, Kubernetes' name rules and (as kubectl's `--validate=strict`) the
fields each kind knows, offline; every bad document is reported on stderr and the exit code is 1.
A Placement's CEL expressions are compiled too: an expression that does not compile would make
the placement Misconfigured once it reaches the controller, so it is an error here, reported with
its file, document, object and expression index.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import TYPE_CHECKING

from apis.placements import Placement
from controllers.cli.common import EXIT_ERROR, EXIT_OK, add_filename, print_warnings
from controllers.cli.manifests import LoadedObject, LoadError, LoadResult, load_paths
from placement.cel import CelCompileError, compile_selector

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
    _compile_cel(result)
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


def _compile_cel(result: LoadResult) -> None:
    """Move every Placement with a CEL expression that does not compile from the objects to
    the errors: one error per document, one problem per expression, in document order."""
    kept: list[LoadedObject] = []
    for loaded in result.objects:
        problems = _cel_problems(loaded.obj) if isinstance(loaded.obj, Placement) else []
        if not problems:
            kept.append(loaded)
            continue
        obj = loaded.obj
        where = f"Placement {obj.namespace}/{obj.name}"
        message = "\n".join(f"{where}: {problem}" for problem in problems)
        result.errors.append(LoadError(loaded.source, loaded.index, message))
    result.objects[:] = kept
    result.errors.sort(key=lambda e: (e.source, e.index or 0))


def _cel_problems(placement: Placement) -> list[str]:
    problems = []
    for i, predicate in enumerate(placement.spec.predicates or []):
        selector = predicate.required_cluster_selector
        cel = selector.cel_selector if selector else None
        for j, expression in enumerate(cel.cel_expressions or [] if cel else []):
            try:
                compile_selector([expression])
            except CelCompileError as exc:
                field = (
                    f"spec.predicates[{i}].requiredClusterSelector.celSelector.celExpressions[{j}]"
                )
                problems.append(f"{field}: {exc}")
    return problems
