"""The patch formats the embedded server accepts: JSON merge patch (RFC 7386; also used for
strategic merge patch, whose list merging keys we do not model), JSON patch (RFC 6902), and
server-side apply (`kubectl apply --server-side`), approximated as a merge patch of the applied
configuration: no managedFields, no field ownership, no conflicts; fields an earlier apply set
and this one omits are kept."""

from __future__ import annotations

from typing import Any

import jsonpatch

from controllers.embedded.status import StatusError

__all__ = ["APPLY_PATCH", "JSON_PATCH", "MERGE_PATCHES", "apply_patch", "copy_json", "merge_patch"]

JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCHES = (
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    APPLY_PATCH,
)


def copy_json(node: Any) -> Any:
    """A deep copy of a decoded JSON document (dicts, lists and scalars), about three times as
    fast as `copy.deepcopy`, which the server would otherwise run on every patch and status
    write. Anything else is shared, as only JSON values are ever stored."""
    kind = type(node)
    if kind is dict:
        return {key: copy_json(value) for key, value in node.items()}
    if kind is list:
        return [copy_json(value) for value in node]
    return node


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, `null` deletes, anything else replaces. The result
    shares the parts of `target` that the patch leaves alone."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


_PATCH_REFUSED = "the server rejected our request due to an error in our request"


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """The patched copy of `target` (which is left as it is; nothing is shared with it); 415
    for an unknown type, 422 for a JSON patch that cannot be applied."""
    kind = content_type.split(";")[0].strip()
    if kind in MERGE_PATCHES:
        if not isinstance(patch, dict):
            raise StatusError(400, "a merge patch must be a JSON object")
        result = merge_patch(copy_json(target), patch)
    elif kind == JSON_PATCH:
        if not isinstance(patch, list):
            raise StatusError(400, "a JSON patch must be a list of operations")
        try:
            result = jsonpatch.JsonPatch(patch).apply(copy_json(target), in_place=True)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
            # kube-apiserver's answer to any operation that cannot be applied (a failed
            # `test` included): 422 with a generic message and no causes.
            raise StatusError(422, _PATCH_REFUSED, "Invalid") from None
    else:
        raise StatusError(415, f"the patch type {kind!r} is not supported")
    if not isinstance(result, dict):
        raise StatusError(422, "the patched object is not an object", "Invalid")
    return result
