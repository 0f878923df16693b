"""`placement validate -f PATH... [--validate strict|warn|ignore]`: check manifests against the
API models, the CRD rules, Kubernetes' name rules and (as kubectl's `--validate=strict`) the
fields each kind knows, offline; every bad document is reported on stderr and the exit code is 1.
A Placement's CEL expressions are compiled and its label and claim selectors (and a
ManagedClusterSet's label selector) built too: an expression that does not compile, an operator
such as `in` (OCM's CRDs admit any string) or a value that is no label value would make the
placement Misconfigured once it reaches the controller, so it is an error here, reported with its
file, document, object, field and OCM's own words; so is every spec value the controller
refuses (`controllers.cli.placement_checks`: a prioritizer mode or builtIn name, spread terms) or
ignores (a toleration operator that tolerates nothing).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import TYPE_CHECKING

from controllers.cli.common import EXIT_ERROR, EXIT_OK, add_filename, print_warnings

# The models, the manifest reader, the CEL compiler and the selectors are imported where they
# are used: `placement validate --help` builds its parser without them (start-up time).
if TYPE_CHECKING:
    from apis.placements import Placement
    from controllers.cli.common import Subparsers
    from controllers.cli.manifests import LoadedObject, LoadResult

__all__ = ["add_parser"]


def add_parser(subparsers: Subparsers) -> None:
    """Add `validate` to the command's subparsers."""
    validate = subparsers.add_parser(
        "validate",
        help="check manifests against the API models and CRD rules",
        description=(
            "Read YAML/JSON manifests (files or folders, multi-document, v1 Lists) and report "
            "every document that breaks a rule of its kind (types, ranges, patterns, names, "
            "fields the kind does not know), naming file, document, object and field. Kinds "
            "of other API groups without a model here (CRDs, RBAC, Services, ...: a kustomize "
            "build) are listed as skipped. Exit 0 if all are valid, 1 otherwise."
        ),
    )
    add_filename(validate)
    validate.set_defaults(func=_cmd_validate)


# The API groups of the kinds this project defines: an unknown kind there is a typo; so is a
# kustomization given as a manifest (its message says to build it).
KUSTOMIZE_GROUP = "kustomize.config.k8s.io"
OWN_GROUPS = frozenset(
    {
        "cluster.open-cluster-management.io",
        "addon.open-cluster-management.io",
        "scheduling.x-k8s.io",
    }
)


def _skipped(result: LoadResult) -> Counter[str]:
    """Take the documents of kinds without a model in another API group (a CRD, a
    ServiceAccount, a Role, a Service, cert-manager's kinds: what a kustomize build holds
    besides ours) out of the errors; how many of each kind."""
    skipped: Counter[str] = Counter()
    kept = []
    for error in result.errors:
        if error.api_kind is None or _typo(*error.api_kind):
            kept.append(error)
        else:
            skipped[error.api_kind[1]] += 1
    result.errors[:] = kept
    return skipped


def _typo(api_version: str, kind: str) -> bool:
    """An unknown kind that is a mistake, not a kind we have no model for: a kind of ours under
    another apiVersion, any other kind in one of our groups, a kustomization."""
    from apis.registry import KINDS

    group = api_version.rpartition("/")[0]
    modelled = {known for _, known in KINDS}
    return kind in modelled or group in OWN_GROUPS or group == KUSTOMIZE_GROUP


def _cmd_validate(args: argparse.Namespace) -> int:
    from controllers.cli.manifests import load_paths

    result = load_paths(args.filename, args.validate)
    _check_selectors(result)
    skipped = _skipped(result)
    print_warnings(result.warnings)
    for error in result.errors:
        print(error, file=sys.stderr)
    counts = Counter(type(o.obj).__name__ for o in result.objects)
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "no objects"
    if skipped:
        listed = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
        summary += f"; skipped (kinds without a model, not checked): {listed}"
    if result.errors:
        print(f"{len(result.errors)} invalid document(s); valid: {summary}", file=sys.stderr)
        return EXIT_ERROR
    print(f"valid: {summary}")
    return EXIT_OK


def _check_selectors(result: LoadResult) -> None:
    """Move every Placement or ManagedClusterSet whose selectors the controller could not build
    from the objects to the errors: one error per document, one problem per expression or
    requirement, in document order."""
    from apis.cluster import ManagedClusterSet
    from apis.placements import Placement
    from controllers.cli.manifests import LoadError
    from controllers.cli.placement_checks import placement_spec_problems
    from placement.selectors import selector_problems

    kept: list[LoadedObject] = []
    for loaded in result.objects:
        obj = loaded.obj
        problems: list[str] = []
        if isinstance(obj, Placement):
            problems = _placement_selector_problems(obj) + _cel_problems(obj)
            problems += placement_spec_problems(obj)
        elif isinstance(obj, ManagedClusterSet):
            selector = obj.spec.cluster_selector
            if selector.selector_type == "LabelSelector":
                path = "spec.clusterSelector.labelSelector"
                problems = selector_problems(selector.label_selector, path)
        if not problems:
            kept.append(loaded)
            continue
        where = (
            f"{obj.KIND} {obj.namespace}/{obj.name}" if obj.namespace else f"{obj.KIND} {obj.name}"
        )
        message = "\n".join(f"{where}: {problem}" for problem in problems)
        result.errors.append(LoadError(loaded.source, loaded.index, message))
    result.objects[:] = kept
    result.errors.sort(key=lambda e: (e.source, e.index or 0))


def _placement_selector_problems(placement: Placement) -> list[str]:
    from placement.selectors import selector_problems

    problems = []
    for i, predicate in enumerate(placement.spec.predicates or []):
        selector = predicate.required_cluster_selector
        if selector is None:
            continue
        path = f"spec.predicates[{i}].requiredClusterSelector"
        problems += selector_problems(selector.label_selector, f"{path}.labelSelector")
        problems += selector_problems(selector.claim_selector, f"{path}.claimSelector")
    strategy = placement.spec.decision_strategy
    groups = (
        strategy.group_strategy.decision_groups if strategy and strategy.group_strategy else None
    )
    for i, group in enumerate(groups or []):
        members = group.group_cluster_selector
        path = f"spec.decisionStrategy.groupStrategy.decisionGroups[{i}].groupClusterSelector"
        problems += selector_problems(members.label_selector, f"{path}.labelSelector")
        problems += selector_problems(members.claim_selector, f"{path}.claimSelector")
    return problems


def _cel_problems(placement: Placement) -> list[str]:
    from placement.cel import CelCompileError, compile_selector

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
