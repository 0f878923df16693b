"""Which clusters a placement may choose from: valid bindings in its namespace, the sets it
names, and the members of those sets (OCM's rules: docs/hub-admins.md, 'Cluster sets')."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from apis.cluster import CLUSTER_SET_LABEL, ManagedClusterSet
from apis.fielderrors import go_quote
from apis.placements import Placement
from placement.arrays import BoolMask
from placement.selectors import SelectorError, labels_match, selector_error, selector_mask
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = ["Availability", "availability", "set_contains", "set_members", "set_selector_error"]


@dataclass(frozen=True)
class Availability:
    """The outcome of cluster-set resolution for one placement. `error`: the first eligible
    set (by name) whose label selector cannot be built, in OCM's words (`failed to get clusters
    from ClusterSet "x": values: Invalid value: null: ...`); OCM's sync fails there and
    retries, writing nothing, and the scheduler reports it as a misconfiguration."""

    has_bindings: bool
    eligible_sets: tuple[str, ...]
    available: BoolMask
    error: str | None = None


def set_members(fleet: FleetSnapshot, cluster_set: ManagedClusterSet) -> BoolMask:
    """Members of a set: by the exclusive set label, or by its label selector."""
    cached = fleet._set_masks.get(cluster_set.name)
    if cached is not None:
        return cached
    selector = cluster_set.spec.cluster_selector
    if selector.selector_type == "LabelSelector":
        if selector.label_selector is None:
            mask = fleet.empty_mask()  # a nil selector selects nothing
        else:
            try:
                mask = selector_mask(selector.label_selector, fleet.label, fleet.size)
            except SelectorError:
                mask = fleet.empty_mask()
    else:
        column = fleet.label(CLUSTER_SET_LABEL)
        mask = column.codes == column.code_of(cluster_set.name)
    fleet._set_masks[cluster_set.name] = mask
    return mask


def set_contains(cluster_set: ManagedClusterSet, labels: Mapping[str, str]) -> bool:
    """Whether a cluster with these labels is a member of the set (the rule of `set_members`,
    for one cluster)."""
    selector = cluster_set.spec.cluster_selector
    if selector.selector_type == "LabelSelector":
        if selector.label_selector is None:
            return False
        try:
            return labels_match(selector.label_selector, labels)
        except SelectorError:
            return False
    return labels.get(CLUSTER_SET_LABEL) == cluster_set.name


def availability(placement: Placement, fleet: FleetSnapshot) -> Availability:
    """Valid bindings -> eligible sets -> available clusters (not being deleted), computed
    once per snapshot, namespace and cluster sets asked for (the placements of a fan-out, or
    one placement's cycles, share it); the mask is read-only."""
    wanted = placement.spec.cluster_sets
    # A cache of the snapshot itself, as its cached properties are (a snapshot never changes).
    known = fleet.__dict__.setdefault(_AVAILABLE, {})
    key = (placement.namespace, tuple(wanted) if wanted else None)
    found = known.get(key)
    if found is None:
        found = known[key] = _availability(placement.namespace, wanted, fleet)
    return found  # type: ignore[no-any-return]


_AVAILABLE = "placement.clustersets.availability"


def _availability(namespace: str, wanted: list[str] | None, fleet: FleetSnapshot) -> Availability:
    valid = [b for b in fleet.bindings.get(namespace, ()) if b in fleet.cluster_sets]
    eligible = sorted(set(valid) & set(wanted)) if wanted else sorted(set(valid))
    available = fleet.empty_mask()
    for name in eligible:
        available |= set_members(fleet, fleet.cluster_sets[name])
    available &= ~fleet.deleting
    error = next(filter(None, (set_selector_error(fleet.cluster_sets[n]) for n in eligible)), None)
    available = np.asarray(available, dtype=bool)
    available.flags.writeable = False
    return Availability(bool(valid), tuple(eligible), available, error)


def set_selector_error(cluster_set: ManagedClusterSet) -> str | None:
    """Why a set's label selector cannot be built (OCM's sync error), or None. Such a set has
    no members (`set_members`)."""
    selector = cluster_set.spec.cluster_selector
    if selector.selector_type != "LabelSelector" or selector.label_selector is None:
        return None
    problem = selector_error(selector.label_selector)
    if problem is None:
        return None
    return f"failed to get clusters from ClusterSet {go_quote(cluster_set.name)}: {problem}"
