"""The selected counts of `EvenSpread`'s topology levels (private to
`plugins.evenspread.evenspread`).

A `Level` keeps one level's counts per domain with each sibling group's minimum and maximum up
to date as counts grow by one, and scores its domains (the per-level score of docs/hub-admins.md,
'Spread policy') and their skew. `Levels` holds every level's counts in one array (each `Level`
works on its slice) so that a pick evaluates all levels with a dozen numpy calls instead of a
dozen per level: at 100 leaves of 3 levels the calls, not the arithmetic, are the cost.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt

from placement.framework import BoolMask

__all__ = ["LEVEL_SCORE_MAX", "IntArray", "Level", "Levels"]

LEVEL_SCORE_MAX = 63
IntArray = npt.NDArray[np.int64]


class Level:
    """Selected counts of one topology level, with sibling minimum and maximum kept up to date
    as counts grow by one (no full recomputation per pick)."""

    def __init__(
        self,
        index: int,
        parents: IntArray,
        leaf_domains: IntArray,
        hard: bool,
        max_skew: int,
        place: int,
    ) -> None:
        self.index = index
        size = len(parents)
        groups = int(parents.max()) + 1
        self.parents = parents
        self.hard = hard
        self.max_skew = max_skew
        self.place = place
        self.counts = np.zeros(size + 1, dtype=np.int64)  # last slot: "no domain" sentinel
        self.low = np.zeros(groups, dtype=np.int64)
        self.high = np.zeros(groups, dtype=np.int64)
        # Plain lists for what `add` reads one item at a time (a numpy scalar costs more).
        self.at_low: list[int] = np.bincount(parents, minlength=groups).tolist()
        self._parent_of: list[int] = parents.tolist()
        self._domain_of: list[int] = leaf_domains.tolist()
        order = np.argsort(parents, kind="stable")
        bounds = np.searchsorted(parents[order], np.arange(groups + 1))
        self.children = [order[bounds[g] : bounds[g + 1]] for g in range(groups)]
        self.leaf = np.where(leaf_domains >= 0, leaf_domains, size)
        self.domains = leaf_domains
        self.score = np.zeros(size + 1, dtype=np.int64)
        self.skew = np.zeros(size + 1, dtype=np.int64)
        self.size = size

    def evaluate(self, want_skew: bool) -> tuple[IntArray, BoolMask | None, IntArray | None]:
        """Per leaf: raw score contribution, excluded flags (DoNotSchedule), skew if asked."""
        counts = self.counts[: self.size]
        low = self.low[self.parents]
        high = self.high[self.parents]
        # all siblings equal gives high == count, hence 0
        np.floor_divide(
            LEVEL_SCORE_MAX * (high - counts), np.maximum(high - low, 1), out=self.score[:-1]
        )
        raw = self.score[self.leaf] * self.place
        if not self.hard:
            return raw, None, None
        np.subtract(counts + 1, low, out=self.skew[:-1])
        skew = self.skew[self.leaf]
        return raw, skew > self.max_skew, (skew if want_skew else None)

    def add(self, leaf: int) -> None:
        domain = self._domain_of[leaf]
        if domain < 0:
            return
        group = self._parent_of[domain]
        before = int(self.counts[domain])
        self.counts[domain] = before + 1
        if before + 1 > self.high[group]:
            self.high[group] = before + 1
        if before == self.low[group]:
            self.at_low[group] -= 1
            if self.at_low[group] == 0:
                self.low[group] = before + 1
                siblings = self.counts[self.children[group]]
                self.at_low[group] = int(np.count_nonzero(siblings == before + 1))


class Levels:
    """Every level of a pick loop evaluated at once: counts, group minimum and maximum of all
    levels in three arrays, the levels' own `counts`, `low` and `high` rebound to slices of
    them (so `Level.add` keeps both views current), each leaf's domain at every level as one
    row of a matrix."""

    def __init__(self, levels: list[Level], leaves: int) -> None:
        sizes = [level.size for level in levels]
        groups = [level.low.size for level in levels]
        domain_at = np.cumsum([0, *sizes])
        group_at = np.cumsum([0, *groups])
        domains = int(domain_at[-1])
        self.counts = np.zeros(domains, dtype=np.int64)
        self.low = np.zeros(int(group_at[-1]), dtype=np.int64)
        self.high = np.zeros(int(group_at[-1]), dtype=np.int64)
        columns: list[IntArray] = []
        group_of: list[IntArray] = []
        for level, first, group in zip(levels, domain_at, group_at, strict=False):
            self.counts[first : first + level.size] = level.counts[: level.size]
            self.low[group : group + level.low.size] = level.low
            self.high[group : group + level.high.size] = level.high
            level.counts = self.counts[first : first + level.size]
            level.low = self.low[group : group + level.low.size]
            level.high = self.high[group : group + level.high.size]
            group_of.append(level.parents + group)
            columns.append(np.where(level.domains >= 0, level.domains + first, domains))
        self.group = np.concatenate(group_of) if group_of else np.zeros(0, dtype=np.int64)
        # leaves x levels: the global domain of each leaf, `domains` (score 0, skew 0) for none
        self.matrix = (
            np.stack(columns, axis=1) if columns else np.zeros((leaves, 0), dtype=np.int64)
        )
        self.places = np.asarray([level.place for level in levels], dtype=np.int64)
        hard = [k for k, level in enumerate(levels) if level.hard]
        self.hard_matrix = self.matrix[:, hard] if hard else None
        self.hard_column = self.matrix[:, hard[0]].copy() if len(hard) == 1 else None
        self.max_skew = np.asarray([levels[k].max_skew for k in hard], dtype=np.int64)
        self.score = np.zeros(domains + 1, dtype=np.int64)  # last slot: no domain
        self.skew = np.zeros(domains + 1, dtype=np.int64)

    def evaluate(self) -> tuple[IntArray, BoolMask | None]:
        """Per leaf: the raw spread score over all levels, and which leaves a DoNotSchedule
        level excludes (None: no such level)."""
        low = self.low[self.group]
        high = self.high[self.group]
        np.floor_divide(
            LEVEL_SCORE_MAX * (high - self.counts), np.maximum(high - low, 1), out=self.score[:-1]
        )
        raw: IntArray = self.score[self.matrix] @ self.places
        if self.hard_matrix is None:
            return raw, None
        # skew = count + 1 - low > maxSkew, i.e. count - low >= maxSkew
        np.subtract(self.counts, low, out=self.skew[:-1])
        if self.hard_column is not None:  # one DoNotSchedule level, the common case
            return raw, cast(BoolMask, self.skew[self.hard_column] >= self.max_skew[0])
        excluded = (self.skew[self.hard_matrix] >= self.max_skew).any(axis=1)
        return raw, cast(BoolMask, excluded)
