"""kube-apiserver's validation of the parts of a pod's spec the scheduler reads beyond resources
and tolerations: container ports, node and pod (anti-)affinity, topology spread constraints, and
the label selectors inside them (apimachinery's ValidateLabelSelector), worded and ordered as
kube v1.36 words and orders them (pkg/apis/core/validation).

* ports: a port name (IANA service name rules), `containerPort` required and in 1-65535,
  `hostPort` in 1-65535 when set, `protocol` TCP, UDP or SCTP; a `{protocol}/{hostIP}/{hostPort}`
  used twice among the containers is a `Duplicate value` (each init container on its own, as
  they run one at a time — kube reports those at index 0 of `initContainers`);
* pod (anti-)affinity terms: the label and namespace selectors, namespace names (reported at
  `namespace`, kube's path), `matchLabelKeys`/`mismatchLabelKeys`, a non-empty qualified
  `topologyKey`; preferred terms' weight in 1-100;
* topology spread: `maxSkew` above 0, `topologyKey` set, `whenUnsatisfiable` DoNotSchedule or
  ScheduleAnyway, no two constraints with one {topologyKey, whenUnsatisfiable}, `minDomains`
  above 0 and only with DoNotSchedule, node inclusion policies Honor or Ignore,
  `matchLabelKeys` only beside a labelSelector and not among its keys, the labelSelector.

Values of the wrong type are left to the model, which reports them.
"""

from __future__ import annotations

import re
from typing import Any

from apis.errors import FieldProblem
from apis.fielderrors import label_key_problems, label_value_problems
from apis.fieldrules import (
    as_dict,
    as_int,
    as_list,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from apis.names import dns1123_label_problems

__all__ = [
    "host_port_problems",
    "label_selector_problems",
    "labels_problems",
    "node_affinity_problems",
    "node_selector_problems",
    "pod_affinity_problems",
    "port_problems",
    "spread_problems",
]

_PROTOCOLS = ("SCTP", "TCP", "UDP")
_POLICIES = ("Honor", "Ignore")
_SPREAD_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PORT_CHARSET = re.compile("[-a-z0-9]+")
_ABOVE_ZERO = "must be greater than zero"


def _port_name_problems(name: str) -> list[str]:
    out = []
    if len(name) > 15:
        out.append("must be no more than 15 characters")
    if not _PORT_CHARSET.fullmatch(name):
        out.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        out.append("must contain at least one letter (a-z)")
    if "--" in name:
        out.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        out.append("must not begin or end with a hyphen")
    return out


def port_problems(ports: list[Any], path: str) -> list[FieldProblem]:
    """One container's `ports`, under `path` (`spec.containers[0].ports`)."""
    problems: list[FieldProblem] = []
    names: set[str] = set()
    for i, raw in enumerate(ports):
        port, at = as_dict(raw), f"{path}[{i}]"
        name = port.get("name")
        if isinstance(name, str) and name:
            messages = _port_name_problems(name)
            problems += [invalid(f"{at}.name", name, m) for m in messages]
            if not messages and name in names:
                problems.append(duplicate(f"{at}.name", name))
            names.add(name)
        container_port = as_int(port.get("containerPort"))
        if not container_port:
            problems.append(required(f"{at}.containerPort"))
        elif not 1 <= container_port <= 65535:
            problems.append(invalid(f"{at}.containerPort", container_port, _PORT_RANGE))
        host_port = as_int(port.get("hostPort"))
        if host_port and not 1 <= host_port <= 65535:
            problems.append(invalid(f"{at}.hostPort", host_port, _PORT_RANGE))
        protocol = port.get("protocol", "TCP")
        if isinstance(protocol, str) and protocol not in _PROTOCOLS:
            problems.append(not_supported(f"{at}.protocol", protocol, _PROTOCOLS))
    return problems


def host_port_problems(containers: list[Any], path: str) -> list[FieldProblem]:
    """`{protocol}/{hostIP}/{hostPort}` taken twice among `containers` (kube's host port
    conflict check); `path` is the containers' list (`spec.containers`)."""
    problems, seen = [], set()
    for ci, container in enumerate(containers):
        for pi, raw in enumerate(as_list(as_dict(container).get("ports"))):
            port = as_dict(raw)
            host_port = as_int(port.get("hostPort"))
            if not host_port:
                continue
            key = f"{port.get('protocol', 'TCP')}/{port.get('hostIP') or ''}/{host_port}"
            if key in seen:
                problems.append(duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return problems


def labels_problems(labels: dict[str, Any], path: str) -> list[FieldProblem]:
    """A label map's keys and values (kube's ValidateLabels), each problem at `path`."""
    problems = []
    for key in sorted(labels):
        problems += [invalid(path, key, msg) for msg in label_key_problems(str(key))]
        value = labels[key]
        if isinstance(value, str):
            problems += [invalid(path, value, msg) for msg in label_value_problems(value)]
    return problems


def _key_problems(key: Any, path: str) -> list[FieldProblem]:
    text = key if isinstance(key, str) else ""
    return [invalid(path, text, msg) for msg in label_key_problems(text)]


def label_selector_problems(selector: Any, path: str) -> list[FieldProblem]:
    """A metav1 LabelSelector (matchLabels, then each matchExpression; values must be label
    values); nothing for an absent one."""
    if not isinstance(selector, dict):
        return []
    problems = labels_problems(as_dict(selector.get("matchLabels")), f"{path}.matchLabels")
    for i, raw in enumerate(as_list(selector.get("matchExpressions"))):
        rq, at = as_dict(raw), f"{path}.matchExpressions[{i}]"
        operator, values = rq.get("operator"), as_list(rq.get("values"))
        if operator in ("In", "NotIn"):
            if not values:
                detail = "must be specified when `operator` is 'In' or 'NotIn'"
                problems.append(required(f"{at}.values", detail))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                problems.append(forbidden(f"{at}.values", detail))
        else:
            problems.append(invalid(f"{at}.operator", operator, "not a valid selector operator"))
        problems += _key_problems(rq.get("key"), f"{at}.key")
        for j, value in enumerate(values):
            if isinstance(value, str):
                problems += [
                    invalid(f"{at}.values[{j}]", value, m) for m in label_value_problems(value)
                ]
    return problems


def node_selector_problems(selector: dict[str, Any], path: str) -> list[FieldProblem]:
    """A NodeSelector (`required` of a node affinity or a volume's): at least one term."""
    terms_path = f"{path}.nodeSelectorTerms"
    terms = as_list(selector.get("nodeSelectorTerms"))
    problems = []
    if not terms:
        problems.append(required(terms_path, "must have at least one node selector term"))
    for i, term in enumerate(terms):
        problems += _term_problems(as_dict(term), f"{terms_path}[{i}]")
    return problems


def node_affinity_problems(
    affinity: dict[str, Any], path: str, *, pod: bool = False
) -> list[FieldProblem]:
    """A NodeAffinity's requirements as a pod's validation words them, under `path`. `pod`:
    also what a pod's validation adds to a scheduler's addedAffinity (at least one required
    term, preferred weights in 1-100)."""
    problems = []
    required_terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required_terms, dict):
        required_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
        if pod:
            problems += node_selector_problems(required_terms, required_path)
        else:
            terms = as_list(required_terms.get("nodeSelectorTerms"))
            for i, term in enumerate(terms):
                at = f"{required_path}.nodeSelectorTerms[{i}]"
                problems += _term_problems(as_dict(term), at)
    preferred_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(
        as_list(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    ):
        preferred, at = as_dict(raw), f"{preferred_path}[{i}]"
        weight = as_int(preferred.get("weight"))
        if pod and weight is not None and not 1 <= weight <= 100:
            problems.append(invalid(f"{at}.weight", weight, "must be in the range 1-100"))
        problems += _term_problems(as_dict(preferred.get("preference")), f"{at}.preference")
    return problems


def _term_problems(term: dict[str, Any], path: str) -> list[FieldProblem]:
    problems = []
    for j, requirement in enumerate(as_list(term.get("matchExpressions"))):
        problems += _node_requirement_problems(
            as_dict(requirement), f"{path}.matchExpressions[{j}]"
        )
    return problems


def _node_requirement_problems(rq: dict[str, Any], path: str) -> list[FieldProblem]:
    operator, values = rq.get("operator"), as_list(rq.get("values"))
    problems = []
    if operator in ("In", "NotIn") and not values:
        detail = "must be specified when `operator` is 'In' or 'NotIn'"
        problems.append(required(f"{path}.values", detail))
    elif operator in ("Exists", "DoesNotExist") and values:
        detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        problems.append(forbidden(f"{path}.values", detail))
    elif operator in ("Gt", "Lt") and len(values) != 1:
        detail = "must be specified single value when `operator` is 'Lt' or 'Gt'"
        problems.append(required(f"{path}.values", detail))
    elif operator not in _NODE_OPERATORS:
        problems.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    return problems + _key_problems(rq.get("key"), f"{path}.key")


def pod_affinity_problems(affinity: dict[str, Any], path: str) -> list[FieldProblem]:
    """A PodAffinity or PodAntiAffinity under `path`: required terms, then preferred ones."""
    problems = []
    required_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(
        as_list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    ):
        problems += _pod_term_problems(as_dict(term), f"{required_path}[{i}]")
    preferred_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(
        as_list(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    ):
        weighted, at = as_dict(raw), f"{preferred_path}[{i}]"
        weight = as_int(weighted.get("weight"))
        if weight is not None and not 1 <= weight <= 100:
            problems.append(invalid(f"{at}.weight", weight, "must be in the range 1-100"))
        problems += _pod_term_problems(
            as_dict(weighted.get("podAffinityTerm")), f"{at}.podAffinityTerm"
        )
    return problems


def _pod_term_problems(term: dict[str, Any], path: str) -> list[FieldProblem]:
    selector = term.get("labelSelector")
    problems = label_selector_problems(selector, f"{path}.labelSelector")
    problems += label_selector_problems(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for name in as_list(term.get("namespaces")):
        if isinstance(name, str):
            problems += [
                invalid(f"{path}.namespace", name, m) for m in dns1123_label_problems(name)
            ]
    problems += _label_keys_problems(term, selector, path)
    topology_key = term.get("topologyKey")
    topology_key = topology_key if isinstance(topology_key, str) else ""
    if not topology_key:
        problems.append(required(f"{path}.topologyKey", "can not be empty"))
    return problems + _key_problems(topology_key, f"{path}.topologyKey")


def _label_keys_problems(term: dict[str, Any], selector: Any, path: str) -> list[FieldProblem]:
    """matchLabelKeys and mismatchLabelKeys of a pod affinity term."""
    match = [k for k in as_list(term.get("matchLabelKeys")) if isinstance(k, str)]
    mismatch = [k for k in as_list(term.get("mismatchLabelKeys")) if isinstance(k, str)]
    if not match and not mismatch:
        return []
    if not isinstance(selector, dict):
        detail = "must not be specified when labelSelector is not set"
        return [
            forbidden(f"{path}.{field}", detail)
            for field, keys in (("matchLabelKeys", match), ("mismatchLabelKeys", mismatch))
            if keys
        ]
    problems = []
    for field, keys in (("matchLabelKeys", match), ("mismatchLabelKeys", mismatch)):
        for i, key in enumerate(keys):
            problems += _key_problems(key, f"{path}.{field}[{i}]")
    for i, key in enumerate(match):
        if key in mismatch:
            detail = "exists in both matchLabelKeys and mismatchLabelKeys"
            problems.append(invalid(f"{path}.matchLabelKeys[{i}]", key, detail))
    return problems


def spread_problems(constraints: list[Any], path: str) -> list[FieldProblem]:
    """`spec.topologySpreadConstraints`, each constraint's problems in kube's order."""
    problems: list[FieldProblem] = []
    items = [as_dict(c) for c in constraints]
    for i, constraint in enumerate(items):
        at = f"{path}[{i}]"
        max_skew = as_int(constraint.get("maxSkew"))
        if max_skew is not None and max_skew <= 0:
            problems.append(invalid(f"{at}.maxSkew", max_skew, _ABOVE_ZERO))
        key, action = constraint.get("topologyKey"), constraint.get("whenUnsatisfiable")
        if not key:
            problems.append(required(f"{at}.topologyKey", "can not be empty"))
        if action not in _SPREAD_ACTIONS:
            shown = action if action is not None else ""
            problems.append(not_supported(f"{at}.whenUnsatisfiable", shown, _SPREAD_ACTIONS))
        if any(
            (c.get("topologyKey"), c.get("whenUnsatisfiable")) == (key, action)
            for c in items[i + 1 :]
        ):
            where = f"{at}.{{topologyKey, whenUnsatisfiable}}"
            problems.append(duplicate(where, f"{{{key or ''}, {action or ''}}}"))
        problems += _min_domains_problems(constraint, action, f"{at}.minDomains")
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(field)
            if isinstance(policy, str) and policy not in _POLICIES:
                problems.append(not_supported(f"{at}.{field}", policy, _POLICIES))
        problems += _spread_keys_problems(constraint, f"{at}.matchLabelKeys")
        problems += label_selector_problems(constraint.get("labelSelector"), f"{at}.labelSelector")
    return problems


def _min_domains_problems(constraint: dict[str, Any], action: Any, path: str) -> list[FieldProblem]:
    min_domains = as_int(constraint.get("minDomains"))
    if min_domains is None:
        return []
    problems = []
    if min_domains <= 0:
        problems.append(invalid(path, min_domains, _ABOVE_ZERO))
    if action != "DoNotSchedule":
        detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action or ''}"
        problems.append(invalid(path, min_domains, detail))
    return problems


def _spread_keys_problems(constraint: dict[str, Any], path: str) -> list[FieldProblem]:
    keys = [k for k in as_list(constraint.get("matchLabelKeys")) if isinstance(k, str)]
    if not keys:
        return []
    selector = constraint.get("labelSelector")
    if not isinstance(selector, dict):
        return [forbidden(path, "must not be specified when labelSelector is not set")]
    problems = []
    for i, key in enumerate(keys):
        problems += _key_problems(key, f"{path}[{i}]")
    return problems
