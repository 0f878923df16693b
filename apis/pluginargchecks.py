"""kube-scheduler's checks of plugin args that span fields: what its node selector adds to a
pod's node affinity rules (NodeAffinity's `addedAffinity`) and PodTopologySpread's rules for
`defaultConstraints`, worded as kube words them (`apis.configchecks`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import InitErrorDetails

from apis.configchecks import duplicate, forbidden, invalid, not_supported, required, worded
from apis.fielderrors import label_key_problems
from apis.topologyspread import TopologySpreadConstraint, constraint_problems

__all__ = ["default_constraints_errors", "loc_of", "node_selector_extras"]

_FIELD_OPERATORS = ("In", "NotIn")


def node_selector_extras(affinity: Mapping[str, Any]) -> list[InitErrorDetails]:
    """What kube's node selector adds to a pod's rules: `matchFields` name only
    `metadata.name`, with In or NotIn and one value; `Gt`/`Lt` take an integer."""
    terms: list[tuple[str, Any]] = []
    required_terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    base = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    for i, term in enumerate(required_terms.get("nodeSelectorTerms") or []):
        terms.append((f"{base}[{i}]", term))
    base = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    for i, preferred in enumerate(
        affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    ):
        terms.append((f"{base}[{i}].preference", (preferred or {}).get("preference") or {}))
    errors: list[InitErrorDetails] = []
    for where, term in terms:
        for j, rq in enumerate(term.get("matchExpressions") or []):
            if rq.get("operator") in ("Gt", "Lt"):
                for k, value in enumerate(rq.get("values") or []):
                    if not isinstance(value, str) or not value.lstrip("-").isdigit():
                        detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                        loc = loc_of(f"{where}.matchExpressions[{j}].values[{k}]")
                        errors.append(invalid(loc, value, detail))
        for j, rq in enumerate(term.get("matchFields") or []):
            at = f"{where}.matchFields[{j}]"
            values = rq.get("values") or []
            if rq.get("operator") not in _FIELD_OPERATORS:
                loc = loc_of(f"{at}.operator")
                errors.append(not_supported(loc, rq.get("operator"), _FIELD_OPERATORS))
            elif len(values) != 1:
                errors.append(invalid(loc_of(f"{at}.values"), values, "must have one element"))
            if rq.get("key") != "metadata.name":
                detail = "not a valid field selector key"
                errors.append(invalid(loc_of(f"{at}.key"), rq.get("key"), detail))
    return errors


def loc_of(path: str) -> tuple[str | int, ...]:
    """`a.b[0].c` -> ("a", "b", 0, "c"), a location for `located`."""
    parts = path.replace("[", ".").replace("]", "").split(".")
    return tuple(int(p) if p.isdigit() else p for p in parts)


def default_constraints_errors(
    constraints: Sequence[TopologySpreadConstraint],
) -> list[InitErrorDetails]:
    """PodTopologySpread's rules for each default constraint: maxSkew above 0, a topologyKey
    that is a label name, whenUnsatisfiable DoNotSchedule or ScheduleAnyway, no labelSelector
    (it is derived from each pod's owners), no two alike; and the rest of a pod's rules."""
    errors: list[InitErrorDetails] = []
    seen: set[tuple[str | None, str | None]] = set()
    actions = ("DoNotSchedule", "ScheduleAnyway")
    for index, c in enumerate(constraints):
        at: tuple[str | int, ...] = ("defaultConstraints", index)
        if c.max_skew is None or c.max_skew <= 0:
            errors.append(invalid((*at, "maxSkew"), c.max_skew or 0, "not in valid range (0, inf)"))
        if not c.topology_key:
            errors.append(required((*at, "topologyKey"), "can not be empty"))
        else:
            problems = label_key_problems(c.topology_key)
            errors += [invalid((*at, "topologyKey"), c.topology_key, p) for p in problems]
        if not c.when_unsatisfiable:
            errors.append(required((*at, "whenUnsatisfiable"), "can not be empty"))
        elif c.when_unsatisfiable not in actions:
            errors.append(not_supported((*at, "whenUnsatisfiable"), c.when_unsatisfiable, actions))
        if c.label_selector is not None:
            detail = "constraint must not define a selector, as they deduced for each pod"
            errors.append(forbidden((*at, "labelSelector"), detail))
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in seen:
            errors.append(duplicate(at, f"{{{pair[0]}, {pair[1]}}}"))
        seen.add(pair)
        # the rest of a pod's rules (minDomains, the policies, matchLabelKeys)
        kube_args_fields = (".maxSkew:", ".topologyKey:", ".whenUnsatisfiable:")
        for line in constraint_problems(c, f"defaultConstraints[{index}]"):
            path, _, message = line.partition(": ")
            if not any(f"{path}:".endswith(name) for name in kube_args_fields):
                errors.append(worded(loc_of(path), message))
    return errors
