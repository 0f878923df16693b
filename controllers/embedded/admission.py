"""What the embedded server does to an object before storing it, as a real API server's
admission and validation do: the CRD schema's defaults and pruning, kube-apiserver's validation
of PodGroup and ElasticQuota against their CRD (`apis.crdvalidation`), then the kind's own rules
(the `apis` model), answered as 422 Invalid with one cause per field.

Both validations read a pod's or a node's quantities: `Quantity.parse` shares the parse of a
value it has seen, so a server admitting thousands of pods parses each distinct quantity once."""

from __future__ import annotations

import json
import re
from typing import Any, TypeGuard

from apis.crdvalidation import merge_problems, schema_problems
from apis.errors import FieldProblem, ObjectValidationError
from apis.fielderrors import aggregate
from apis.kubevalidation import MAX_OBJECT_BYTES, cause_reason, kube_problems
from apis.registry import parse_as
from controllers.embedded.resources import Resource
from controllers.embedded.schema import apply_defaults, prune
from controllers.embedded.status import StatusError

__all__ = [
    "admit",
    "check_size",
    "encode_within",
    "invalid_name",
    "valid_name",
    "validate",
]

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def valid_name(name: Any) -> TypeGuard[str]:
    """Whether `name` is a DNS-1123 subdomain (what every kind accepts at least)."""
    return isinstance(name, str) and bool(_NAME.match(name)) and len(name) <= 253


def admit(
    res: Resource, obj: dict[str, Any], max_object_bytes: int = MAX_OBJECT_BYTES
) -> dict[str, Any]:
    """Defaults and pruning from the CRD schema (in place), then validation by the kind's
    model and by kube-apiserver's rules (`apis.kubevalidation`); `obj` back, or 422 Invalid;
    500 as etcd refuses an object over its request limit (`max_object_bytes`, etcd's
    `--max-request-bytes`)."""
    validate(res, obj)
    return check_size(obj, max_object_bytes)


def validate(res: Resource, obj: dict[str, Any], *, status: bool = False) -> None:
    """What `admit` does but the size check: defaults and pruning, then validation (422).
    `status`: a write through the status subresource."""
    if res.schema is not None:
        apply_defaults(obj, res.schema)
        prune(obj, res.schema, root=True)
        # kube-apiserver's CRD validation of every custom kind, before the model's (which
        # adds, in its own words, only what the schema cannot say)
        problems = schema_problems(obj, res.schema)
        _refuse(res, obj, [_under_status(p) for p in problems] if status else problems)
    try:
        parse_as(res.model, obj)
    except ObjectValidationError as exc:
        # kube's validation words a problem as kube-apiserver does: the model's problems
        # about the same fields are left out (`volumeMode: X` is kube's Unsupported value)
        kube = _kube_problems({**obj, "apiVersion": res.api_version, "kind": res.kind})
        if kube:
            _refuse(res, obj, merge_problems(kube, exc.problems))
        name = obj["metadata"].get("name", "")
        qualified = f"{res.kind}.{res.group}" if res.group else res.kind
        causes = [
            {"reason": "FieldValueInvalid", "message": p.message, "field": p.path}
            for p in exc.problems
        ]
        text = "; ".join(str(p) for p in exc.problems)
        details = {"name": name, "group": res.group, "kind": res.kind, "causes": causes}
        raise StatusError(
            422, f'{qualified} "{name}" is invalid: {text}', "Invalid", details
        ) from None
    _refuse_kube(res, obj)


def check_size(obj: dict[str, Any], max_object_bytes: int = MAX_OBJECT_BYTES) -> dict[str, Any]:
    """`obj` back, or the 500 etcd answers past its request limit (passed on by
    kube-apiserver)."""
    encode_within(obj, max_object_bytes)
    return obj


def encode_within(obj: dict[str, Any], max_object_bytes: int = MAX_OBJECT_BYTES) -> bytes:
    """`obj` as json.dumps writes it (what its watch lines and answers carry), or the 500 of
    `check_size`."""
    raw = json.dumps(obj).encode()
    if len(raw) > max_object_bytes:
        raise StatusError(500, "etcdserver: request is too large", "")
    return raw


def _under_status(problem: FieldProblem) -> FieldProblem:
    """A problem of a status subresource write as kube-apiserver words it: it checks the
    status against the status schema, so the `... in body` part names the field from there
    (`scores[0].value in body`), while the cause's field is the whole path."""
    path = problem.path
    if not path.startswith("status."):
        return problem
    return FieldProblem(path, problem.message.replace(f" {path} in body", f" {path[7:]} in body"))


def _refuse_kube(res: Resource, obj: dict[str, Any]) -> None:
    """422 Invalid for what kube-apiserver's validation refuses (`apis.kubevalidation`), with
    kube's message: `Pod "p" is invalid:
    spec.containers: Required value`, several problems as `[a, b]`, one cause each."""
    doc = {**obj, "apiVersion": res.api_version, "kind": res.kind}
    _refuse(res, obj, _kube_problems(doc))


def _kube_problems(doc: dict[str, Any]) -> list[FieldProblem]:
    """kube-apiserver's validation, with the CEL device selectors of the DRA kinds compiled
    (the CEL engine loads only for those)."""
    problems = kube_problems(doc)
    if str(doc.get("apiVersion", "")).startswith("resource.k8s.io/"):
        from placement.cel import selector_problems

        problems = [*problems, *(p for p in selector_problems(doc) if p not in problems)]
    return problems


def _refuse(res: Resource, obj: dict[str, Any], problems: list[FieldProblem]) -> None:
    """422 Invalid with kube's Status for these problems (nothing when there is none)."""
    if not problems:
        return
    name = obj["metadata"].get("name", "")
    qualified = f"{res.kind}.{res.group}" if res.group else res.kind
    causes = [
        {"reason": cause_reason(p.message), "message": p.message, "field": p.path} for p in problems
    ]
    text = aggregate(str(p) for p in problems)
    details = {"name": name, "group": res.group, "kind": res.kind, "causes": causes}
    raise StatusError(422, f'{qualified} "{name}" is invalid: {text}', "Invalid", details)


# kube-apiserver's words for a name that is no DNS-1123 subdomain.
_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def invalid_name(res: Resource, name: Any, generate_name: str = "") -> StatusError:
    """The 422 a name that is no DNS-1123 subdomain gets (or a missing one); a generated
    name's prefix is checked too, as a prefix (a trailing '-' is fine)."""
    cause = {
        "reason": "FieldValueInvalid",
        "field": "metadata.name",
        "message": f"Invalid value: {json.dumps(name)}: {_SUBDOMAIN}",
    }
    if not name:
        name = ""
        message = "Required value: name or generateName is required"
        cause = {"reason": "FieldValueRequired", "field": "metadata.name", "message": message}
    causes = [cause]
    masked = generate_name[:-1] + "a" if generate_name.endswith("-") else generate_name
    if generate_name and not valid_name(masked):
        message = f"Invalid value: {json.dumps(generate_name)}: {_SUBDOMAIN}"
        causes.insert(
            0, {"reason": "FieldValueInvalid", "field": "metadata.generateName", "message": message}
        )
    qualified = f"{res.kind}.{res.group}" if res.group else res.kind
    text = aggregate(f"{c['field']}: {c['message']}" for c in causes)
    return StatusError(
        422,
        f'{qualified} "{name}" is invalid: {text}',
        "Invalid",
        {"name": str(name or ""), "kind": res.kind, "group": res.group, "causes": causes},
    )
