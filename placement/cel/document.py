"""The ManagedCluster CEL sees as `managedCluster`: what OCM's typed conversion gives.

OCM's informer decodes the cluster into its Go type and CEL reads it back through
`runtime.DefaultUnstructuredConverter.ToUnstructured`, so the document is the Go struct's
shape, not the stored JSON:

* quantities in canonical form (`status.allocatable.cpu: 1.5` -> `"1500m"`, the JSON number
  4 -> `"4"`, `1024Mi` -> `"1Gi"`), as `resource.Quantity.String()` writes them;
* fields without `omitempty` always there, null or zero when unset (`spec.hubAcceptsClient:
  false`, `status.conditions: null`, `metadata.creationTimestamp: null`, `status.version: {}`,
  a taint's `timeAdded: null`), and `status` itself even when the object has none;
* `omitempty` fields gone when empty (`labels: {}`, a claim's empty `value`);
* the CRD default the API server stored (`spec.leaseDurationSeconds: 60`);
* fields the Go type does not know dropped.

`SHAPE` below is that struct, written from `open-cluster-management.io/api/cluster/v1` and
`metav1.ObjectMeta`/`Condition`; `typed(wire)` applies it to the wire form of an object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from sys import intern
from types import MappingProxyType
from typing import Any

from apis.cluster import ManagedCluster
from apis.quantity import Quantity, QuantityError

__all__ = [
    "ANNOTATION_LIMIT",
    "NOT_KEPT",
    "SHAPE",
    "claim_projector",
    "claims_document",
    "claims_text",
    "cluster_document",
    "kept_annotations",
    "typed",
]

# A field rule: (kind, omitempty, detail). Kinds: "str", "bool", "int" (zero value written
# unless omitempty), "time" (metav1.Time: null when unset), "ptr" (a pointer: absent when
# unset), "raw" (kept as it came, omitempty), "map"/"list" (detail: the rule of an item),
# "struct" (detail: its fields; never omitted, as Go's converter never omits a struct),
# "quantity" (canonical text).
Rule = tuple[str, bool, Any]

_STR, _STR_OMIT = ("str", False, None), ("str", True, None)
_INT_OMIT = ("int", True, None)
_TIME = ("time", False, None)
_PTR = ("ptr", True, None)
_RAW = ("raw", True, None)

_CONDITION: dict[str, Rule] = {
    "type": _STR,
    "status": _STR,
    "observedGeneration": _INT_OMIT,
    "lastTransitionTime": _TIME,
    "reason": _STR,
    "message": _STR,
}
_OWNER: dict[str, Rule] = {
    "apiVersion": _STR,
    "kind": _STR,
    "name": _STR,
    "uid": _STR,
    "controller": _PTR,
    "blockOwnerDeletion": _PTR,
}
_METADATA: dict[str, Rule] = {
    "name": _STR_OMIT,
    "generateName": _STR_OMIT,
    "namespace": _STR_OMIT,
    "selfLink": _STR_OMIT,
    "uid": _STR_OMIT,
    "resourceVersion": _STR_OMIT,
    "generation": _INT_OMIT,
    "creationTimestamp": _TIME,
    "deletionTimestamp": _PTR,
    "deletionGracePeriodSeconds": _PTR,
    "labels": _RAW,
    "annotations": _RAW,
    "ownerReferences": ("list", True, ("struct", False, _OWNER)),
    "finalizers": _RAW,
    "managedFields": _RAW,
}
_SPEC: dict[str, Rule] = {
    "managedClusterClientConfigs": (
        "list",
        True,
        ("struct", False, {"url": _STR, "caBundle": _STR_OMIT}),
    ),
    "hubAcceptsClient": ("bool", False, None),
    "leaseDurationSeconds": _INT_OMIT,
    "taints": (
        "list",
        True,
        ("struct", False, {"key": _STR, "value": _STR_OMIT, "effect": _STR, "timeAdded": _TIME}),
    ),
}
_QUANTITIES: Rule = ("map", True, ("quantity", False, None))
_STATUS: dict[str, Rule] = {
    "conditions": ("list", False, ("struct", False, _CONDITION)),
    "capacity": _QUANTITIES,
    "allocatable": _QUANTITIES,
    "version": ("struct", False, {"kubernetes": _STR_OMIT}),
    "clusterClaims": ("list", True, ("struct", False, {"name": _STR_OMIT, "value": _STR_OMIT})),
    "managedNamespaces": (
        "list",
        True,
        (
            "struct",
            False,
            {
                "name": _STR,
                "clusterSet": _STR,
                "conditions": ("list", True, ("struct", False, _CONDITION)),
            },
        ),
    ),
}
SHAPE: dict[str, Rule] = {
    "apiVersion": _STR_OMIT,
    "kind": _STR_OMIT,
    "metadata": ("struct", False, _METADATA),
    "spec": ("struct", False, _SPEC),
    "status": ("struct", False, _STATUS),
}
"""ManagedCluster's Go struct as field rules."""

_DEFAULTS = {("spec", "leaseDurationSeconds"): 60}
"""The CRD's defaults: the API server stores them when the field is absent."""

_ZERO = {"str": "", "bool": False, "int": 0}


def typed(wire: Mapping[str, Any]) -> dict[str, Any]:
    """A ManagedCluster's wire form as Go's typed conversion writes it back."""
    document = dict(wire)
    spec = document.get("spec")
    spec = dict(spec) if isinstance(spec, Mapping) else {}
    for (_, field), default in _DEFAULTS.items():
        if spec.get(field) is None:
            spec[field] = default
    document["spec"] = spec
    return _struct(document, SHAPE)


def _struct(value: Any, fields: Mapping[str, Rule]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for name, found in value.items():
            rule = fields.get(name)
            if rule is None or found is None:
                continue  # unknown to the Go type, or unset
            if rule[1] and (found == "" or found == 0 or found == {} or found == []):
                continue  # omitempty (False == 0 too)
            out[name] = _field(found, rule)
    # Go writes every field without omitempty, unset ones as their zero value, in its order
    required = _REQUIRED.get(id(fields))
    if required is None:
        required = _REQUIRED[id(fields)] = tuple(n for n, r in fields.items() if not r[1])
    if all(name in out for name in required):
        return out
    ordered: dict[str, Any] = {}
    for name, rule in fields.items():
        if name in out:
            ordered[name] = out[name]
        elif not rule[1]:
            ordered[name] = _struct(None, rule[2]) if rule[0] == "struct" else _ZERO.get(rule[0])
    return ordered


_REQUIRED: dict[int, tuple[str, ...]] = {}


def _field(value: Any, rule: Rule) -> Any:
    kind, _, detail = rule
    if kind == "struct":
        return _struct(value, detail)
    if kind == "map" and isinstance(value, dict):
        return {k: (_field(v, detail) if v is not None else None) for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [(_field(v, detail) if v is not None else _ZERO.get(detail[0])) for v in value]
    if kind == "quantity":
        return _canonical(value)
    return value


_CANONICAL: dict[tuple[type, Any], Any] = {}
"""Canonical text by wire value: fleets repeat a few capacities (`16`, `64Gi`) endlessly."""


def _canonical(value: Any) -> Any:
    key = (type(value), value)
    found = _CANONICAL.get(key)
    if found is None:
        try:
            found = Quantity.parse(value).canonical()
        except QuantityError:
            found = value
        if len(_CANONICAL) >= 4096:
            _CANONICAL.clear()
        _CANONICAL[key] = found
    return found


def cluster_document(cluster: ManagedCluster) -> dict[str, Any]:
    """`managedCluster` for this cluster."""
    return typed(cluster.model_dump(mode="json", by_alias=True, exclude_none=True))


def claims_text(claims: Iterable[tuple[str, str]]) -> str:
    """A cluster's `status.clusterClaims` as written (order and duplicate names kept), as
    (name, value) pairs, absent ones empty, in one string: rows and columns keep it, interned
    or coded, so that clusters reporting the same list share one value. Empty: no claims."""
    pairs = [[name, value] for name, value in claims]
    return json.dumps(pairs, ensure_ascii=False, separators=(",", ":")) if pairs else ""


def claims_document(text: str) -> list[dict[str, str]]:
    """`status.clusterClaims` as CEL sees it, from `claims_text`: a claim's empty name or
    value left out (both are omitempty)."""
    out: list[dict[str, str]] = []
    for name, value in json.loads(text) if text else ():
        claim = {"name": name} if name else {}
        if value:
            claim["value"] = value
        out.append(claim)
    return out


def claim_projector(names: Iterable[str]) -> Callable[[str], str]:
    """The function giving, of a `claims_text`, the claims named one of `names` or without a
    name, in order, as a `claims_text` that is "[]" when none is but the list is there (""
    stays ""). Names starting with `,` or `]` are not for it (`claim_reads` leaves them out).

    Without a backslash in the text, a claim's value ends at the first quote after its opening
    one, and `["<name>",` is found only where a claim starts: inside a string a `[` followed by
    a quote ends the string, which a `,` or `]` must follow, and no name starts with either.
    With a backslash, the list is parsed."""
    wanted = set(names) | {""}
    heads = sorted(re.escape("[" + json.dumps(n, ensure_ascii=False) + ",") for n in wanted)
    pairs = re.compile("(?:" + "|".join(heads) + r')"[^"]*"\]').findall

    def project(text: str) -> str:
        if not text:
            return ""
        if "\\" in text:
            kept = [pair for pair in json.loads(text) if pair[0] in wanted]
            return json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
        return "[" + ",".join(pairs(text)) + "]"

    return project


ANNOTATION_LIMIT = 256
"""The longest annotation value the index's rows and the snapshot keep for CEL: big ones
(`last-applied-configuration`) would cost kilobytes a cluster, and selectors read short flags."""
NOT_KEPT: Mapping[str, str] = MappingProxyType({})
"""A cluster's kept annotations when one is longer than `ANNOTATION_LIMIT` (told by identity):
selectors reading annotations then run on its whole object."""
_NONE: Mapping[str, str] = MappingProxyType({})


def kept_annotations(annotations: Mapping[str, str] | None) -> Mapping[str, str]:
    """What is kept of `metadata.annotations` for CEL: all of them, keys and values interned
    (fleets repeat them), or `NOT_KEPT`."""
    if not annotations:
        return _NONE
    if any(len(value) > ANNOTATION_LIMIT for value in annotations.values()):
        return NOT_KEPT
    return {intern(key): intern(value) for key, value in annotations.items()}
