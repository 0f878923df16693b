"""What a real API server does with a custom resource's structural schema before storing it:
fill in `default`s and prune fields the schema does not know."""

from __future__ import annotations

from typing import Any

from controllers.embedded.patch import copy_json

__all__ = ["apply_defaults", "prune"]


def apply_defaults(node: Any, schema: dict[str, Any]) -> None:
    """Set, in place, every missing property that has a schema default (recursively)."""
    if isinstance(node, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if key not in node and "default" in sub:
                node[key] = copy_json(sub["default"])
            if key in node:
                apply_defaults(node[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in node.items():
                if key not in properties:
                    apply_defaults(value, extra)
    elif isinstance(node, list) and isinstance(schema.get("items"), dict):
        for item in node:
            apply_defaults(item, schema["items"])


def prune(node: Any, schema: dict[str, Any], root: bool = False) -> None:
    """Drop, in place, object fields the schema does not declare (unless it preserves them)."""
    if isinstance(node, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        if properties is not None:
            for key in list(node):
                if key in properties:
                    if not (root and key == "metadata"):
                        prune(node[key], properties[key])
                elif isinstance(extra, dict):
                    prune(node[key], extra)
                elif not (root and key in ("apiVersion", "kind", "metadata")):
                    del node[key]
        elif isinstance(extra, dict):
            for value in node.values():
                prune(value, extra)
    elif isinstance(node, list) and isinstance(schema.get("items"), dict):
        for item in node:
            prune(item, schema["items"])
