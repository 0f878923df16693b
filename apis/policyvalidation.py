"""kube-apiserver's validation of a policy/v1 PodDisruptionBudget, in its words and order
(pkg/apis/policy/validation): `minAvailable` and `maxUnavailable` not both set (the whole spec
printed as the API server prints its internal struct), each a count of at least 0 or a
percentage (`[0-9]+%`) of at most 100%, the selector, `unhealthyPodEvictionPolicy`."""

from __future__ import annotations

import re
from typing import Any

from apis.errors import FieldProblem
from apis.fieldrules import as_dict, as_list, invalid, not_supported
from apis.podspecvalidation import label_selector_problems

__all__ = ["budget_problems"]

_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_WORDS = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  "
    "or '93%', regex used for validation is '[0-9]+%')"
)
_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def _selector_json(selector: Any) -> Any:
    """A label selector as Go's encoding/json writes metav1.LabelSelector (empty parts left
    out, map keys sorted)."""
    if not isinstance(selector, dict):
        return None
    out: dict[str, Any] = {}
    labels = as_dict(selector.get("matchLabels"))
    if labels:
        out["matchLabels"] = {k: labels[k] for k in sorted(labels)}
    expressions = []
    for raw in as_list(selector.get("matchExpressions")):
        rq = as_dict(raw)
        item: dict[str, Any] = {"key": rq.get("key", ""), "operator": rq.get("operator", "")}
        if rq.get("values"):
            item["values"] = rq["values"]
        expressions.append(item)
    if expressions:
        out["matchExpressions"] = expressions
    return out


def _int_or_percent(value: Any, path: str) -> list[FieldProblem]:
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            return [invalid(path, value, _PERCENT_WORDS)]
        if int(value[:-1]) > 100:
            return [invalid(path, value, "must not be greater than 100%")]
        return []
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []


def budget_problems(doc: dict[str, Any]) -> list[FieldProblem]:
    """What kube-apiserver refuses in a PodDisruptionBudget's spec."""
    spec = as_dict(doc.get("spec"))
    problems: list[FieldProblem] = []
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    if low is not None and high is not None:
        shown = {
            "MinAvailable": low,
            "Selector": _selector_json(spec.get("selector")),
            "MaxUnavailable": high,
            "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy"),
        }
        problems.append(
            invalid("spec", shown, "minAvailable and maxUnavailable cannot be both set")
        )
    if low is not None:
        problems += _int_or_percent(low, "spec.minAvailable")
    if high is not None:
        problems += _int_or_percent(high, "spec.maxUnavailable")
    problems += label_selector_problems(spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if isinstance(policy, str) and policy not in _POLICIES:
        problems.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, _POLICIES))
    return problems
