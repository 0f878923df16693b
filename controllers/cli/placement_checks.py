"""What `placement validate` checks in a Placement beyond its model: the fields OCM leaves free
strings in its CRD and checks in the controller (the prioritizer policy's `mode`, a
`builtIn` prioritizer's name, the spread terms, the decisions' names), which the controller
would answer with PlacementMisconfigured, and a toleration `operator` other than `Exists` or
`Equal`, which OCM takes without a word and which then tolerates nothing. Each problem names
the field and says it in the API server's words for an unsupported value, with the
controller's message or a did-you-mean where one helps.

The names come from the scheduler's own registry and profile, so validate and the controller
cannot disagree on what a `builtIn` may be.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable

from apis.placements import Placement
from placement.outcome import decision_name_problem
from plugins import DEFAULT_PROFILE, default_registry
from plugins.evenspread.evenspread import validate_terms
from plugins.tainttoleration import validate_tolerations

__all__ = ["builtin_prioritizers", "placement_spec_problems"]

MODES = ("Additive", "Exact")
OPERATORS = ("Equal", "Exists")


def builtin_prioritizers() -> list[str]:
    """The `builtIn` names the controller accepts, sorted."""
    profile = DEFAULT_PROFILE
    names = set(default_registry().prioritizers) - {profile.addon_prioritizer}
    return sorted(names | profile.selector_coordinates)


def _unsupported(path: str, value: str, supported: Iterable[str], why: str = "") -> str:
    """The API server's words for a value outside an enum, with a did-you-mean."""
    choices = list(supported)
    listed = ", ".join(json.dumps(choice) for choice in choices)
    close = difflib.get_close_matches(value, choices, n=1)
    hint = f"; did you mean {json.dumps(close[0])}?" if close else ""
    tail = f" ({why})" if why else ""
    return f"{path}: Unsupported value: {json.dumps(value)}: supported values: {listed}{hint}{tail}"


def placement_spec_problems(placement: Placement) -> list[str]:
    """Every problem of `placement`'s spec the controller would refuse (or, for toleration
    operators, silently ignore), one line each, in field order."""
    return (
        _policy_problems(placement) + _toleration_problems(placement) + _other_problems(placement)
    )


def _policy_problems(placement: Placement) -> list[str]:
    policy = placement.spec.prioritizer_policy
    if policy is None:
        return []
    problems = []
    if policy.mode not in (*MODES, ""):
        why = f"the controller: incorrect prioritizer policy mode: {policy.mode}"
        problems.append(_unsupported("spec.prioritizerPolicy.mode", policy.mode, MODES, why))
    known = builtin_prioritizers()
    for i, config in enumerate(policy.configurations or []):
        coordinate = config.score_coordinate
        path = f"spec.prioritizerPolicy.configurations[{i}].scoreCoordinate"
        if config.weight == 0:
            continue  # disabled: the controller never looks at it
        if coordinate.type == "BuiltIn" and (coordinate.built_in or "") not in known:
            name = coordinate.built_in or ""
            why = f"the controller: incorrect builtin prioritizer: {name}"
            problems.append(_unsupported(f"{path}.builtIn", name, known, why))
        elif coordinate.type == "AddOn" and coordinate.add_on is None:
            problems.append(f"{path}.addOn: Required value: addOn should not be empty")
    return problems


def _toleration_problems(placement: Placement) -> list[str]:
    tolerations = placement.spec.tolerations or []
    problems = []
    for i, toleration in enumerate(tolerations):
        if toleration.operator not in OPERATORS:
            why = "a toleration with another operator tolerates nothing"
            path = f"spec.tolerations[{i}].operator"
            problems.append(_unsupported(path, toleration.operator, OPERATORS, why))
    known = [t for t in tolerations if t.operator in OPERATORS]
    problem = validate_tolerations(known)
    if problem:
        problems.append(f"spec.tolerations: {problem}")
    return problems


def _other_problems(placement: Placement) -> list[str]:
    problems = []
    spread = placement.spec.spread_policy
    problem = validate_terms(list(spread.spread_constraints or []) if spread else [])
    if problem:
        problems.append(f"spec.spreadPolicy.spreadConstraints: {problem}")
    problem = decision_name_problem(placement)
    if problem and placement.name:  # no name: the server gives one (generateName)
        problems.append(f"metadata.name: {problem}")
    return problems
