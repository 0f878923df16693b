"""Label and field selectors in their query-string syntax, compiled to predicates over wire
objects: `env=prod,tier!=db,zone in (a,b),region notin (x),gpu,!spot` and
`metadata.name=a,spec.nodeName!=`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from controllers.embedded.labelselector import parse_label_selector
from controllers.embedded.status import StatusError

__all__ = [
    "FIELD_PATHS",
    "KIND_FIELDS",
    "Predicate",
    "field_predicate",
    "label_predicate",
    "query_predicate",
]

Predicate = Callable[[dict[str, Any]], bool]

_REFERENCE = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

# The field selectors the server understands, as on a real API server for these kinds (the
# Events' are those of core/v1 and events.k8s.io/v1; `describe` selects on involvedObject).
FIELD_PATHS: dict[str, tuple[str, ...]] = {
    "metadata.name": ("metadata", "name"),
    "metadata.namespace": ("metadata", "namespace"),
    "spec.nodeName": ("spec", "nodeName"),
    "spec.schedulerName": ("spec", "schedulerName"),
    "status.phase": ("status", "phase"),
    "status.podIP": ("status", "podIP"),
    "status.nominatedNodeName": ("status", "nominatedNodeName"),
    "spec.restartPolicy": ("spec", "restartPolicy"),
    "spec.serviceAccountName": ("spec", "serviceAccountName"),
    "spec.hostNetwork": ("spec", "hostNetwork"),
    "spec.unschedulable": ("spec", "unschedulable"),
    **{f"involvedObject.{key}": ("involvedObject", key) for key in _REFERENCE},
    **{f"regarding.{key}": ("regarding", key) for key in _REFERENCE},
    "reason": ("reason",),
    "type": ("type",),
    "source": ("source", "component"),
    "reportingComponent": ("reportingComponent",),
    "reportingController": ("reportingController",),
}

_POD_FIELDS = (
    *("spec.nodeName", "spec.schedulerName", "spec.restartPolicy", "spec.serviceAccountName"),
    *("spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"),
)
_CORE_EVENT_FIELDS = (
    *(f"involvedObject.{key}" for key in _REFERENCE),
    *("reason", "type", "source", "reportingComponent"),
)
_EVENT_FIELDS = (*(f"regarding.{key}" for key in _REFERENCE), "reason", "type")
_EVENT_FIELDS += ("reportingController",)
# The fields each kind can be selected on besides metadata.name and metadata.namespace (kube's
# field label conversions); a kind not named here has only those two.
KIND_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): _POD_FIELDS,
    ("", "Node"): ("spec.unschedulable",),
    ("", "Event"): _CORE_EVENT_FIELDS,
    ("events.k8s.io", "Event"): _EVENT_FIELDS,
}
# The kinds whose refusal of a field names the fields they have (the others say only
# `field label not supported: <field>`).
_LISTING_REFUSAL = frozenset({("", "ConfigMap")})
_ALWAYS = ("metadata.name", "metadata.namespace")

_CMP_TERM = re.compile(r"^\s*([^\s!=()]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")


def _terms(text: str) -> list[str]:
    """Split on the commas that are not inside a `(...)` value set."""
    terms, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [term for term in terms if term.strip()]


def _bad(kind: str, text: str, why: str) -> StatusError:
    return StatusError(400, f"unable to parse requirement: {kind} selector {text!r}: {why}")


def label_predicate(text: str | None) -> Predicate | None:
    """The predicate of a label selector; None selects everything."""
    if not text or not text.strip():
        return None
    tests = parse_label_selector(text)

    def matches(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(test(labels) for test in tests)

    return matches


# Boolean fields read as "true"/"false", an unset one as "false" (pods' spec.hostNetwork, nodes'
# spec.unschedulable), as the API server's field label conversion gives them.
_BOOLEAN = frozenset({("spec", "hostNetwork"), ("spec", "unschedulable")})


def _field(obj: dict[str, Any], path: tuple[str, ...]) -> str:
    node: Any = obj
    for part in path:
        if not isinstance(node, dict):
            node = None
            break
        node = node.get(part)
    if path in _BOOLEAN:
        return "true" if node is True else "false"
    return node if isinstance(node, str) else ""


def _unsupported(field: str, kind: tuple[str, str] | None) -> StatusError:
    if kind in _LISTING_REFUSAL:
        only = ", ".join(f'"{f}"' for f in _ALWAYS)
        return StatusError(400, f'"{field}" is not a known field selector: only {only}')
    return StatusError(400, f"field label not supported: {field}")


def field_predicate(text: str | None, kind: tuple[str, str] | None = None) -> Predicate | None:
    """The predicate of a field selector on objects of `kind` (group, kind): the fields
    KIND_FIELDS gives it and the metadata's name and namespace (every field of FIELD_PATHS when
    `kind` is None); None selects everything."""
    if not text or not text.strip():
        return None
    tests: list[tuple[tuple[str, ...], bool, str]] = []
    for term in _terms(text):
        match = _CMP_TERM.match(term)
        if not match:
            raise _bad("field", text, f"cannot parse {term.strip()!r}")
        field, op, value = match.groups()
        known = FIELD_PATHS if kind is None else (*_ALWAYS, *KIND_FIELDS.get(kind, ()))
        if field not in known or field not in FIELD_PATHS:
            raise _unsupported(field, kind)
        tests.append((FIELD_PATHS[field], op != "!=", value))

    if len(tests) == 1:  # the common case, asked of every object a list or watch sees
        ((path, equal, value),) = tests

        def one(obj: dict[str, Any]) -> bool:
            return (_field(obj, path) == value) is equal

        return one

    def matches(obj: dict[str, Any]) -> bool:
        return all((_field(obj, path) == value) == equal for path, equal, value in tests)

    return matches


def query_predicate(
    query: Mapping[str, str], kind: tuple[str, str] | None = None
) -> Predicate | None:
    """The predicate of a request's `labelSelector` and `fieldSelector` together, on objects
    of `kind` (group, kind); None selects everything."""
    found = [
        p
        for p in (
            label_predicate(query.get("labelSelector")),
            field_predicate(query.get("fieldSelector"), kind),
        )
        if p is not None
    ]
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    first, second = found
    return lambda obj: first(obj) and second(obj)
