"""Node selectors compiled to boolean masks over a `NodeSnapshot`'s label columns.

`nodeSelector` and the In / NotIn / Exists / DoesNotExist expressions of node affinity go
through the hub's compilation (`placement.selectors`); Gt and Lt, which label selectors lack,
compare the label value parsed as an int64 (a value that does not parse matches nothing, as in
Kubernetes). `matchFields` supports `metadata.name` only, the one field Kubernetes allows.
A term with neither expressions nor fields matches no node; terms are ORed.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from apis.core import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from apis.fielderrors import invalid
from apis.meta import LabelSelectorRequirement
from placement.arrays import BoolMask
from placement.pods.cluster.nodes import NodeSnapshot
from placement.selectors import SelectorError, requirements_mask

__all__ = ["NAME_FIELD", "node_selector_mask", "selector_terms_mask", "term_mask"]

NAME_FIELD = "metadata.name"
_INT64 = (-(2**63), 2**63 - 1)


def node_selector_mask(selector: Mapping[str, str] | None, nodes: NodeSnapshot) -> BoolMask:
    """Nodes carrying every label of a pod's `spec.nodeSelector`."""
    requirements = [
        LabelSelectorRequirement(key=k, operator="In", values=[v])
        for k, v in (selector or {}).items()
    ]
    return requirements_mask(requirements, nodes.label, nodes.size)


def selector_terms_mask(selector: NodeSelector, nodes: NodeSnapshot) -> BoolMask:
    """Nodes matching any term of a required node affinity; raises SelectorError."""
    mask = np.zeros(nodes.size, dtype=bool)
    for term in selector.node_selector_terms:
        mask |= term_mask(term, nodes)
    return mask


def term_mask(term: NodeSelectorTerm, nodes: NodeSnapshot) -> BoolMask:
    """Nodes matching every expression and field of one term; raises SelectorError."""
    expressions = term.match_expressions or []
    fields = term.match_fields or []
    if not expressions and not fields:
        return np.zeros(nodes.size, dtype=bool)
    plain = [_label_requirement(r) for r in expressions if r.operator not in ("Gt", "Lt")]
    mask = requirements_mask(plain, nodes.label, nodes.size)
    for req in expressions:
        if req.operator in ("Gt", "Lt"):
            mask &= _compare_mask(req, nodes)
    for req in fields:
        mask &= _name_mask(req, nodes)
    return mask


def _label_requirement(req: NodeSelectorRequirement) -> LabelSelectorRequirement:
    operator = req.operator
    assert operator != "Gt" and operator != "Lt"
    return LabelSelectorRequirement(key=req.key, operator=operator, values=req.values)


def _int64(text: str) -> int | None:
    try:
        value = int(text, 10)
    except ValueError:
        return None
    return value if _INT64[0] <= value <= _INT64[1] else None


def _compare_mask(req: NodeSelectorRequirement, nodes: NodeSnapshot) -> BoolMask:
    values = req.values or []
    if len(values) != 1:  # labels.NewRequirement's words, as kube-scheduler reports them
        detail = "for 'Gt', 'Lt' operators, exactly one value is required"
        raise SelectorError(invalid("values", values or None, detail))
    bound = _int64(values[0])
    if bound is None:
        detail = "for 'Gt', 'Lt' operators, the value must be an integer"
        raise SelectorError(invalid("values[0]", values[0], detail))
    column = nodes.label(req.key)
    # One verdict per distinct value, then looked up by code (-1, absent, maps to False).
    table = np.zeros(len(column.values) + 1, dtype=bool)
    for code, text in enumerate(column.values):
        number = _int64(text)
        if number is not None:
            table[code + 1] = number > bound if req.operator == "Gt" else number < bound
    hit: BoolMask = table.take(column.codes + 1)
    return hit


def _name_mask(req: NodeSelectorRequirement, nodes: NodeSnapshot) -> BoolMask:
    values = req.values or []
    if req.key != NAME_FIELD or req.operator not in ("In", "NotIn") or len(values) != 1:
        raise SelectorError(
            f"matchFields: Invalid value: {req.key} {req.operator} {values}: only "
            f"'{NAME_FIELD}' with 'In' or 'NotIn' and a single value is supported"
        )
    mask = np.zeros(nodes.size, dtype=bool)
    row = nodes.row_of(values[0])
    if row is not None:
        mask[row] = True
    return mask if req.operator == "In" else ~mask
