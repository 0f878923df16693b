"""Decision groups and paging: selected clusters -> groups -> PlacementDecision objects named
`<placement>-decision-<k>` with at most 100 decisions each (OCM's rules: docs/hub-admins.md,
'Decision groups and PlacementDecisions').

Pages are made as rows (`DecisionRow`, what the writer compares and writes), the models only
when asked for (`Paged.decisions`): every reconcile pages its selection, and validating a dozen
models per page cost more than the rest of paging (a 5,000 x 10,000 cold start builds 10,000
pages, nearly all of them only compared).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from sys import intern
from typing import Any

import numpy as np

from apis.meta import ObjectMeta, OwnerReference
from apis.placements import (
    ClusterDecision,
    DecisionGroupStatus,
    Placement,
    PlacementDecision,
    PlacementDecisionStatus,
)
from placement.arrays import RowIndex
from placement.framework import Code, Status
from placement.rows import DecisionRow, decision_labels
from placement.selectors import SelectorError, cluster_mask
from placement.snapshot.fleet_snapshot import FleetSnapshot

__all__ = [
    "MAX_DECISIONS_PER_OBJECT",
    "DecisionGroup",
    "Paged",
    "cluster_decision_groups",
    "group_length",
    "paginate",
]

MAX_DECISIONS_PER_OBJECT = 100


@dataclass(frozen=True)
class DecisionGroup:
    """A named (or unnamed, "") group of selected clusters, sorted by name."""

    name: str
    clusters: tuple[str, ...]


@dataclass(frozen=True)
class Paged:
    """The PlacementDecisions to write (as rows, and as models on demand) and the
    `status.decisionGroups` describing them."""

    rows: tuple[DecisionRow, ...]
    groups: tuple[DecisionGroupStatus, ...]

    @property
    def names(self) -> list[str]:
        return [row.name for row in self.rows]

    @cached_property
    def decisions(self) -> tuple[PlacementDecision, ...]:
        """The pages as models, made once on first use."""
        return tuple(_decision_model(row) for row in self.rows)


def _decision_model(row: DecisionRow) -> PlacementDecision:
    """The PlacementDecision a paged row stands for."""
    return PlacementDecision(
        metadata=ObjectMeta(
            name=row.name,
            namespace=row.namespace,
            labels=dict(row.labels),
            owner_references=[OwnerReference.model_validate(owner) for owner in row.owners],
        ),
        status=PlacementDecisionStatus(
            decisions=[ClusterDecision(cluster_name=c, reason="") for c in row.clusters]
        ),
    )


def group_length(value: int | str, total: int) -> tuple[int, Status]:
    """Clusters per group from `clustersPerDecisionGroup`, computed as OCM does (a percentage is
    `ceil(p / 100 × total)` in floating point); out-of-range lengths mean one group."""
    length = total
    if isinstance(value, int):
        length = value
    else:
        bad = Status(Code.MISCONFIGURED, f"{value} invalid type: string is not a percentage")
        if not value.endswith("%"):
            return total, bad
        try:
            percent = float(value[:-1])
        except ValueError:
            return total, bad
        length = math.ceil(percent / 100 * float(total))
    if length <= 0 or length > total:
        length = total
    return length, Status()


def _chunks(name: str, clusters: Sequence[str], length: int) -> list[DecisionGroup]:
    ordered = sorted(clusters, key=str.encode)
    return [
        DecisionGroup(name, tuple(ordered[i : i + length]))
        for i in range(0, len(ordered), max(length, 1))
    ]


def cluster_decision_groups(
    placement: Placement, fleet: FleetSnapshot, selected: RowIndex
) -> tuple[list[DecisionGroup], Status]:
    """Named groups first (each cluster in the first group whose selector matches), the rest in
    unnamed groups; always at least one (possibly empty) group."""
    strategy = placement.spec.decision_strategy
    group_strategy = strategy.group_strategy if strategy else None
    per_group: int | str = group_strategy.clusters_per_decision_group if group_strategy else "100%"
    length, status = group_length(per_group, len(selected))
    if not status.ok:
        return [], status
    pool = fleet.empty_mask()
    pool[selected] = True
    groups: list[DecisionGroup] = []
    for spec in (group_strategy.decision_groups or []) if group_strategy else []:
        chooser = spec.group_cluster_selector
        try:
            matched = cluster_mask(chooser.label_selector, chooser.claim_selector, fleet, pool)
        except SelectorError as exc:
            return [], Status(Code.MISCONFIGURED, str(exc))
        pool &= ~matched
        groups.extend(
            _chunks(spec.group_name, fleet.rows_to_names(np.flatnonzero(matched)), length)
        )
    groups.extend(_chunks("", fleet.rows_to_names(np.flatnonzero(pool)), length))
    return groups or [DecisionGroup("", ())], Status()


def _owner(placement: Placement) -> dict[str, Any]:
    """The controller owner reference of the placement's PDs, as on the wire."""
    return {
        "apiVersion": placement.api_version_string(),
        "kind": placement.KIND,
        "name": placement.name,
        "uid": placement.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def paginate(placement: Placement, groups: Sequence[DecisionGroup]) -> Paged:
    """One PlacementDecision per 100 clusters of each group, numbered from 1 across groups."""
    rows: list[DecisionRow] = []
    statuses: list[DecisionGroupStatus] = []
    namespace, owners = placement.namespace, (_owner(placement),)
    for index, group in enumerate(groups):
        clusters = tuple([intern(c) for c in group.clusters])
        pages = [
            clusters[i : i + MAX_DECISIONS_PER_OBJECT]
            for i in range(0, len(clusters), MAX_DECISIONS_PER_OBJECT)
        ] or [()]
        labels = decision_labels(placement.name, group.name, str(index))
        names = []
        for page in pages:
            name = f"{placement.name}-decision-{len(rows) + 1}"
            names.append(name)
            rows.append(DecisionRow(namespace, name, None, None, labels, owners, page, None, True))
        statuses.append(
            DecisionGroupStatus(
                decision_group_index=index,
                decision_group_name=group.name,
                decisions=names,
                cluster_count=len(group.clusters),
            )
        )
    return Paged(tuple(rows), tuple(statuses))
