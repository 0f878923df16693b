"""`cluster.open-cluster-management.io/v1alpha1` Placements, converted to v1beta1.

OCM stopped serving v1alpha1 Placements in v0.9, but the design documents (resource-based
scheduling, spread policy) and older blog posts still show them. `placement validate`,
`simulate` and `explain` accept them and convert each with a one-line notice:

* `spec.prioritizerConfigs: [{name, weight}]` (the resource-based scheduling design's form) and
  `spec.prioritizerPolicy.configurations[]` with `name` (v1alpha1's later form) become
  `configurations[]` with `scoreCoordinate: {type: BuiltIn, builtIn: <name>}`; a v1alpha1
  add-on score (`type: AddOnScore`, `scoreResourceName`, `scoreName`) becomes
  `scoreCoordinate: {type: AddOn, addOn: {resourceName, scoreName}}`. A missing weight stays
  missing (v1beta1's default, 1, applies).
* A built-in name written in another case (the design's `steady`) is spelt as the scheduler
  knows it (`Steady`), and the notice says so; an unknown name is kept as written (the
  placement is then Misconfigured with OCM's `incorrect builtin prioritizer`).
* Everything else is already v1beta1's shape; only `apiVersion` changes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

__all__ = ["V1ALPHA1", "V1BETA1", "convert_placement"]

V1ALPHA1 = "cluster.open-cluster-management.io/v1alpha1"
V1BETA1 = "cluster.open-cluster-management.io/v1beta1"
_ADDON_TYPES = ("AddOnScore", "AddOn")
_V1ALPHA1_KEYS = ("name", "type", "scoreResourceName", "scoreName")


def _coordinate(config: dict[str, Any], known: dict[str, str], notes: list[str]) -> dict[str, Any]:
    if "scoreCoordinate" in config or ("name" not in config and "scoreName" not in config):
        return config  # v1beta1's shape already (or nothing to convert: validation says why)
    out = {k: v for k, v in config.items() if k not in _V1ALPHA1_KEYS}
    if config.get("type") in _ADDON_TYPES:
        out["scoreCoordinate"] = {
            "type": "AddOn",
            "addOn": {
                "resourceName": config.get("scoreResourceName"),
                "scoreName": config.get("scoreName"),
            },
        }
        return out
    name = config.get("name")
    if isinstance(name, str) and name not in known.values():
        spelt = known.get(name.lower())
        if spelt is not None:
            notes.append(f"{name} → {spelt}")
            name = spelt
    out["scoreCoordinate"] = {"type": "BuiltIn", "builtIn": name}
    return out


def convert_placement(doc: Any, builtins: Iterable[str]) -> tuple[Any, str | None]:
    """`doc` converted to v1beta1 when it is a v1alpha1 Placement, with the notice to show;
    anything else unchanged, with None. `builtins`: the built-in prioritizer names the
    scheduler knows (their spelling wins over another case)."""
    if not isinstance(doc, dict) or doc.get("apiVersion") != V1ALPHA1:
        return doc, None
    if doc.get("kind") != "Placement":
        return doc, None
    out = copy.deepcopy(doc)
    out["apiVersion"] = V1BETA1
    known = {name.lower(): name for name in builtins}
    notes: list[str] = []
    spec = out.get("spec")
    if isinstance(spec, dict):
        policy = spec.get("prioritizerPolicy")
        legacy = spec.pop("prioritizerConfigs", None)
        configs: list[Any] = []
        if isinstance(policy, dict) and isinstance(policy.get("configurations"), list):
            configs = list(policy["configurations"])
        if isinstance(legacy, list):
            configs += legacy
            notes.append("prioritizerConfigs → prioritizerPolicy.configurations")
        if configs:
            policy = policy if isinstance(policy, dict) else {}
            policy["configurations"] = [
                _coordinate(c, known, notes) if isinstance(c, dict) else c for c in configs
            ]
            spec["prioritizerPolicy"] = policy
    meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
    name = meta.get("name")
    if meta.get("namespace"):
        name = f"{meta['namespace']}/{name}"
    extra = f" ({'; '.join(notes)})" if notes else ""
    return out, f"Placement {name}: {V1ALPHA1} converted to {V1BETA1}{extra}"
