"""The controller's view of the PlacementDecisions it writes, indexed by the placement named in
their label (`controllers.runtime.views.Latest` with an index)."""

from __future__ import annotations

from apis.placements import PlacementDecision
from controllers.runtime.views import Latest

__all__ = ["DecisionView"]


class DecisionView(Latest[PlacementDecision]):
    """PlacementDecisions, also indexed by the placement named in their label."""

    def __init__(self) -> None:
        super().__init__()
        self._by_placement: dict[tuple[str, str], set[str]] = {}

    def of(self, namespace: str, placement: str) -> list[PlacementDecision]:
        """The decisions labelled with placement `namespace/placement`, by name."""
        keys = sorted(self._by_placement.get((namespace, placement), ()))
        return [self._objects[k] for k in keys]

    def observe(self, obj: PlacementDecision, *, ours: bool = False) -> bool:
        old = self._objects.get(obj.key)
        if not super().observe(obj, ours=ours):
            return False
        if old is not None:
            self._unindex(old)
        owner = obj.placement_name
        if owner:
            self._by_placement.setdefault((obj.namespace, owner), set()).add(obj.key)
        return True

    def observe_deleted(self, key: str, *, ours: bool = False) -> PlacementDecision | None:
        gone = super().observe_deleted(key, ours=ours)
        if gone is not None:
            self._unindex(gone)
        return gone

    def _unindex(self, obj: PlacementDecision) -> None:
        owner = obj.placement_name
        if not owner:
            return
        keys = self._by_placement.get((obj.namespace, owner))
        if keys is not None:
            keys.discard(obj.key)
            if not keys:
                del self._by_placement[(obj.namespace, owner)]
