"""What a write request asks of the embedded server beyond its body, as a real API server reads
it from the query: `fieldValidation` (Strict, Warn, Ignore: what to do with fields the kind does
not know) and `dryRun=All` (validate and admit, answer as if written, store nothing).

Unknown fields are found by `apis.registry.unknown_fields` (the same check `placement validate`
makes). The answers are the real server's: with Strict, a create or update is a 400 BadRequest
`Placement in version "v1beta1" cannot be handled as a Placement: strict decoding error: unknown
field "spec.numberOfCluster"` and a patch a 422 Invalid on the field `patch`; with Warn (the
server's default, as on a real one) each unknown field is a `Warning` header and the write goes
ahead; with Ignore it goes ahead silently. Either way the fields are then pruned as the CRD's
structural schema says (see `schema.prune`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from multidict import MultiMapping

from apis.registry import unknown_fields
from controllers.embedded.resources import Resource
from controllers.embedded.status import StatusError

__all__ = [
    "FieldValidation",
    "WriteOptions",
    "checked_fields",
    "require_field_manager",
    "warning_header",
    "write_options",
]

FieldValidation = Literal["Strict", "Warn", "Ignore"]
_DIRECTIVES: tuple[FieldValidation, ...] = ("Strict", "Warn", "Ignore")


@dataclass(frozen=True)
class WriteOptions:
    """The query parameters of one write: its field validation and whether it is a dry run."""

    validation: FieldValidation = "Warn"
    dry_run: bool = False


def write_options(query: MultiMapping[str]) -> WriteOptions:
    """The options of a write request; 400 for a value a real server would refuse."""
    directive = query.get("fieldValidation") or "Warn"
    if directive not in _DIRECTIVES:
        raise StatusError(
            400,
            f'fieldValidation: Unsupported value: "{directive}": supported values: '
            '"Ignore", "Strict", "Warn"',
        )
    dry_run = [value for value in query.getall("dryRun", []) if value]
    for value in dry_run:
        if value != "All":
            raise StatusError(400, f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return WriteOptions(directive, bool(dry_run))


def require_field_manager(query: MultiMapping[str]) -> None:
    """422 for a server-side apply patch that names no `fieldManager`, as kube-apiserver
    refuses it (its PatchOptions are invalid)."""
    if query.get("fieldManager"):
        return
    message = "Required value: is required for apply patch"
    cause = {"reason": "FieldValueRequired", "message": message, "field": "fieldManager"}
    raise StatusError(
        422,
        f'PatchOptions.meta.k8s.io "" is invalid: fieldManager: {message}',
        "Invalid",
        {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [cause]},
    )


def checked_fields(
    res: Resource,
    doc: Any,
    validation: FieldValidation,
    *,
    name: str = "",
    patch: Any = None,
) -> list[str]:
    """The warnings to send for `doc` (the object about to be written; for a patch, the patched
    object, with `patch` the body as sent). Raises the real server's error under Strict."""
    if validation == "Ignore":
        return []
    found = unknown_fields(doc, res.model)
    if not found:
        return []
    text = ", ".join(str(field) for field in found)
    if validation == "Warn":
        return [str(field) for field in found]
    if patch is None:
        raise StatusError(
            400,
            f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
            f"strict decoding error: {text}",
        )
    qualified = f"{res.kind}.{res.group}" if res.group else res.kind
    value = json.dumps(patch, separators=(",", ":"))
    message = f'Invalid value: "{value}": strict decoding error: {text}'
    cause = {"reason": "FieldValueInvalid", "message": message, "field": "patch"}
    details = {"name": name, "group": res.group, "kind": res.kind, "causes": [cause]}
    raise StatusError(422, f'{qualified} "{name}" is invalid: patch: {message}', "Invalid", details)


def warning_header(warning: str) -> str:
    """One `Warning` header value (RFC 7234 code 299, as the API server sends them)."""
    return "299 - " + json.dumps(warning)
