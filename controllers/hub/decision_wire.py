"""A PlacementDecision's row (`placement.rows.DecisionRow`) made straight from its JSON, for the
PDs the decision writer writes: their answers and the watch events echoing them (two of each per
placement at a cold start) skip the model, whose validation of every decision cost more than the
rest of reading them.

`decision_row_of_wire(doc)` equals `decision_row(PlacementDecision.model_validate(doc))` for
the documents it accepts: the plain shape the API server returns for what the controller writes
(string metadata, owner references of the known fields, decisions of clusterName, reason and an
int32 score). Anything else gives None and is read through the model, which rejects what is
invalid, as before. It does not repeat the model's checks of label syntax and timestamps: the
API server checked those when it stored the object.
"""

from __future__ import annotations

from sys import intern
from types import MappingProxyType
from typing import Any

from apis.placements import PlacementDecision
from placement.rows import DecisionRow, decision_row

__all__ = ["decision_row_of_wire", "row_of"]

_OWNER_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
_OWNER_KNOWN = frozenset(_OWNER_FIELDS)
_OWNER_TEXT = frozenset(_OWNER_FIELDS[:4])
_DECISION_FIELDS = frozenset({"clusterName", "reason", "score"})
_INT32 = (-(2**31), 2**31 - 1)
_EMPTY: Any = MappingProxyType({})


def row_of(obj: DecisionRow | PlacementDecision) -> DecisionRow:
    """A row as it is, a model as its row."""
    return obj if isinstance(obj, DecisionRow) else decision_row(obj)


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _owners(refs: Any) -> tuple[dict[str, Any], ...] | None:
    if refs is None:
        return ()
    if not isinstance(refs, list):
        return None
    out = []
    for ref in refs:
        if not isinstance(ref, dict) or not ref.keys() <= _OWNER_KNOWN:
            return None
        if not all(_text(ref.get(f)) for f in _OWNER_TEXT):
            return None
        for flag in ("controller", "blockOwnerDeletion"):
            if ref.get(flag) is not None and not isinstance(ref[flag], bool):
                return None
        out.append({f: ref[f] for f in _OWNER_FIELDS if ref.get(f) is not None})
    return tuple(out)


def _labels(labels: Any) -> Any:
    if labels is None or labels == {}:
        return _EMPTY
    if not isinstance(labels, dict):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        return None
    return {intern(k): intern(v) for k, v in labels.items()}


def _decisions(status: Any) -> list[tuple[str, str, int | None]] | None:
    if not isinstance(status, dict):
        return None
    decisions = status.get("decisions", [])
    if not isinstance(decisions, list):
        return None
    out = []
    for d in decisions:
        if not isinstance(d, dict) or not d.keys() <= _DECISION_FIELDS:
            return None
        cluster, reason, score = d.get("clusterName"), d.get("reason"), d.get("score")
        if not isinstance(cluster, str) or not isinstance(reason, str):
            return None
        if score is not None and (type(score) is not int or not _INT32[0] <= score <= _INT32[1]):
            return None
        out.append((cluster, reason, score))
    return out


def decision_row_of_wire(doc: dict[str, Any]) -> DecisionRow | None:
    """The row of a PlacementDecision's JSON, or None when it is not the plain shape (module
    docstring)."""
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return None
    name, namespace = meta.get("name"), meta.get("namespace")
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    if not (_optional_text(name) and _optional_text(namespace)):
        return None
    if not (_optional_text(uid) and _optional_text(version)):
        return None
    labels = _labels(meta.get("labels"))
    owners = _owners(meta.get("ownerReferences"))
    if labels is None or owners is None:
        return None
    status = doc.get("status")
    decisions = _decisions(status) if status is not None else []
    if decisions is None:
        return None
    details = None
    if any(reason or score is not None for _, reason, score in decisions):
        details = tuple([(reason, score) for _, reason, score in decisions])
    return DecisionRow(
        namespace or "",
        name or "",
        uid,
        version,
        labels,
        owners,
        tuple([intern(c) for c, _, _ in decisions]),
        details,
        status is not None,
    )
