"""The write order of PlacementDecisions, without a server: every plan is replayed write by write
and checked for its two promises (a cluster selected before and after is always in some page,
a deliberate difference from OCM in docs/replacing-ocm.md, 'Differences from OCM'; no page ever
holds more than 100 decisions) and for reaching the desired pages."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.hub.decision_steps import (
    Create,
    Delete,
    Page,
    Step,
    Update,
    carrier_numbers,
    plan_steps,
)
from placement.decisions import MAX_DECISIONS_PER_OBJECT

PREFIX = "p-decision-"


def names(prefix: str, count: int, start: int = 0) -> list[str]:
    return [f"{prefix}{i:04d}" for i in range(start, start + count)]


def pages(*contents: Sequence[str]) -> list[Page]:
    return [Page(f"{PREFIX}{k}", tuple(c)) for k, c in enumerate(contents, 1)]


def paged(clusters: Sequence[str], size: int = MAX_DECISIONS_PER_OBJECT) -> list[Page]:
    ordered = sorted(clusters)
    chunks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    return pages(*chunks) if chunks else pages([])


def states(current: Sequence[Page], steps: Sequence[Step]) -> Iterator[dict[str, tuple[str, ...]]]:
    """What the server holds after each single write of `steps` (a create is two writes: the
    empty object, then its decisions)."""
    state = {p.name: p.clusters for p in current}
    for step in steps:
        if isinstance(step, Create):
            assert step.name not in state, f"{step.name} created twice"
            state[step.name] = ()
            yield state
            state[step.name] = step.clusters
        elif isinstance(step, Update):
            assert step.name in state, f"{step.name} updated before it exists"
            state[step.name] = step.clusters
        else:
            del state[step.name]
        yield state


def check(
    current: Sequence[Page], desired: Sequence[Page], rewrite: Sequence[str] = ()
) -> list[Step]:
    """Plan, replay, and assert both promises after every write and the desired end state."""
    steps = plan_steps(current, desired, carrier_prefix=PREFIX, rewrite=rewrite)
    before = {c for p in current for c in p.clusters}
    kept = before & {c for p in desired for c in p.clusters}
    final: dict[str, tuple[str, ...]] = {p.name: p.clusters for p in current}
    for state in states(current, steps):
        present = {c for clusters in state.values() for c in clusters}
        assert kept <= present, f"vanished: {sorted(kept - present)}"
        assert max(map(len, state.values()), default=0) <= MAX_DECISIONS_PER_OBJECT
        final = dict(state)
    assert final == {p.name: p.clusters for p in desired}
    return steps


def kinds(steps: Sequence[Step]) -> list[str]:
    return [type(s).__name__ + ("(carrier)" if _carrier(s) else "") for s in steps]


def _carrier(step: Step) -> bool:
    return (isinstance(step, Create) and step.carrier_for is not None) or (
        isinstance(step, Delete) and step.carrier
    )


# --- worked cases ----------------------------------------------------------------------------


def test_unchanged_pages_need_no_step() -> None:
    same = paged(names("c", 250))
    assert check(same, same) == []


def test_a_rewrite_updates_a_page_whose_cluster_list_looks_the_same() -> None:
    same = pages(["a", "b"])
    assert check(same, same, rewrite=[f"{PREFIX}1"]) == [Update(f"{PREFIX}1", ("a", "b"))]


def test_new_pages_are_created_before_any_update_and_stale_ones_deleted_last() -> None:
    current = pages(["a", "b"], ["c"], ["d"])
    desired = pages(["b"], ["c", "d", "e"])
    steps = check(current, desired)
    assert kinds(steps) == ["Update", "Update", "Delete"]
    assert steps[-1] == Delete(f"{PREFIX}3")


def test_inserting_names_that_sort_first_shifts_every_page_without_a_carrier() -> None:
    # 250 selected, then 50 new names sorting first: every page loses its tail to the next one.
    old = names("m", 250)
    steps = check(paged(old), paged([*names("a", 50), *old]))
    assert kinds(steps) == ["Update", "Update", "Update"]
    # The last page takes the tail of the second before the second drops it, and so on.
    assert [s.name for s in steps] == [f"{PREFIX}3", f"{PREFIX}2", f"{PREFIX}1"]


def test_removing_names_that_sort_first_shifts_pages_the_other_way() -> None:
    old = names("m", 300)
    steps = check(paged(old), paged(old[60:]))
    assert kinds(steps) == ["Update", "Update", "Update"]
    assert [s.name for s in steps] == [f"{PREFIX}1", f"{PREFIX}2", f"{PREFIX}3"]


def test_two_groups_swapping_clusters_go_through_a_carrier() -> None:
    first, second = names("a", 100), names("b", 100)
    steps = check(pages(first, second), pages(second, first))
    assert kinds(steps) == ["Create(carrier)", "Update", "Update", "Delete(carrier)"]
    carrier = steps[0]
    assert isinstance(carrier, Create)
    assert carrier.name == f"{PREFIX}3"
    assert carrier.carrier_for == f"{PREFIX}1"
    assert carrier.clusters == tuple(first)


def test_a_cycle_with_more_than_100_blocking_clusters_needs_several_carriers() -> None:
    # Two groups of 150 swap: each page of the first group is blocked by up to 100 clusters.
    first, second = names("a", 150), names("b", 150)
    current = pages(first[:100], first[100:], second[:100], second[100:])
    desired = pages(second[:100], second[100:], first[:100], first[100:])
    steps = check(current, desired)
    created = [s for s in steps if isinstance(s, Create)]
    assert created, "a swap of pages cannot be ordered without a carrier"
    assert all(len(s.clusters) <= MAX_DECISIONS_PER_OBJECT for s in created)
    assert {s.name for s in created}.isdisjoint(p.name for p in current)


def test_carriers_are_numbered_beyond_stale_pages() -> None:
    current = pages(["a"], ["b"], [], ["x"], [], [], [], [])  # a stale p-decision-8
    desired = pages(["b"], ["a"])
    steps = check(current, desired)
    carriers = [s.name for s in steps if isinstance(s, Create)]
    assert carriers == [f"{PREFIX}9"]


def test_a_cluster_also_held_by_a_stale_page_does_not_need_a_carrier() -> None:
    current = pages(["a"], ["b"], ["a", "b"])
    steps = check(current, pages(["b"], ["a"]))
    assert kinds(steps) == ["Update", "Update", "Delete"]


def test_clusters_no_longer_selected_may_go_at_any_time() -> None:
    steps = check(pages(["a", "b"], ["c"]), pages(["a"], []))
    assert kinds(steps) == ["Update", "Update"]


def test_a_desired_page_over_100_decisions_is_refused() -> None:
    with pytest.raises(ValueError, match="more than 100"):
        plan_steps([], pages(names("c", 101)), carrier_prefix=PREFIX)


def test_a_desired_name_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        plan_steps([], [Page("x", ()), Page("x", ())], carrier_prefix=PREFIX)


@pytest.mark.parametrize(
    ("taken", "expected"),
    [
        pytest.param([], 1, id="nothing-taken"),
        pytest.param(["p-decision-1", "p-decision-2"], 3, id="after-the-last"),
        pytest.param(["p-decision-7", "p-decision-2"], 8, id="beyond-a-gap"),
        pytest.param(["p-decision-x", "q-decision-9", "p-decision-"], 1, id="foreign-names"),
    ],
)
def test_carrier_numbers_start_after_every_taken_number(taken: list[str], expected: int) -> None:
    assert carrier_numbers(PREFIX, taken) == expected


# --- exhaustive and random --------------------------------------------------------------------


def layouts(clusters: Sequence[str], page_count: int) -> Iterator[list[Page]]:
    """Every way to put each cluster in one of `page_count` pages or in none."""
    for where in itertools.product(range(page_count + 1), repeat=len(clusters)):
        yield pages(
            *(
                [c for c, w in zip(clusters, where, strict=True) if w == k]
                for k in range(1, page_count + 1)
            )
        )


def test_every_small_layout_change_keeps_every_kept_cluster() -> None:
    clusters = ["a", "b", "c", "d"]
    befores = list(layouts(clusters, 3))
    afters = [after for count in (1, 2, 3) for after in layouts(clusters, count)]
    for before in befores:
        for after in afters:
            check(before, after)


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[Page], list[Page]]:
    """Random before/after selections over up to 400 clusters in random group layouts (pages of
    random sizes over shuffled clusters), with the odd leftover duplicate in the current pages."""
    universe = names("c", draw(st.integers(1, 400)))
    rng = draw(st.randoms(use_true_random=False))
    max_size = draw(st.sampled_from([1, 3, 50, MAX_DECISIONS_PER_OBJECT]))

    def layout(keep: float, extra: bool) -> list[Page]:
        chosen = [c for c in universe if rng.random() < keep]
        rng.shuffle(chosen)
        out: list[list[str]] = []
        while chosen:
            size = rng.randint(1, max_size)
            out.append(sorted(chosen[:size]))
            chosen = chosen[size:]
        if extra and out and rng.random() < 0.3:
            out.append(out[0][: rng.randint(0, len(out[0]))])
        return pages(*out) if out else pages([])

    before = layout(draw(st.floats(0, 1)), extra=True)
    return before, layout(draw(st.floats(0, 1)), extra=False)


@settings(max_examples=200, deadline=None)
@given(worlds())
def test_random_moves_keep_every_kept_cluster_and_stay_within_100(
    world: tuple[list[Page], list[Page]],
) -> None:
    current, desired = world
    steps = check(current, desired)
    # Each desired page is written at most once, and nothing unchanged is touched.
    written = [s.name for s in steps if isinstance(s, Create | Update) and not _carrier(s)]
    assert len(written) == len(set(written))
    unchanged = {p.name for p in current} & {p.name for p in desired if p in current}
    assert unchanged.isdisjoint(written)
