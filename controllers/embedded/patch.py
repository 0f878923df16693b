"""The patch formats the embedded server accepts: JSON merge patch (RFC 7386; also used for
strategic merge patch, whose list merging keys we do not model) and JSON patch (RFC 6902)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from controllers.embedded.status import StatusError

__all__ = ["JSON_PATCH", "MERGE_PATCHES", "apply_patch", "merge_patch"]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCHES = ("application/merge-patch+json", "application/strategic-merge-patch+json")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, `null` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """The patched copy of `target`; 415 for an unknown type, 422/409 for a bad JSON patch."""
    kind = content_type.split(";")[0].strip()
    if kind in MERGE_PATCHES:
        if not isinstance(patch, dict):
            raise StatusError(400, "a merge patch must be a JSON object")
        result = merge_patch(target, patch)
    elif kind == JSON_PATCH:
        if not isinstance(patch, list):
            raise StatusError(400, "a JSON patch must be a list of operations")
        try:
            result = jsonpatch.JsonPatch(patch).apply(copy.deepcopy(target))
        except jsonpatch.JsonPatchTestFailed as exc:
            raise StatusError(409, f"the JSON patch test failed: {exc}", "Conflict") from None
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise StatusError(422, f"the JSON patch cannot be applied: {exc}", "Invalid") from None
    else:
        raise StatusError(415, f"the patch type {kind!r} is not supported")
    if not isinstance(result, dict):
        raise StatusError(422, "the patched object is not an object", "Invalid")
    return result
