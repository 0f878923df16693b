"""The pod scheduler's configuration: every bad field is refused with its name, the profile is
merged with the defaults as kube-scheduler merges one, each plugin is built once with its args."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import pytest

from placement.pods.config.scheduler_config import (
    DEFAULT_SCHEDULER_NAME,
    ConfigError,
    SchedulerConfig,
    build_profile,
    enabled_plugins,
    load_config,
)
from placement.pods.framework.interface import (
    EventHandler,
    Filter,
    Permit,
    PodInfo,
    PostBind,
    PostFilter,
    PreFilter,
    QueueSort,
    Reserve,
    Score,
)


class Sorter(QueueSort):
    name = "Sorter"

    def sort_key(self, pod: PodInfo, queued_at: datetime) -> Any:
        return (queued_at, pod.key)


class Fit(Filter, Score):
    """A Filter and Score plugin with one arg, like NodeResourcesFit."""

    name = "Fit"
    built = 0

    def __init__(self, args: Mapping[str, Any]) -> None:
        for key in args:
            if key != "strategy":
                raise ValueError(f"{key}: unknown field")
        self.strategy = args.get("strategy", "LeastAllocated")
        Fit.built += 1

    def filter(self, *args: Any) -> Any: ...

    def score(self, *args: Any) -> Any: ...


class Affinity(PreFilter, Filter, Score):
    name = "Affinity"

    def pre_filter(self, *args: Any) -> Any: ...

    def filter(self, *args: Any) -> Any: ...

    def score(self, *args: Any) -> Any: ...


class Gang(PreFilter, PostFilter, Reserve, Permit, PostBind, EventHandler):
    """Every point a coscheduling plugin has."""

    name = "Gang"

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.args = dict(args)

    def pre_filter(self, *args: Any) -> Any: ...

    def post_filter(self, *args: Any) -> Any: ...

    def reserve(self, *args: Any) -> Any: ...

    def unreserve(self, *args: Any) -> Any: ...

    def permit(self, *args: Any) -> Any: ...

    def post_bind(self, *args: Any) -> Any: ...

    def on_event(self, *args: Any) -> Any: ...


class Unschedulable(Filter):
    name = "Unschedulable"

    def filter(self, *args: Any) -> Any: ...


REGISTRY = {
    "Sorter": lambda args: Sorter(),
    "Unschedulable": lambda args: Unschedulable(),
    "Affinity": lambda args: Affinity(),
    "Fit": Fit,
    "Gang": Gang,
    "OtherSorter": lambda args: Sorter(),
}
DEFAULTS = ("Sorter", "Unschedulable", "Affinity", "Fit")
WEIGHTS = {"Affinity": 2, "Fit": 1}


def profile(doc: Mapping[str, Any] | None) -> Any:
    return build_profile(
        load_config(doc, REGISTRY), REGISTRY, defaults=DEFAULTS, default_weights=WEIGHTS
    )


def test_an_empty_configuration_is_every_default() -> None:
    config = load_config(None)
    assert config == load_config({})
    assert config.scheduler_name == DEFAULT_SCHEDULER_NAME
    assert config.engine_options() == {
        "backoff_initial": timedelta(seconds=1),
        "backoff_max": timedelta(seconds=10),
        "unschedulable_flush": timedelta(minutes=5),
    }
    assert config.leader_election.lease_name == DEFAULT_SCHEDULER_NAME
    assert config.leader_election.lease_namespace == "kube-system"


def test_default_profile_places_each_plugin_at_its_points_with_default_weights() -> None:
    built = profile(None)
    assert built.scheduler_name == DEFAULT_SCHEDULER_NAME
    assert isinstance(built.queue_sort, Sorter)
    assert [p.name for p in built.pre_filters] == ["Affinity"]
    assert [p.name for p in built.filters] == ["Unschedulable", "Affinity", "Fit"]
    assert [(p.name, w) for p, w in built.scores] == [("Affinity", 2), ("Fit", 1)]
    assert built.permits == () and built.handlers == ()


def test_enabled_plugin_is_appended_and_built_once_for_all_its_points() -> None:
    built = profile(
        {
            "plugins": {"enabled": [{"name": "Gang"}]},
            "pluginArgs": {"Gang": {"permitWaitingTimeSeconds": 60}},
        }
    )
    gangs = {
        id(p)
        for point in (built.pre_filters, built.post_filters, built.reserves)
        for p in point
        if p.name == "Gang"
    }
    gangs |= {id(p) for p in (*built.permits, *built.post_binds, *built.handlers)}
    assert len(gangs) == 1
    assert built.permits[0].args == {"permitWaitingTimeSeconds": 60}
    assert [p.name for p in built.pre_filters] == ["Affinity", "Gang"]


def test_plugin_args_reach_the_factory_and_plugins_are_built_once() -> None:
    before = Fit.built
    built = profile({"pluginArgs": {"Fit": {"strategy": "MostAllocated"}}})
    assert Fit.built == before + 1
    (fit,) = [p for p in built.filters if p.name == "Fit"]
    assert fit.strategy == "MostAllocated"
    assert any(p is fit for p, _ in built.scores)


def test_disabled_defaults_are_dropped_and_star_drops_them_all() -> None:
    config = load_config({"plugins": {"disabled": [{"name": "Affinity"}]}}, REGISTRY)
    assert enabled_plugins(config, DEFAULTS) == ("Sorter", "Unschedulable", "Fit")
    config = load_config(
        {"plugins": {"disabled": [{"name": "*"}], "enabled": ["OtherSorter", "Fit"]}}, REGISTRY
    )
    assert enabled_plugins(config, DEFAULTS) == ("OtherSorter", "Fit")


def test_an_enabled_default_keeps_its_place_and_takes_its_weight() -> None:
    built = profile({"plugins": {"enabled": [{"name": "Affinity", "weight": 7}]}})
    assert [(p.name, w) for p, w in built.scores] == [("Affinity", 7), ("Fit", 1)]
    assert [p.name for p in built.filters] == ["Unschedulable", "Affinity", "Fit"]


def test_score_weights_override_the_defaults() -> None:
    built = profile({"plugins": {"scoreWeights": {"Fit": 5}}})
    assert [(p.name, w) for p, w in built.scores] == [("Affinity", 2), ("Fit", 5)]


def test_a_score_plugin_without_a_default_weight_gets_one() -> None:
    built = build_profile(load_config(None), REGISTRY, defaults=DEFAULTS)
    assert [w for _, w in built.scores] == [1, 1]


def test_backoff_seconds_become_the_engine_timings() -> None:
    config = load_config(
        {"backoff": {"initialSeconds": 0.5, "maxSeconds": 30, "unschedulableFlushSeconds": 60}}
    )
    assert config.engine_options() == {
        "backoff_initial": timedelta(seconds=0.5),
        "backoff_max": timedelta(seconds=30),
        "unschedulable_flush": timedelta(seconds=60),
    }


def test_scheduler_name_and_lease_are_read() -> None:
    config = load_config(
        {
            "apiVersion": "placement.ocm.io/v1alpha1",
            "kind": "PodSchedulerConfiguration",
            "schedulerName": "gang-scheduler",
            "leaderElection": {"leaseNamespace": "scheduling"},
        }
    )
    assert config == SchedulerConfig(
        scheduler_name="gang-scheduler",
        leader_election=config.leader_election,
    )
    assert config.leader_election.lease_name == "gang-scheduler"
    assert config.leader_election.lease_namespace == "scheduling"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param({"kind": "SchedulerConfiguration"}, "kind: must be", id="kind"),
        pytest.param({"apiVersion": "v1"}, "apiVersion: must be", id="api-version"),
        pytest.param({"schedulerNmae": "x"}, "schedulerNmae: unknown field", id="unknown-top"),
        pytest.param({"schedulerName": ""}, "schedulerName: must be a non-empty", id="empty-name"),
        pytest.param(
            {"plugins": {"enable": []}}, "plugins.enable: unknown field", id="unknown-plugins"
        ),
        pytest.param(
            {"plugins": {"enabled": [{"name": "Gnag"}]}},
            "plugins.enabled[0].name: unknown plugin 'Gnag' (known plugins: Affinity,",
            id="unknown-enabled",
        ),
        pytest.param(
            {"plugins": {"disabled": [{"name": "Nope"}]}},
            "plugins.disabled[0].name: unknown plugin 'Nope'",
            id="unknown-disabled",
        ),
        pytest.param(
            {"plugins": {"enabled": [{"name": "Gang"}, {"name": "Gang"}]}},
            "plugins.enabled[1].name: plugin 'Gang' is listed twice",
            id="twice",
        ),
        pytest.param(
            {"plugins": {"enabled": [{"weight": 3}]}},
            "plugins.enabled[0].name: is required",
            id="no-name",
        ),
        pytest.param(
            {"plugins": {"disabled": [{"name": "Fit", "weight": 3}]}},
            "plugins.disabled[0].weight: unknown field",
            id="weight-in-disabled",
        ),
        pytest.param(
            {"plugins": {"enabled": [{"name": "*"}]}}, "plugins.enabled: '*'", id="star-enabled"
        ),
        pytest.param(
            {"plugins": {"scoreWeights": {"Fit": 0}}},
            "plugins.scoreWeights.Fit: must be between 1 and 100 (got 0)",
            id="weight-zero",
        ),
        pytest.param(
            {"plugins": {"scoreWeights": {"Fit": 101}}},
            "plugins.scoreWeights.Fit: must be between 1 and 100 (got 101)",
            id="weight-too-big",
        ),
        pytest.param(
            {"plugins": {"scoreWeights": {"Fit": "5"}}},
            "plugins.scoreWeights.Fit: must be an integer",
            id="weight-string",
        ),
        pytest.param(
            {"plugins": {"enabled": [{"name": "Fit", "weight": 2}], "scoreWeights": {"Fit": 3}}},
            "plugins.scoreWeights.Fit: 3 contradicts the weight 2",
            id="weight-conflict",
        ),
        pytest.param(
            {"plugins": {"scoreWeights": {"Fitt": 3}}},
            "plugins.scoreWeights.Fitt: unknown plugin 'Fitt'",
            id="weight-unknown-plugin",
        ),
        pytest.param(
            {"pluginArgs": {"Fitt": {}}}, "pluginArgs.Fitt: unknown plugin", id="args-unknown"
        ),
        pytest.param(
            {"pluginArgs": {"Fit": [1]}}, "pluginArgs.Fit: must be a mapping", id="args-list"
        ),
        pytest.param(
            {"backoff": {"initialSeconds": 0}},
            "backoff.initialSeconds: must be a positive number of seconds (got 0)",
            id="backoff-zero",
        ),
        pytest.param(
            {"backoff": {"maxSeconds": "10s"}},
            "backoff.maxSeconds: must be a positive number of seconds (got '10s')",
            id="backoff-string",
        ),
        pytest.param(
            {"backoff": {"initialSeconds": 20}},
            "backoff.maxSeconds: must not be less than initialSeconds (10 < 20)",
            id="backoff-max-below-initial",
        ),
        pytest.param(
            {"backoff": {"initial": 2}}, "backoff.initial: unknown field", id="backoff-field"
        ),
        pytest.param(
            {"leaderElection": {"leaseName": 3}},
            "leaderElection.leaseName: must be a non-empty string",
            id="lease-name",
        ),
        pytest.param([1, 2], "configuration: must be a mapping", id="not-a-mapping"),
    ],
)
def test_bad_configuration_is_refused_naming_the_field(doc: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(doc, REGISTRY)
    assert str(info.value).startswith(message), str(info.value)


def test_names_are_checked_at_build_when_not_at_load() -> None:
    config = load_config({"plugins": {"enabled": [{"name": "Gnag"}]}})
    with pytest.raises(ConfigError, match=r"^plugins.enabled: unknown plugin 'Gnag'"):
        build_profile(config, REGISTRY, defaults=DEFAULTS)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(
            {"pluginArgs": {"Fit": {"strategy": "x", "scoringStrategy": {}}}},
            "pluginArgs.Fit.scoringStrategy: unknown field",
            id="factory-refuses-args",
        ),
        pytest.param(
            {"pluginArgs": {"Gang": {"permitWaitingTimeSeconds": 60}}},
            "pluginArgs.Gang: plugin 'Gang' is not enabled",
            id="args-of-disabled-plugin",
        ),
        pytest.param(
            {"plugins": {"scoreWeights": {"Gang": 3}, "enabled": ["Gang"]}},
            "plugins.scoreWeights.Gang: 'Gang' is not a Score plugin",
            id="weight-of-non-score",
        ),
        pytest.param(
            {"plugins": {"scoreWeights": {"Fit": 3}, "disabled": ["Fit"]}},
            "plugins.scoreWeights.Fit: plugin 'Fit' is not enabled",
            id="weight-of-disabled",
        ),
        pytest.param(
            {"plugins": {"disabled": ["Sorter"]}},
            "plugins: exactly one QueueSort plugin must be enabled (got none)",
            id="no-queue-sort",
        ),
        pytest.param(
            {"plugins": {"enabled": ["OtherSorter"]}},
            "plugins: exactly one QueueSort plugin must be enabled (got Sorter, OtherSorter)",
            id="two-queue-sorts",
        ),
    ],
)
def test_profile_problems_are_refused_naming_the_field(doc: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        profile(doc)
    assert str(info.value) == message or str(info.value).startswith(message), str(info.value)
