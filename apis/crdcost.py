"""What kube-apiserver refuses in a CustomResourceDefinition besides its shape, for the embedded
server to refuse the same CRDs (pure: a CRD document in, kube's messages out):

* a schema that gives `metadata` anything but its `type`: `spec.validation.openAPIV3Schema.
  properties[metadata]: Forbidden: must not specify anything other than name and generateName,
  but metadata is implicitly specified`;
* an `x-kubernetes-validations` rule whose estimated cost is over kube's budget for one rule
  (`RULE_BUDGET`): `...x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds
  budget by factor of 8.1x (try simplifying the rule, ...)`.

How the cost is estimated (meant to be conservative, counting at least what kube's estimator
counts for the same walks and string reads; its factor is its own, which on ElasticQuota's rule
is kube's 8.1x):

* every token of the rule (name, literal, operator) costs 1;
* a macro over a collection (`all`, `exists`, `exists_one`, `map`, `filter`) costs the most
  elements the collection can have times (1 + the cost of its body): `maxItems` or
  `maxProperties` where declared, else as many of the smallest elements as fit in a request
  (`REQUEST_BYTES`, kube's limit of a request body), as kube bounds an undeclared size;
* a function that reads a whole string (`string`, `quantity`, `matches`, `split`, `find`,
  ...) costs a tenth of the most characters its argument can have: `maxLength` where
  declared, else the request size. An argument whose schema cannot be told is taken as unbounded.

kube's estimator walks the type-checked expression with a cost model for every function; this
one reads the rule's text, and knows only the functions named above (a collection or string
it cannot find in the schema is taken as unbounded): a rule whose cost comes from another
function (each costs one token here) may be estimated lower than kube does. ElasticQuota's
rule over maps of unbounded strings comes out at 8.1x, as kube says, and far within the budget
once they are bounded (tests/apis/test_crdcost.py; tests/e2e/test_crd_refusals.py checks both
on kube-apiserver).
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    "REQUEST_BYTES",
    "RULE_BUDGET",
    "crd_refusals",
    "metadata_refusals",
    "rule_cost",
]

REQUEST_BYTES = 3 * 1024 * 1024  # kube-apiserver's largest request body
RULE_BUDGET = 10_000_000  # kube's estimated cost limit of one rule of a CRD
ROOT = "spec.validation.openAPIV3Schema"
_MACRO = re.compile(r"([A-Za-z_][\w.]*(?:\[[^\[\]]*\])*)\.(all|exists_one|exists|map|filter)\(")
_STRING_CALL = re.compile(r"\b(string|quantity|url|ip|cidr|isQuantity|isURL|isIP|isCIDR)\(")
_STRING_METHOD = re.compile(
    r"([A-Za-z_][\w.]*(?:\[[^\[\]]*\])*)\."
    r"(matches|contains|startsWith|endsWith|lowerAscii|upperAscii|split|find|findAll|replace"
    r"|trim|indexOf|lastIndexOf|substring)\("
)
_TOKEN = re.compile(r"\w+|'[^']*'|\"[^\"]*\"|[^\s\w]")
_SCALAR_BYTES = {"string": 2, "integer": 1, "number": 1, "boolean": 4, "object": 2, "array": 2}


def metadata_refusals(schema: dict[str, Any]) -> list[str]:
    """kube's refusal of a root schema that says more of `metadata` than its type."""
    meta = (schema.get("properties") or {}).get("metadata")
    if isinstance(meta, dict) and set(meta) - {"type"}:
        return [
            f"{ROOT}.properties[metadata]: Forbidden: must not specify anything other than "
            "name and generateName, but metadata is implicitly specified"
        ]
    return []


def crd_refusals(crd: dict[str, Any]) -> list[str]:
    """Every refusal kube-apiserver would make of this CRD for these two rules, in its words."""
    out: list[str] = []
    for version in (crd.get("spec") or {}).get("versions") or ():
        schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
        if isinstance(schema, dict):
            # as kube: a schema refused for its metadata has its rules' costs not estimated
            out += metadata_refusals(schema) or _rule_refusals(schema, ROOT)
    return list(dict.fromkeys(out))


def _rule_refusals(node: dict[str, Any], path: str) -> list[str]:
    out = []
    for i, rule in enumerate(node.get("x-kubernetes-validations") or ()):
        cost = rule_cost(str(rule.get("rule", "")), node)
        if cost > RULE_BUDGET:
            factor = round(cost / RULE_BUDGET, 1)
            out.append(
                f"{path}.x-kubernetes-validations[{i}].rule: Forbidden: estimated rule cost "
                f"exceeds budget by factor of {factor}x (try simplifying the rule, or adding "
                "maxItems, maxProperties, and maxLength where arrays, maps, and strings are "
                "declared)"
            )
    for name, sub in (node.get("properties") or {}).items():
        if isinstance(sub, dict):
            out += _rule_refusals(sub, f"{path}.properties[{name}]")
    for key in ("items", "additionalProperties"):
        sub = node.get(key)
        if isinstance(sub, dict):
            out += _rule_refusals(sub, f"{path}.{key}")
    return out


def rule_cost(rule: str, node: dict[str, Any]) -> int:
    """The estimated cost of `rule` on an object of schema `node` (see the module doc)."""
    return _cost(rule, {"self": node})


def _cost(text: str, scope: dict[str, Any]) -> int:
    match = _MACRO.search(text)
    if match is None:
        return len(_TOKEN.findall(text)) + _string_costs(text, scope)
    start, end = match.end(), _closing(text, match.end() - 1)
    args = text[start:end]
    var, _, body = args.partition(",")
    collection = _resolve(match.group(1), scope)
    element = _element(collection, var.strip())
    inner = _cost(body, {**scope, var.strip(): element})
    rest = text[: match.start()] + " x " + text[end + 1 :]
    return _cardinality(collection) * (1 + inner) + _cost(rest, scope)


def _closing(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return len(text) - 1


def _string_costs(text: str, scope: dict[str, Any]) -> int:
    cost = 0
    for match in _STRING_CALL.finditer(text):
        arg = text[match.end() : _closing(text, match.end() - 1)]
        cost += _read_cost(arg, scope)
    for match in _STRING_METHOD.finditer(text):
        cost += _read_cost(match.group(1), scope)
    return cost


def _read_cost(arg: str, scope: dict[str, Any]) -> int:
    arg = arg.strip()
    while arg.startswith("string(") and arg.endswith(")"):
        arg = arg[len("string(") : -1].strip()
    node = _resolve(arg, scope)
    length = node.get("maxLength") if isinstance(node, dict) else None
    return math.ceil((length if isinstance(length, int) else REQUEST_BYTES) / 10)


def _resolve(path: str, scope: dict[str, Any]) -> dict[str, Any] | None:
    """The schema node of a path like `self.spec.min[k]`, or None when it cannot be told."""
    parts = re.findall(r"\[[^\[\]]*\]|[^.\[\]]+", path.strip())
    if not parts or parts[0] not in scope:
        return None
    node = scope[parts[0]]
    for part in parts[1:]:
        if not isinstance(node, dict):
            return None
        if part.startswith("["):
            node = node.get("items") or node.get("additionalProperties")
        else:
            node = (node.get("properties") or {}).get(part) or node.get("additionalProperties")
    return node if isinstance(node, dict) else None


def _element(collection: dict[str, Any] | None, var: str) -> dict[str, Any]:
    """What a macro's variable ranges over: an array's items, a map's keys (strings)."""
    if collection is None:
        return {}
    if collection.get("type") == "array":
        items = collection.get("items")
        return items if isinstance(items, dict) else {}
    return {"type": "string"}  # a map's keys: no maxLength of their own


def _cardinality(collection: dict[str, Any] | None) -> int:
    if collection is None:
        return REQUEST_BYTES // 2
    if collection.get("type") == "array":
        if isinstance(collection.get("maxItems"), int):
            return int(collection["maxItems"])
        return REQUEST_BYTES // (_min_bytes(collection.get("items")) + 1)
    if isinstance(collection.get("maxProperties"), int):
        return int(collection["maxProperties"])
    # a map entry is at least `"":` and its value and a comma
    return REQUEST_BYTES // (3 + _min_bytes(collection.get("additionalProperties")) + 1)


def _min_bytes(node: Any) -> int:
    if not isinstance(node, dict):
        return 1
    if node.get("x-kubernetes-int-or-string"):
        return 1
    return _SCALAR_BYTES.get(str(node.get("type", "")), 1)
