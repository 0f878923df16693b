"""`EvenSpread` selector: OCM's spread-policy design (enhancement 70) with the choices pinned in
docs/hub-admins.md, 'Spread policy', vectorized over leaf topology tuples.

Clusters sharing a full topology tuple (a leaf) share their exclusion and spread score, so each
step compares only the best remaining cluster of every leaf: one O(N log N) sort, then
O(leaves × levels + domains) per pick, independent of the number of clusters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from apis.placements import MAX_SPREAD_CONSTRAINTS, Placement, SpreadConstraintsTerm
from placement.framework import (
    BoolMask,
    Code,
    Cycle,
    RowIndex,
    ScoreVector,
    Selection,
    Selector,
    Status,
)
from placement.snapshot.fleet_snapshot import Column, FleetSnapshot
from plugins.evenspread.levels import LEVEL_SCORE_MAX, IntArray, Level, Levels

__all__ = [
    "DEFAULT_SPREAD_WEIGHT",
    "LEVEL_SCORE_MAX",
    "SPREAD",
    "EvenSpread",
    "spread_weight",
    "validate_terms",
]

SPREAD = "Spread"
DEFAULT_SPREAD_WEIGHT = 2
_LEVEL_BASE = 64
_NEVER = np.iinfo(np.int64).min  # the pick key of a leaf that is not eligible


def spread_weight(placement: Placement) -> int:
    """The Spread coordinate's weight: as configured (last wins), else 2 in Additive mode and
    0 in Exact mode."""
    policy = placement.spec.prioritizer_policy
    weight = None
    for config in (policy.configurations or []) if policy else []:
        coordinate = config.score_coordinate
        if coordinate.type == "BuiltIn" and coordinate.built_in == SPREAD:
            weight = config.weight
    if weight is not None:
        return weight
    mode = policy.mode if policy else ""
    return 0 if mode == "Exact" else DEFAULT_SPREAD_WEIGHT


def validate_terms(terms: list[SpreadConstraintsTerm]) -> str | None:
    """The spec errors the CRD cannot catch all of, named by term."""
    if len(terms) > MAX_SPREAD_CONSTRAINTS:
        return f"spreadConstraints: at most {MAX_SPREAD_CONSTRAINTS} terms (got {len(terms)})"
    seen: dict[str, int] = {}
    for index, term in enumerate(terms):
        where = f"spreadConstraints[{index}]"
        if term.topology_key in seen:
            first = seen[term.topology_key]
            return (
                f"{where}: duplicate topologyKey {term.topology_key!r} "
                f"(also in spreadConstraints[{first}])"
            )
        seen[term.topology_key] = index
        if term.max_skew < 1:
            return f"{where}: maxSkew must be at least 1 (got {term.max_skew})"
        if term.topology_key_type not in ("Label", "Claim"):
            return (
                f"{where}: topologyKeyType must be Label or Claim (got {term.topology_key_type!r})"
            )
        if term.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
            return (
                f"{where}: whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway "
                f"(got {term.when_unsatisfiable!r})"
            )
    return None


@dataclass(frozen=True)
class _Topology:
    """Domains per level and the leaves, built once per cycle."""

    parents: list[IntArray]  # level k: parent domain id (level k-1) of each level-k domain
    domain_values: list[list[tuple[str, ...]]]  # level k: the tuple naming each domain
    leaf_domains: list[IntArray]  # level k: domain id of each leaf (-1: none at this level)
    order: IntArray  # candidate rows, grouped by leaf, best first within a leaf
    ranks: IntArray  # per position of `order`: the row's rank among the candidate rows (name)
    starts: IntArray  # per leaf: first position in `order`
    ends: IntArray  # per leaf: one past the last position


def _columns(fleet: FleetSnapshot, terms: list[SpreadConstraintsTerm]) -> list[Column]:
    return [
        fleet.label(t.topology_key)
        if t.topology_key_type == "Label"
        else fleet.claim(t.topology_key)
        for t in terms
    ]


def _topology(
    rows: IntArray, codes: list[IntArray], columns: list[Column], prio: IntArray
) -> _Topology:
    levels = len(codes)
    domain_ids = np.full((levels, rows.size), -1, dtype=np.int64)
    parents: list[IntArray] = []
    values: list[list[tuple[str, ...]]] = []
    previous = np.zeros(rows.size, dtype=np.int64)  # the root
    previous_values: list[tuple[str, ...]] = [()]
    for k in range(levels):
        present = (codes[k] >= 0) & (previous >= 0)
        width = int(codes[k].max(initial=0)) + 1
        keys = np.where(present, previous * width + codes[k], -1)
        unique, inverse = np.unique(keys[present], return_inverse=True)
        ids = np.full(rows.size, -1, dtype=np.int64)
        ids[present] = inverse
        domain_ids[k] = ids
        parent = (unique // width).astype(np.int64)
        parents.append(parent)
        level_values = [
            (*previous_values[int(p)], columns[k].values[int(u % width)])
            for p, u in zip(parent, unique, strict=True)
        ]
        values.append(level_values)
        previous, previous_values = ids, level_values
    # A row's levels with a domain are a prefix, and a domain id already stands for the chain
    # of domains above it: the deepest domain a row has names its leaf. One integer per row
    # (offset by level) sorts far faster than the rows of `domain_ids` as tuples.
    depth = (domain_ids >= 0).sum(axis=0)
    offsets = np.cumsum([0, *(len(p) for p in parents)])
    deepest = domain_ids[np.maximum(depth - 1, 0), np.arange(rows.size)]
    keys = np.where(depth > 0, offsets[np.maximum(depth - 1, 0)] + deepest, -1)
    _, first, leaf_of_row = np.unique(keys, return_index=True, return_inverse=True)
    leaf_of_row = leaf_of_row.reshape(-1)
    order = np.lexsort((rows, -prio, leaf_of_row))
    bounds = np.searchsorted(leaf_of_row[order], np.arange(first.size + 1))
    return _Topology(
        parents=parents,
        domain_values=values,
        leaf_domains=[domain_ids[k][first].astype(np.int64) for k in range(levels)],
        order=rows[order].astype(np.int64),
        ranks=order.astype(np.int64),  # `rows` ascends, so an index into it is a name rank
        starts=bounds[:-1].astype(np.int64),
        ends=bounds[1:].astype(np.int64),
    )


class EvenSpread(Selector):
    """Picks clusters one at a time, balancing selected counts across topology domains."""

    name = "EvenSpread"

    def select(
        self,
        cycle: Cycle,
        placement: Placement,
        fleet: FleetSnapshot,
        rows: RowIndex,
        total: ScoreVector,
    ) -> Selection:
        spread = placement.spec.spread_policy
        terms = list(spread.spread_constraints or []) if spread else []
        problem = validate_terms(terms)
        if problem:
            return Selection(np.empty(0, np.intp), Status(Code.MISCONFIGURED, problem, self.name))
        weight = spread_weight(placement)
        columns = _columns(fleet, terms)
        hard = [t.when_unsatisfiable == "DoNotSchedule" for t in terms]
        # A cluster needs a domain at every DoNotSchedule level (so its key, and the keys of the
        # levels above it): without one there is no way to respect maxSkew.
        deepest = max((k for k, is_hard in enumerate(hard) if is_hard), default=-1)
        keep: BoolMask | None = None
        for column in columns[: deepest + 1]:
            has = column.codes.take(rows) >= 0
            keep = has if keep is None else keep & has
        selectable = (rows if keep is None else rows[keep]).astype(np.int64)
        wanted = placement.spec.number_of_clusters
        n = rows.size if wanted is None else wanted
        if selectable.size == 0 or n == 0 or not terms:
            # explain: no pick at all (a spread placement still gets its spread section)
            explained = bool(terms) and bool(cycle.scratch.get("explain"))
            empty: dict[str, Any] = {"weight": weight, "steps": []} if explained else {}
            return Selection(np.empty(0, np.intp), wanted=n, trace=empty)
        codes = [column.codes.take(selectable).astype(np.int64) for column in columns]
        prio = (total if keep is None else total[keep]).astype(np.int64)
        topo = _topology(selectable, codes, columns, prio)
        # Each position of `order`'s total: `ranks` index the selectable rows, as `prio` does.
        by_position = prio.take(topo.ranks)
        explain = cycle.scratch.get("explain")
        picks, trace = self._pick(topo, terms, hard, weight, by_position, n, explain)
        selection_trace: dict[str, Any] = {"weight": weight}
        if trace is not None:
            named = [_named_step(step, topo, fleet, terms) for step in trace]
            if named and named[-1]["picked"] is None:  # stopped short: why nothing was eligible
                selection_trace["stopped"] = {"candidates": named.pop()["candidates"]}
            selection_trace["steps"] = named
        return Selection(np.asarray(picks, dtype=np.intp), wanted=n, trace=selection_trace)

    @staticmethod
    def _pick(
        topo: _Topology,
        terms: list[SpreadConstraintsTerm],
        hard: list[bool],
        weight: int,
        prio: IntArray,
        n: int,
        explain: object,
    ) -> tuple[list[int], list[dict[str, Any]] | None]:
        """The picks (snapshot rows, in order) and, when explaining, every step; `prio` is the
        prioritizers' total of each position of `topo.order`."""
        levels = [
            Level(
                k,
                topo.parents[k],
                topo.leaf_domains[k],
                hard[k],
                terms[k].max_skew,
                _LEVEL_BASE ** (len(terms) - 1 - k),
            )
            for k in range(len(terms))
            if len(topo.parents[k])  # a level where no cluster has a domain scores 0 for all
        ]
        ptr = topo.starts.copy()
        last = len(topo.order) - 1
        picks: list[int] = []
        trace: list[dict[str, Any]] | None = [] if explain else None
        leaves = len(topo.starts)
        # Ties go to the smallest name: fold it into one integer key per leaf, final score
        # first. The tie-break must be the rank among the candidates (0..last), not the fleet
        # row: rows skip the clusters earlier filters removed, so their spread can exceed any
        # scale derived from the candidate count and let a smaller name beat a higher score.
        tie_scale = np.int64(last + 1)
        if trace is None:
            return _quick_picks(topo, levels, weight, prio, tie_scale, n), None
        # Explain: level by level (each level's exclusions are reported apart).
        reasons: list[tuple[int, BoolMask, IntArray]] = []
        # Each leaf's best remaining cluster (its head): alive while it has one, its rank and
        # score kept per leaf and moved on only for the leaf picked.
        alive = topo.starts < topo.ends
        heads = np.minimum(topo.starts, last)
        head_ranks = topo.ranks[heads]
        head_prio = prio[heads]
        while len(picks) < n:
            eligible = alive.copy()
            raw = np.zeros(leaves, dtype=np.int64)
            reasons = []
            for level in levels:
                level_raw, bad, skew = level.evaluate(True)
                raw += level_raw
                if bad is not None:
                    eligible &= ~bad
                    if skew is not None:
                        reasons.append((level.index, bad, skew))
            pool = raw[eligible]
            if pool.size == 0:
                if alive.any():
                    nothing = np.zeros(leaves, dtype=np.int64)
                    trace.append(_step(-1, -1, ptr, reasons, raw, nothing, weight, prio, topo))
                break
            if weight:
                lo, hi = pool.min(), pool.max()
                if hi > lo:
                    normalized = -100 + (200 * (raw - lo)) // (hi - lo)
                else:
                    normalized = np.zeros(leaves, dtype=np.int64)
                final = weight * normalized + head_prio
            else:
                normalized = np.zeros(leaves, dtype=np.int64)
                final = head_prio
            key = np.where(eligible, final * tie_scale - head_ranks, _NEVER)
            leaf = int(key.argmax())
            position = int(ptr[leaf])
            row = int(topo.order[position])
            trace.append(_step(leaf, row, ptr, reasons, raw, normalized, weight, prio, topo))
            picks.append(row)
            for level in levels:
                level.add(leaf)
            position += 1
            ptr[leaf] = position
            if position < topo.ends[leaf]:
                head_ranks[leaf] = topo.ranks[position]
                head_prio[leaf] = prio[position]
            else:
                alive[leaf] = False
        return picks, trace


def _quick_picks(
    topo: _Topology, levels: list[Level], weight: int, prio: IntArray, tie_scale: np.int64, n: int
) -> list[int]:
    """`_pick` without explain: the same picks with fewer numpy calls per pick. Every level is
    evaluated at once (`Levels`), and each leaf's head carries one key, its score times
    `tie_scale` minus its name rank, so that a pick adds `weight x tie_scale x` the spread
    score's integer part to it: the constant -100 of the normalisation shifts every key alike
    and is left out."""
    leaves = len(topo.starts)
    last = len(topo.order) - 1
    fused = Levels(levels, leaves)
    ptr = topo.starts.copy()
    alive = topo.starts < topo.ends
    heads = np.minimum(topo.starts, last)
    head_key = prio[heads] * tie_scale - topo.ranks[heads]
    scale = np.int64(weight) * tie_scale
    picks: list[int] = []
    while len(picks) < n:
        raw, excluded = fused.evaluate()
        eligible = alive if excluded is None else alive & ~excluded
        pool = raw[eligible]
        if pool.size == 0:
            break
        key = head_key
        if weight:
            lo, hi = pool.min(), pool.max()
            if hi > lo:
                key = (raw - lo) * 200 // (hi - lo) * scale + head_key
        leaf = int(np.where(eligible, key, _NEVER).argmax())
        position = int(ptr[leaf])
        picks.append(int(topo.order[position]))
        for level in levels:
            level.add(leaf)
        position += 1
        ptr[leaf] = position
        if position < topo.ends[leaf]:
            head_key[leaf] = prio[position] * tie_scale - topo.ranks[position]
        else:
            alive[leaf] = False
    return picks


def _step(
    leaf: int,
    row: int,
    ptr: IntArray,
    reasons: list[tuple[int, BoolMask, IntArray]],
    raw: IntArray,
    normalized: IntArray,
    weight: int,
    prio: IntArray,
    topo: _Topology,
) -> dict[str, Any]:
    """Every remaining cluster at this step (explain only: O(clusters) per step); `row` -1 is
    the step that found nothing eligible and stopped."""
    candidates = []
    for index in np.flatnonzero(ptr < topo.ends):
        excluded = next(
            ({"term": k, "skew": int(skew[index])} for k, bad, skew in reasons if bad[index]),
            None,
        )
        for position in range(int(ptr[index]), int(topo.ends[index])):
            cluster = int(topo.order[position])
            record: dict[str, Any] = {"leaf": int(index), "row": cluster}
            if excluded:
                record["excluded"] = excluded
            else:
                final = weight * int(normalized[index]) + int(prio[position])
                record.update(raw=int(raw[index]), normalized=int(normalized[index]), final=final)
            candidates.append(record)
    candidates.sort(key=lambda r: r["row"])
    return {"picked_row": row, "candidates": candidates}


def _named_step(
    step: dict[str, Any],
    topo: _Topology,
    fleet: FleetSnapshot,
    terms: list[SpreadConstraintsTerm],
) -> dict[str, Any]:
    out_candidates = []
    for record in step["candidates"]:
        item: dict[str, Any] = {"cluster": fleet.names[record["row"]]}
        excluded = record.get("excluded")
        if excluded:
            k = excluded["term"]
            domain = int(topo.leaf_domains[k][record["leaf"]])
            item["excluded"] = {
                "term": k,
                "topologyKey": terms[k].topology_key,
                "domain": list(topo.domain_values[k][domain]),
                "skew": excluded["skew"],
                "maxSkew": terms[k].max_skew,
            }
        else:
            item.update(
                rawSpreadScore=record["raw"],
                spreadScore=record["normalized"],
                finalScore=record["final"],
            )
        out_candidates.append(item)
    row = step["picked_row"]
    return {"picked": fleet.names[row] if row >= 0 else None, "candidates": out_candidates}
