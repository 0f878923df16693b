"""A plain, line-by-line implementation of the spread rules (docs/hub-admins.md, 'Spread
policy': `selectOne` repeated n times with a selected-count table), used only to check the
vectorized EvenSpread selector."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    name: str
    prio: int
    values: tuple[str | None, ...]  # one per term; None = key absent


@dataclass(frozen=True)
class Term:
    max_skew: int
    hard: bool  # DoNotSchedule


def domain(c: Candidate, level: int) -> tuple[str, ...] | None:
    prefix = c.values[: level + 1]
    if any(v is None for v in prefix):
        return None
    return tuple(v for v in prefix if v is not None)


def oracle_select(candidates: list[Candidate], terms: list[Term], weight: int, n: int) -> list[str]:
    levels = len(terms)
    # A cluster must have a domain at every DoNotSchedule level: every key down to the deepest.
    deepest = max((k for k in range(levels) if terms[k].hard), default=-1)
    usable = [c for c in candidates if all(v is not None for v in c.values[: deepest + 1])]
    domains: list[set[tuple[str, ...]]] = [set() for _ in range(levels)]
    for c in usable:
        for k in range(levels):
            d = domain(c, k)
            if d is not None:
                domains[k].add(d)
    count: dict[tuple[str, ...], int] = {}
    picked: list[str] = []
    remaining = list(usable)

    def siblings(d: tuple[str, ...], k: int) -> list[int]:
        return [count.get(e, 0) for e in domains[k] if e[:-1] == d[:-1]]

    while len(picked) < n:
        eligible = []
        for c in remaining:
            ok = True
            for k in range(levels):
                if not terms[k].hard:
                    continue
                d = domain(c, k)
                assert d is not None
                if count.get(d, 0) + 1 - min(siblings(d, k)) > terms[k].max_skew:
                    ok = False
            if ok:
                eligible.append(c)
        if not eligible:
            break
        raw: dict[str, int] = {}
        for c in eligible:
            r = 0
            for k in range(levels):
                d = domain(c, k)
                score = 0
                if d is not None:
                    sib = siblings(d, k)
                    high, low = max(sib), min(sib)
                    if high > low:
                        score = (63 * (high - count.get(d, 0))) // (high - low)
                r = r * 64 + score
            raw[c.name] = r
        lo, hi = min(raw.values()), max(raw.values())
        best: Candidate | None = None
        best_final = 0
        for c in eligible:
            norm = -100 + (200 * (raw[c.name] - lo)) // (hi - lo) if hi > lo else 0
            final = weight * norm + c.prio
            if (
                best is None
                or final > best_final
                or (final == best_final and c.name.encode() < best.name.encode())
            ):
                best, best_final = c, final
        assert best is not None
        picked.append(best.name)
        remaining.remove(best)
        for k in range(levels):
            d = domain(best, k)
            if d is not None:
                count[d] = count.get(d, 0) + 1
    return picked
