"""`Scheduler`: the order of checks, weights (Additive/Exact), totals, ties and statuses."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import partial

import pytest

from apis.meta import KubeObject
from apis.placements import Placement, PrioritizerConfig, ScoreCoordinate
from placement.framework import (
    BoolMask,
    Code,
    Cycle,
    Filter,
    FilterResult,
    Prioritizer,
    RowIndex,
    ScoreResult,
    Selector,
)
from placement.registry import Registry, RegistryError
from placement.scheduler import Scheduler, ScheduleResult, weighted_coordinates
from placement.snapshot.fleet_snapshot import FleetSnapshot
from placement.testing import (
    NOW,
    addon,
    builtin,
    cluster,
    decision,
    global_set,
    placement,
    predicate,
    score,
    snapshot,
    taint,
    toleration,
)
from plugins import DEFAULT_PROFILE, default_registry, default_scheduler


def schedule(p: Placement, objects: Sequence[KubeObject]) -> ScheduleResult:
    return default_scheduler().schedule(p, snapshot([*objects, *global_set(p.namespace)]), NOW)


def weights(configurations: Sequence[PrioritizerConfig], mode: str = "Additive") -> dict[str, int]:
    p = placement(
        "apps", "p", prioritizerPolicy={"mode": mode, "configurations": list(configurations)}
    )
    coordinates, status = weighted_coordinates(p, DEFAULT_PROFILE, default_registry())
    assert status.code == Code.SUCCESS, status
    return {
        c.plugin if c.coordinate.type == "BuiltIn" else f"AddOn/{c.coordinate.add_on}": c.weight
        for c in coordinates
    }


def test_additive_mode_starts_from_default_weights() -> None:
    assert weights([]) == {"Balance": 1, "Steady": 1, "TaintToleration": 1}


def test_empty_mode_means_additive() -> None:
    assert weights([builtin("ResourceAllocatableCPU", 2)], mode="") == {
        "Balance": 1,
        "Steady": 1,
        "TaintToleration": 1,
        "ResourceAllocatableCPU": 2,
    }


def test_additive_configuration_overrides_a_default_and_zero_disables_it() -> None:
    assert weights([builtin("Balance", 0), builtin("Steady", -3)]) == {
        "Steady": -3,
        "TaintToleration": 1,
    }


def test_exact_mode_runs_only_the_configured_prioritizers() -> None:
    assert weights([builtin("ResourceAllocatableMemory", 4)], mode="Exact") == {
        "ResourceAllocatableMemory": 4
    }


def test_duplicate_builtin_configuration_last_wins() -> None:
    assert weights([builtin("Steady", 3), builtin("Steady", 5)], mode="Exact") == {"Steady": 5}


def test_duplicate_addon_configurations_are_scored_separately() -> None:
    p = placement(
        "apps",
        "p",
        prioritizerPolicy={
            "mode": "Exact",
            "configurations": [addon("r", "s", 1), addon("r", "s", 2)],
        },
    )
    coordinates, _ = weighted_coordinates(p, DEFAULT_PROFILE, default_registry())
    assert [(c.plugin, c.weight) for c in coordinates] == [("AddOn", 1), ("AddOn", 2)]


@pytest.mark.parametrize(
    ("mode", "configurations", "message"),
    [
        pytest.param(
            "Additive",
            [builtin("ResourceRatio")],
            "incorrect builtin prioritizer: ResourceRatio",
            id="unknown-builtin",
        ),
        pytest.param(
            "Exact",
            [builtin("AddOn")],
            "incorrect builtin prioritizer: AddOn",
            id="AddOn-as-builtin",
        ),
        pytest.param("Sum", [], "incorrect prioritizer policy mode: Sum", id="bad-mode"),
    ],
)
def test_bad_prioritizer_policy_is_misconfigured_with_ocms_message(
    mode: str, configurations: list[PrioritizerConfig], message: str
) -> None:
    p = placement("apps", "p", prioritizerPolicy={"mode": mode, "configurations": configurations})
    _, status = weighted_coordinates(p, DEFAULT_PROFILE, default_registry())
    assert (status.code, status.plugin, status.message) == (Code.MISCONFIGURED, "", message)


def test_unknown_builtin_with_weight_zero_is_not_validated() -> None:
    assert weights([builtin("Nonsense", 0)], mode="Exact") == {}


def test_addon_coordinate_without_addon_is_misconfigured() -> None:
    config = PrioritizerConfig.model_validate({"scoreCoordinate": {"type": "AddOn"}, "weight": 1})
    p = placement("apps", "p", prioritizerPolicy={"mode": "Exact", "configurations": [config]})
    _, status = weighted_coordinates(p, DEFAULT_PROFILE, default_registry())
    assert status.message == "addOn should not be empty"


def test_total_is_the_weighted_sum_of_prioritizer_scores() -> None:
    objects: list[KubeObject] = [
        cluster("a", cpu="2"),
        cluster("b", cpu="4"),
        cluster("c"),
        score("a", "usage", {"s": 50}),
        score("c", "usage", {"s": -20}),
        decision("apps", "p", ["c"]),
    ]
    p = placement(
        "apps",
        "p",
        prioritizerPolicy={
            "configurations": [builtin("ResourceAllocatableCPU", 2), addon("usage", "s", -3)]
        },
    )
    result = schedule(p, objects)
    assert result.total is not None
    # Balance: c has this placement's own decision only -> 100 for all; Steady c=100;
    # CPU: a=-100, b=100, c none; AddOn: a=50, c=-20.
    assert result.total.tolist() == [
        100 + 0 + 2 * -100 - 3 * 50,
        100 + 0 + 2 * 100,
        100 + 100 - 3 * -20,
    ]
    names = [r.name for r in result.prioritizers]
    assert names == [
        "Balance",
        "Steady",
        "TaintToleration",
        "ResourceAllocatableCPU",
        "AddOn/usage/s",
    ]


def test_negative_weight_reverses_the_preference() -> None:
    objects = [cluster("small", cpu="1"), cluster("big", cpu="64")]
    p = placement(
        "apps",
        "p",
        numberOfClusters=1,
        prioritizerPolicy={
            "mode": "Exact",
            "configurations": [builtin("ResourceAllocatableCPU", -1)],
        },
    )
    assert schedule(p, objects).selected.tolist() == [1]  # rows: big, small


def test_equal_totals_are_selected_by_name() -> None:
    objects = [cluster(n) for n in ("zeta", "0alpha", "alpha", "beta")]
    result = schedule(placement("apps", "p", numberOfClusters=2), objects)
    assert snapshot(objects).rows_to_names(result.selected) == ["0alpha", "alpha"]


def test_feasible_excludes_filtered_clusters_and_counts_unscheduled() -> None:
    objects = [
        cluster("a", labels={"env": "prod"}),
        cluster("b", labels={"env": "prod"}, taints=[taint("k")]),
        cluster("c", labels={"env": "dev"}),
    ]
    result = schedule(
        placement("apps", "p", numberOfClusters=3, predicates=[predicate({"env": "prod"})]),
        objects,
    )
    assert result.feasible.tolist() == [0]
    assert result.selected.tolist() == [0]
    assert result.unscheduled == 2
    assert [f.name for f in result.filters] == ["Predicate", "Predicate,TaintToleration"]


def test_unset_number_of_clusters_selects_all_feasible_with_nothing_unscheduled() -> None:
    result = schedule(placement("apps", "p"), [cluster("a"), cluster("b")])
    assert len(result.selected) == 2
    assert result.unscheduled == 0


def test_misconfigured_filter_stops_the_cycle_before_selection() -> None:
    result = schedule(placement("apps", "p", predicates=[predicate(cel=["1 +"])]), [cluster("a")])
    assert result.status.code == Code.MISCONFIGURED
    assert result.selection is None
    assert result.selected.tolist() == []


def test_expired_addon_score_makes_the_cycle_a_warning_that_still_selects() -> None:
    objects = [
        cluster("a"),
        score("a", "usage", {"s": 5}, valid_until=NOW - timedelta(minutes=1)),
    ]
    p = placement("apps", "p", prioritizerPolicy={"configurations": [addon("usage", "s")]})
    result = schedule(p, objects)
    assert result.status.code == Code.WARNING
    assert result.status.message == "AddOnPlacementScores a/usage expired"
    assert result.selected.tolist() == [0]


def test_requeue_comes_from_the_taint_filter() -> None:
    added = NOW - timedelta(minutes=10)
    objects = [cluster("a", taints=[taint("k", added=added)]), decision("apps", "p", ["a"])]
    p = placement("apps", "p", tolerations=[toleration("k", "Exists", seconds=3600)])
    assert schedule(p, objects).requeue_at == added + timedelta(hours=1)


class _Broken(Filter):
    name = "Broken"

    def filter(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, candidates: BoolMask
    ) -> FilterResult:
        raise RuntimeError("boom")


def test_a_plugin_that_raises_becomes_an_error_status() -> None:
    registry = default_registry()
    registry.add_filter("Broken", _Broken)
    profile = DEFAULT_PROFILE.__class__(filters=("Broken",), default_weights={}, selector="TopN")
    result = Scheduler(registry, profile).schedule(
        placement("apps", "p"), snapshot([cluster("a"), *global_set("apps")]), NOW
    )
    assert (result.status.code, result.status.plugin) == (Code.ERROR, "Broken")
    assert result.status.message == "RuntimeError: boom"


def test_registry_rejects_duplicate_names() -> None:
    registry = Registry()
    registry.add_selector("TopN", default_registry().selectors["TopN"])
    with pytest.raises(ValueError, match="already registered"):
        registry.add_selector("TopN", default_registry().selectors["TopN"])


class _Unfinished(Prioritizer):
    """Declares the Prioritizer point and implements nothing (mypy would refuse to build it)."""

    name = "Unfinished"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate


class _Structural:
    """A prioritizer that does not subclass the Protocol: the registry checks the method."""

    name = "Structural"

    def __init__(self, coordinate: ScoreCoordinate | None = None) -> None:
        self.coordinate = coordinate

    def score(
        self, cycle: Cycle, placement: Placement, fleet: FleetSnapshot, rows: RowIndex
    ) -> ScoreResult:
        raise NotImplementedError


@pytest.mark.parametrize(
    ("point", "factory"),
    [
        pytest.param("prioritizer", _Broken, id="a-filter-as-a-prioritizer"),
        pytest.param("selector", _Broken, id="a-filter-as-a-selector"),
        pytest.param("filter", _Structural, id="a-prioritizer-as-a-filter"),
        pytest.param("prioritizer", _Unfinished, id="declared-but-not-implemented"),
        pytest.param("prioritizer", partial(partial(_Broken)), id="a-partial-of-a-filter"),
    ],
)
def test_registry_refuses_a_plugin_for_a_point_it_does_not_implement(
    point: str, factory: object
) -> None:
    registry = Registry()
    with pytest.raises(RegistryError, match="does not implement"):
        getattr(registry, f"add_{point}")("Wrong", factory)
    assert not registry.filters and not registry.prioritizers and not registry.selectors


def test_registry_refuses_what_a_factory_function_builds_when_it_builds_it() -> None:
    registry = default_registry()
    registry.add_prioritizer("Wrong", lambda coordinate: _Broken())  # type: ignore[arg-type,return-value]
    registry.add_prioritizer("Fine", lambda coordinate: _Structural(coordinate))
    assert registry.build_prioritizer("Fine", builtin("Fine", 1).score_coordinate).name
    profile = DEFAULT_PROFILE.__class__(filters=(), default_weights={"Wrong": 1}, selector="TopN")
    scheduler = Scheduler(registry, profile)
    with pytest.raises(RegistryError, match="'Wrong' \\(_Broken\\) does not implement"):
        scheduler.schedule(placement("apps", "p"), snapshot(global_set("apps")), NOW)


def test_every_built_in_plugin_declares_the_points_it_is_registered_for() -> None:
    registry = default_registry()
    tables: list[tuple[type[object], dict[str, object]]] = [
        (Filter, dict(registry.filters)),
        (Prioritizer, dict(registry.prioritizers)),
        (Selector, dict(registry.selectors)),
    ]
    for protocol, table in tables:
        for name, factory in table.items():
            while isinstance(factory, partial):
                factory = factory.func
            assert isinstance(factory, type), name
            assert protocol in factory.__mro__, f"{name}: {factory.__qualname__}"


def test_scheduler_rejects_a_profile_naming_unknown_plugins() -> None:
    with pytest.raises(ValueError, match="Nope"):
        Scheduler(Registry(), DEFAULT_PROFILE.__class__(("Nope",), {}, "TopN"))


def test_every_plugin_call_is_timed_once_by_type_and_name() -> None:
    p = placement(
        "apps",
        "p",
        prioritizerPolicy={"configurations": [builtin("ResourceAllocatableCPU", 2)]},
    )
    result = schedule(p, [cluster("a", cpu="2"), cluster("b", cpu="4")])
    names = [(kind, name) for kind, name, _ in result.timings]
    assert names == [
        ("filter", "Predicate"),
        ("filter", "TaintToleration"),
        ("prioritizer", "Balance"),
        ("prioritizer", "Steady"),
        ("prioritizer", "TaintToleration"),
        ("prioritizer", "ResourceAllocatableCPU"),
        ("selector", "TopN"),
    ]
    assert all(seconds >= 0 for _, _, seconds in result.timings)


def test_a_cycle_stopped_by_a_filter_times_only_the_plugins_that_ran() -> None:
    p = placement("apps", "p", predicates=[predicate(cel=["1 +"])])
    result = schedule(p, [cluster("a")])
    assert result.status.code == Code.MISCONFIGURED
    assert [(kind, name) for kind, name, _ in result.timings] == [("filter", "Predicate")]
