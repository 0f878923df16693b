"""Reading pods cheaply in the scheduler's gateway (`controllers.addons.gateway`), the same models
the full validation would give (a pod's quantities cost little: `Quantity.parse` shares the
parse of each distinct value):

* `PodVersions`: the last document of each pod read and its model; a later version that differs
  from it only in its resourceVersion, `spec.nodeName` and status (what a binding or a status
  write changes) is that model with those fields replaced, its status validated alone. Anything
  else that differs, and the model is validated whole.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from apis.core import Pod, PodStatus

__all__ = ["PodVersions"]


def _but(doc: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {**doc, **dict.fromkeys(keys)}


class PodVersions:
    """The last document read of each pod by uid, and its model (module docstring); at most
    `size` pods, the oldest forgotten first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._seen: dict[str, tuple[dict[str, Any], Pod]] = {}
        self.derived = 0

    def remember(self, uid: str, doc: dict[str, Any], pod: Pod) -> None:
        """`doc` (as decoded, unchanged since) is what `pod` was validated from."""
        self._seen.pop(uid, None)
        self._seen[uid] = (doc, pod)
        if len(self._seen) > self.size:
            del self._seen[next(iter(self._seen))]

    def derive(self, uid: str, version: str, doc: dict[str, Any]) -> Pod | None:
        """The model of `doc`, a later version of a pod remembered, when it differs from that
        one only in its resourceVersion, spec.nodeName and status; None otherwise."""
        seen = self._seen.get(uid)
        if seen is None:
            return None
        old_doc, old = seen
        meta, spec = doc.get("metadata"), doc.get("spec")
        old_meta, old_spec = old_doc.get("metadata"), old_doc.get("spec")
        if not (
            isinstance(meta, dict)
            and isinstance(spec, dict)
            and isinstance(old_meta, dict)
            and isinstance(old_spec, dict)
        ):
            return None
        node, old_node = spec.get("nodeName"), old_spec.get("nodeName")
        if not (node is None or isinstance(node, str)) or (node is None and old_node is not None):
            return None  # not a node name, or no longer one: validated whole
        if (
            _but(doc, "metadata", "spec", "status") != _but(old_doc, "metadata", "spec", "status")
            or _but(meta, "resourceVersion") != _but(old_meta, "resourceVersion")
            or _but(spec, "nodeName") != _but(old_spec, "nodeName")
        ):
            return None
        # Only what changed is replaced: a field replaced counts as set (`to_wire`).
        updates: dict[str, Any] = {
            "metadata": old.metadata.model_copy(update={"resource_version": version})
        }
        status_doc = doc.get("status")
        if status_doc != old_doc.get("status"):
            if not isinstance(status_doc, dict):
                return None
            try:
                updates["status"] = PodStatus.model_validate(status_doc)
            except ValidationError:
                return None  # the whole model says what is wrong
        if node != old_node:
            updates["spec"] = old.spec.model_copy(update={"node_name": node})
        self.derived += 1
        return old.model_copy(update=updates)
