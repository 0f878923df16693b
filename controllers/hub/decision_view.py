"""The controller's view of the PlacementDecisions it writes, as `DecisionRow`s, indexed by the
placement named in their label (`controllers.runtime.views.Latest` with an index)."""

from __future__ import annotations

from apis.placements import PlacementDecision
from controllers.runtime.views import Latest
from placement.rows import DecisionRow, decision_row

__all__ = ["DecisionView"]


def _version(row: DecisionRow) -> str | None:
    return row.resource_version


class DecisionView(Latest[DecisionRow]):
    """PlacementDecisions (rows; a model is taken as its row), also indexed by the placement
    named in their label."""

    def __init__(self) -> None:
        super().__init__(_version)
        self._by_placement: dict[tuple[str, str], set[str]] = {}

    def of(self, namespace: str, placement: str) -> list[DecisionRow]:
        """The decisions labelled with placement `namespace/placement`, by name."""
        keys = sorted(self._by_placement.get((namespace, placement), ()))
        return [self._objects[k] for k in keys]

    def observe(self, obj: DecisionRow | PlacementDecision, *, ours: bool = False) -> bool:
        row = obj if isinstance(obj, DecisionRow) else decision_row(obj)
        old = self._objects.get(row.key)
        if not super().observe(row, ours=ours):
            return False
        if old is not None:
            self._unindex(old)
        owner = row.placement_name
        if owner:
            self._by_placement.setdefault((row.namespace, owner), set()).add(row.key)
        return True

    def observe_deleted(self, key: str, *, ours: bool = False) -> DecisionRow | None:
        gone = super().observe_deleted(key, ours=ours)
        if gone is not None:
            self._unindex(gone)
        return gone

    def _unindex(self, row: DecisionRow) -> None:
        owner = row.placement_name
        if not owner:
            return
        keys = self._by_placement.get((row.namespace, owner))
        if keys is not None:
            keys.discard(row.key)
            if not keys:
                del self._by_placement[(row.namespace, owner)]
