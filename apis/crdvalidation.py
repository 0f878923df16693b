"""kube-apiserver's validation of the custom resources PodGroup and ElasticQuota: the CRD's
OpenAPI schema (kube-openapi's validators, turned into field errors as apiextensions-apiserver
does) and its `x-kubernetes-validations` rules, worded as kube-apiserver words them:

* `spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal to
  1` (minimum), `spec.minMember: Invalid value: "string": spec.minMember in body must be of
  type integer: "string"` (type; its cause reason is FieldValueTypeInvalid);
* `spec.max.cpu: Invalid value: "12xyz": spec.max.cpu in body should match '^(\\+|-)?...'`;
* `spec.min: Too many: 65: must have at most 64 items` (maxProperties);
* a rule that fails: `spec: Invalid value: min must not be above max` (no value); one that
  cannot be evaluated: `spec: Invalid value: "object": <error> evaluating rule: <message>`;
* rules are not evaluated when the schema found a type, enum, size or required-field error:
  `<nil>: Invalid value: null: some validation rules were not checked because the object was
  invalid; correct the existing errors to complete validation` is added instead.

As kube, `format: int32` bounds nothing (kube-openapi checks only the type of an integer), and
null values are dropped before validation. Rules are evaluated by Python equivalents, looked up
by the rule's text (`RULES`); a rule without one is not checked.

The schema comes from the kind's model (`openapi_schema`, the structural form the CRDs are
generated from) or, in the embedded server, from the served CRD.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from apis.errors import FieldProblem
from apis.fielderrors import go_quote, go_value
from apis.meta import KubeObject
from apis.quantity_amount import AmountError, compare, parse_amount
from apis.scheduling import MIN_ABOVE_MAX_RULE, ElasticQuota, PodGroup

__all__ = [
    "RULES",
    "SCHEMA_VALIDATED",
    "crd_problems",
    "merge_problems",
    "openapi_schema",
    "schema_problems",
    "structural",
]

SCHEMA_VALIDATED: dict[tuple[str, str], type[KubeObject]] = {
    (cls.api_version_string(), cls.KIND): cls for cls in (PodGroup, ElasticQuota)
}
"""The kinds whose documents are checked against their CRD schema, by apiVersion and kind."""

RULES_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)
_BLOCKING = ("Required value", "Unsupported value", "Too long", "Too many")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?")


class _RuleError(Exception):
    """A rule that could not be evaluated (CEL's runtime error)."""


def _quantity(value: Any) -> Any:
    # `quantity(string(v))` of the library: ParseQuantity's error is the evaluation error.
    try:
        return parse_amount(value if isinstance(value, str) else str(value))
    except AmountError as exc:
        raise _RuleError(str(exc)) from None


def _min_not_above_max(spec: dict[str, Any]) -> bool:
    low, high = spec.get("min"), spec.get("max")
    if not isinstance(low, dict) or not isinstance(high, dict):
        return True
    error: _RuleError | None = None
    for name, ceiling in high.items():  # CEL's all(): false wins over an error
        if name not in low:
            continue
        try:
            if compare(_quantity(low[name]), _quantity(ceiling)) > 0:
                return False
        except _RuleError as exc:
            error = exc
    if error is not None:
        raise error
    return True


RULES: dict[str, Callable[[Any], bool]] = {MIN_ABOVE_MAX_RULE: _min_not_above_max}
"""Python equivalents of the CRDs' CEL rules, by the rule's text."""


def structural(node: Any, defs: dict[str, Any]) -> Any:
    """One JSON-schema node of a model in Kubernetes' structural form: refs inlined, nullable
    unions unwrapped, titles dropped, free-form objects marked
    `x-kubernetes-preserve-unknown-fields`."""
    if isinstance(node, list):
        return [structural(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return structural(merged, defs)
    if "anyOf" in node:
        options = [opt for opt in node["anyOf"] if opt.get("type") != "null"]
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if rest.get("default", 0) is None:
            del rest["default"]
        if len(options) == 1:
            return structural({**options[0], **rest}, defs)
        node = {**rest, "anyOf": options}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs"):
            continue
        if key == "additionalProperties" and value is True:
            continue  # extra fields are kept by the models but pruned by the server
        if key == "properties":
            out[key] = {name: structural(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "anyOf"):
            out[key] = structural(value, defs)
        else:
            out[key] = value
    if (
        out.get("type") == "object"
        and "properties" not in out
        and "additionalProperties" not in out
    ):
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


@functools.cache
def openapi_schema(cls: type[KubeObject]) -> dict[str, Any]:
    """The structural schema of a kind's CRD (without descriptions), from its model."""
    raw = cls.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    schema: dict[str, Any] = structural(raw, defs)
    props = schema["properties"]
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {"type": "object"}  # the API server owns metadata's schema
    schema.pop("x-kubernetes-preserve-unknown-fields", None)
    return schema


def crd_problems(doc: Any) -> list[FieldProblem]:
    """What kube-apiserver's CRD validation refuses in this document, if it is of a kind in
    SCHEMA_VALIDATED (none otherwise), in kube's words."""
    if not isinstance(doc, dict):
        return []
    cls = SCHEMA_VALIDATED.get((doc.get("apiVersion"), doc.get("kind")))  # type: ignore[arg-type]
    return [] if cls is None else schema_problems(doc, openapi_schema(cls))


def schema_problems(doc: dict[str, Any], schema: dict[str, Any]) -> list[FieldProblem]:
    """The schema's problems of `doc`, then its rules' (when nothing blocks them)."""
    problems = _check(schema, doc, "")
    if any(p.message.startswith(_BLOCKING) or _type_error(p.message) for p in problems):
        if _has_rules(schema):
            problems.append(FieldProblem("<nil>", f"Invalid value: null: {RULES_NOT_CHECKED}"))
        return problems
    return problems + _rule_problems(schema, doc, "")


def merge_problems(schema: list[FieldProblem], model: Iterable[FieldProblem]) -> list[FieldProblem]:
    """The schema's problems, then the model's about fields the schema found nothing wrong
    with (on the same field, or one above or below it, the schema's words are kube's)."""
    paths = [p.path for p in schema]
    return [*schema, *(p for p in model if not any(_related(p.path, s) for s in paths))]


def _related(a: str, b: str) -> bool:
    return a == b or _under(a, b) or _under(b, a)


def _under(path: str, parent: str) -> bool:
    return bool(parent) and path.startswith(parent) and path[len(parent)] in ".["


def _type_error(message: str) -> bool:
    return message.startswith("Invalid value") and " in body must be of type " in message


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _types(node: dict[str, Any]) -> list[str]:
    if node.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    return [node["type"]] if node.get("type") else []


def _type_ok(value: Any, types: list[str]) -> bool:
    kind = _json_type(value)
    if kind in types or (kind == "integer" and "number" in types):
        return True
    return kind == "number" and "integer" in types and float(value).is_integer()


def _invalid(path: str, value: Any, detail: str) -> FieldProblem:
    return FieldProblem(path, f"Invalid value: {go_value(value)}: {detail}")


def _check(node: dict[str, Any], value: Any, path: str) -> list[FieldProblem]:
    """kube-openapi's validators of one node, in its order: type, string, format, number,
    array, enum, object."""
    types = _types(node)
    problems = []
    if types and not _type_ok(value, types):
        kind = _json_type(value)
        where = f"{path} in body must be of type {','.join(types)}: {go_quote(kind)}"
        problems.append(_invalid(path, kind, where))
    if isinstance(value, str):
        problems += _string_problems(node, value, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        problems += _number_problems(node, value, path)
    elif isinstance(value, list):
        problems += _array_problems(node, value, path)
    enum = node.get("enum")
    if enum is not None and value not in enum:
        allowed = ", ".join(go_quote(v) if isinstance(v, str) else go_value(v) for v in enum)
        problems.append(
            FieldProblem(path, f"Unsupported value: {go_value(value)}: supported values: {allowed}")
        )
    if isinstance(value, dict):
        problems += _object_problems(node, value, path)
    return problems


def _string_problems(node: dict[str, Any], value: str, path: str) -> list[FieldProblem]:
    problems = []
    if "maxLength" in node and len(value) > node["maxLength"]:
        problems.append(
            FieldProblem(path, f"Too long: may not be more than {node['maxLength']} bytes")
        )
    if "minLength" in node and len(value) < node["minLength"]:
        detail = f"{path} in body should be at least {node['minLength']} chars long"
        problems.append(_invalid(path, value, detail))
    if "pattern" in node and not re.search(node["pattern"], value):
        problems.append(_invalid(path, value, f"{path} in body should match '{node['pattern']}'"))
    if node.get("format") == "date-time" and not _is_date_time(value):
        detail = f"{path} in body must be of type date-time: {go_quote(value)}"
        problems.append(_invalid(path, value, detail))
    return problems


def _is_date_time(value: str) -> bool:
    if not _DATE_TIME.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value[:19])
    except ValueError:
        return False
    return True


def _number_problems(node: dict[str, Any], value: float, path: str) -> list[FieldProblem]:
    problems = []
    if "maximum" in node and value > node["maximum"]:
        detail = f"{path} in body should be less than or equal to {go_value(node['maximum'])}"
        problems.append(_invalid(path, value, detail))
    if "minimum" in node and value < node["minimum"]:
        detail = f"{path} in body should be greater than or equal to {go_value(node['minimum'])}"
        problems.append(_invalid(path, value, detail))
    return problems


def _array_problems(node: dict[str, Any], value: list[Any], path: str) -> list[FieldProblem]:
    if "maxItems" in node and len(value) > node["maxItems"]:
        return [
            FieldProblem(
                path, f"Too many: {len(value)}: must have at most {node['maxItems']} items"
            )
        ]
    items = node.get("items")
    problems = []
    if isinstance(items, dict):
        for i, item in enumerate(value):
            if item is not None:
                problems += _check(items, item, f"{path}[{i}]")
    return problems


def _object_problems(node: dict[str, Any], value: dict[str, Any], path: str) -> list[FieldProblem]:
    limit = node.get("maxProperties")
    if limit is not None and len(value) > limit:
        # kube-openapi stops here: the properties themselves are not validated.
        return [FieldProblem(path, f"Too many: {len(value)}: must have at most {limit} items")]
    problems = []
    props: dict[str, Any] = node.get("properties") or {}
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        for key, item in value.items():
            if key not in props and item is not None:
                problems += _check(extra, item, _child(path, key))
    for name, sub in props.items():
        if value.get(name) is not None:
            problems += _check(sub, value[name], _child(path, name))
    for name in node.get("required") or ():
        if name not in value:
            problems.append(FieldProblem(_child(path, name), "Required value"))
    return problems


def _has_rules(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    if node.get("x-kubernetes-validations"):
        return True
    subs = [*(node.get("properties") or {}).values(), node.get("items")]
    subs.append(node.get("additionalProperties"))
    return any(_has_rules(sub) for sub in subs)


def _rule_problems(node: dict[str, Any], value: Any, path: str) -> list[FieldProblem]:
    """The node's rules on `value`, then those of its properties, items and map values."""
    if value is None:
        return []
    problems = []
    for rule in node.get("x-kubernetes-validations") or ():
        check = RULES.get(rule.get("rule", ""))
        if check is None:
            continue
        said = (rule.get("message") or "").strip() or rule["rule"].strip()
        try:
            if check(value):
                continue
            # kube-apiserver leaves the value out of a failed rule's error
            detail = said if rule.get("message") else f"failed rule: {said}"
            problems.append(FieldProblem(path or "<nil>", f"Invalid value: {detail}"))
        except _RuleError as exc:
            detail = f"{exc} evaluating rule: {said}"
            problems.append(_invalid(path or "<nil>", node.get("type", ""), detail))
    if isinstance(value, dict):
        props: dict[str, Any] = node.get("properties") or {}
        extra = node.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if key not in props else None)
            if isinstance(sub, dict) and _has_rules(sub):
                problems += _rule_problems(sub, item, _child(path, key))
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            problems += _rule_problems(node["items"], item, f"{path}[{i}]")
    return problems
