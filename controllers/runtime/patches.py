"""JSON merge patches (RFC 7386) computed from what the server holds and what we want, so that a
controller writes only the fields that differ and a write that would change nothing is skipped.

Both sides are wire dicts (`to_wire()` of a model); any controller patching an object or its
status uses these, whatever the kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.meta import without_nulls

__all__ = ["merge_patch_between", "without_nulls"]


def merge_patch_between(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The RFC 7386 merge patch turning `old` into `new` (lists are replaced whole)."""
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key)
        if before == value:
            continue
        if isinstance(before, dict) and isinstance(value, dict):
            patch[key] = merge_patch_between(before, value)
        else:
            patch[key] = value
    return patch
