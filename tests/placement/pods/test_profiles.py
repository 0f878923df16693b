"""KubeSchedulerConfiguration profiles over the built-in plugins: a scheduler-plugins user's file
gives the profile they expect, `multiPoint` and per-point sets merge as kube-scheduler merges
them, several profiles build apart, and every problem names the field as written."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from apis.pluginargs import CoschedulingArgs, NodeResourcesFitArgs
from placement.pods.config.profiles import implements
from placement.pods.config.scheduler_config import (
    ConfigError,
    SchedulerConfig,
    build_profile,
    build_profiles,
    load_config,
    renamed,
)
from placement.pods.framework.interface import Filter, PodInfo, Profile
from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

# As scheduler-plugins documents coscheduling and capacity scheduling for a second scheduler.
SCHEDULER_PLUGINS_FILE = (
    HEAD
    + """
leaderElection:
  leaderElect: false
profiles:
- schedulerName: scheduler-plugins-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
      - name: CapacityScheduling
      disabled:
      - name: PrioritySort
    postFilter:
      enabled:
      - name: CapacityScheduling
      disabled:
      - name: "*"
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
      podGroupBackoffSeconds: 5
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""
)


def load(text: str) -> SchedulerConfig:
    return load_config(yaml.safe_load(text), POD_PLUGINS)


def profiles(text: str) -> tuple[Profile, ...]:
    return build_profiles(
        load(text), POD_PLUGINS, defaults=DEFAULT_PLUGINS, default_weights=DEFAULT_SCORE_WEIGHTS
    )


def names(plugins: Any) -> list[str]:
    return [p.name for p in plugins]


def test_a_scheduler_plugins_file_gives_the_profile_its_user_expects() -> None:
    config = load(SCHEDULER_PLUGINS_FILE)
    assert config.scheduler_names == ("scheduler-plugins-scheduler",)
    assert config.leader_election.leader_elect is False
    assert config.leader_election.lease_name == "scheduler-plugins-scheduler"
    (profile,) = profiles(SCHEDULER_PLUGINS_FILE)
    assert profile.scheduler_name == "scheduler-plugins-scheduler"
    # PrioritySort disabled: Coscheduling's order is the queue's.
    assert profile.queue_sort.name == "Coscheduling"
    assert names(profile.pre_filters) == [
        "NodeName",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
        "Coscheduling",
        "CapacityScheduling",
    ]
    assert names(profile.filters) == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ]
    # CapacityScheduling's PostFilter is DefaultPreemption with its quota hooks; `*` removed
    # Coscheduling's gang preemption from postFilter.
    assert names(profile.post_filters) == ["DefaultPreemption"]
    assert names(profile.reserves) == [
        "VolumeBinding",
        "DynamicResources",
        "Coscheduling",
        "CapacityScheduling",
    ]
    assert names(profile.permits) == ["Coscheduling"]
    assert names(profile.pre_binds) == ["VolumeBinding", "DynamicResources"]
    # An explicit score entry comes first (it re-configures a multiPoint plugin) and its
    # weight wins over the default.
    assert [(p.name, w) for p, w in profile.scores] == [
        ("NodeResourcesFit", 5),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]
    assert names(profile.handlers) == [
        *("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"),
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "ImageLocality",
        "NodeDeclaredFeatures",
        "Coscheduling",
        "CapacityScheduling",
    ]


def test_plugin_config_args_reach_the_plugins_as_their_models() -> None:
    config = load(SCHEDULER_PLUGINS_FILE)
    (spec,) = config.profiles
    assert isinstance(spec.args["Coscheduling"], CoschedulingArgs)
    assert isinstance(spec.args["NodeResourcesFit"], NodeResourcesFitArgs)
    (profile,) = profiles(SCHEDULER_PLUGINS_FILE)
    (gang,) = [p for p in profile.permits if p.name == "Coscheduling"]
    assert gang.permit_waiting == timedelta(seconds=10)  # type: ignore[attr-defined]
    assert gang.backoff == timedelta(seconds=5)  # type: ignore[attr-defined]
    (fit,) = [p for p in profile.filters if p.name == "NodeResourcesFit"]
    assert fit.args.strategy == "MostAllocated"  # type: ignore[attr-defined]


def test_a_file_without_profiles_is_every_default_under_our_name() -> None:
    (profile,) = profiles(HEAD)
    assert profile.scheduler_name == "ocm-pod-scheduler"
    assert profile.queue_sort.name == "PrioritySort"
    ours = build_profile(
        load_config(None),
        POD_PLUGINS,
        defaults=DEFAULT_PLUGINS,
        default_weights=DEFAULT_SCORE_WEIGHTS,
    )
    for point in ("pre_filters", "filters", "post_filters", "reserves", "permits", "handlers"):
        assert names(getattr(profile, point)) == names(getattr(ours, point)), point
    assert [(p.name, w) for p, w in profile.scores] == [(p.name, w) for p, w in ours.scores]


def test_disabling_all_at_a_point_keeps_only_what_is_enabled_there() -> None:
    (profile,) = profiles(
        HEAD
        + """
profiles:
- plugins:
    filter:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesFit}, {name: TaintToleration}]
"""
    )
    assert names(profile.filters) == ["NodeResourcesFit", "TaintToleration"]
    # Only filter is touched: the other points keep every default.
    assert "NodeName" in names(profile.pre_filters)
    assert "TaintToleration" in [p.name for p, _ in profile.scores]


def test_multipoint_star_drops_the_defaults_and_keeps_what_is_listed() -> None:
    (profile,) = profiles(
        HEAD
        + """
profiles:
- plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: NodeResourcesFit, weight: 4}]
"""
    )
    assert profile.queue_sort.name == "PrioritySort"
    assert names(profile.filters) == ["NodeResourcesFit"]
    assert names(profile.pre_filters) == ["NodeResourcesFit"]
    assert [(p.name, w) for p, w in profile.scores] == [("NodeResourcesFit", 4)]
    assert profile.post_filters == () and profile.permits == ()


def test_a_default_re_enabled_in_multipoint_keeps_its_place_and_takes_the_new_weight() -> None:
    (profile,) = profiles(
        HEAD
        + """
profiles:
- plugins:
    multiPoint:
      enabled: [{name: NodeAffinity, weight: 9}]
"""
    )
    assert [(p.name, w) for p, w in profile.scores] == [
        ("TaintToleration", 3),
        ("NodeAffinity", 9),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]


def test_a_plugin_disabled_at_one_point_stays_at_its_others() -> None:
    (profile,) = profiles(
        HEAD
        + """
profiles:
- plugins:
    score:
      disabled: [{name: NodeResourcesFit}]
"""
    )
    assert "NodeResourcesFit" not in [p.name for p, _ in profile.scores]
    assert "NodeResourcesFit" in names(profile.filters)


def test_an_explicit_entry_after_the_multipoint_ones_runs_last() -> None:
    (profile,) = profiles(
        HEAD
        + """
profiles:
- plugins:
    multiPoint:
      disabled: [{name: NodeUnschedulable}]
    filter:
      enabled: [{name: NodeUnschedulable}]
"""
    )
    assert names(profile.filters)[-1] == "NodeUnschedulable"


TWO_PROFILES = (
    HEAD
    + """
profiles:
- schedulerName: gangs
  pluginConfig:
  - name: Coscheduling
    args: {permitWaitingTimeSeconds: 30}
- schedulerName: packer
  plugins:
    multiPoint:
      disabled: [{name: CapacityScheduling}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {type: MostAllocated}
"""
)


def test_two_profiles_build_apart_each_with_its_own_plugins() -> None:
    config = load(TWO_PROFILES)
    assert config.scheduler_names == ("gangs", "packer")
    assert config.scheduler_name == "gangs"
    gangs, packer = profiles(TWO_PROFILES)
    assert (gangs.scheduler_name, packer.scheduler_name) == ("gangs", "packer")
    assert "CapacityScheduling" in names(gangs.reserves)
    assert "CapacityScheduling" not in names(packer.reserves)
    gang_plugins = [p for prof in (gangs, packer) for p in prof.permits]
    assert [p.name for p in gang_plugins] == ["Coscheduling", "Coscheduling"]
    assert gang_plugins[0] is not gang_plugins[1]
    assert gang_plugins[0].permit_waiting == timedelta(seconds=30)  # type: ignore[attr-defined]
    assert gang_plugins[1].permit_waiting == timedelta(seconds=60)  # type: ignore[attr-defined]
    fits = [p for prof in (gangs, packer) for p in prof.filters if p.name == "NodeResourcesFit"]
    assert fits[0] is not fits[1]
    assert [f.args.strategy for f in fits] == ["LeastAllocated", "MostAllocated"]  # type: ignore[attr-defined]


def test_one_profile_only_is_renamed_by_the_flag() -> None:
    config = load(SCHEDULER_PLUGINS_FILE)
    assert renamed(config, "other").scheduler_names == ("other",)
    with pytest.raises(ConfigError, match=r"^--scheduler-name: the configuration has 2 profiles"):
        renamed(load(TWO_PROFILES), "other")


def test_file_settings_reach_the_config() -> None:
    config = load(
        HEAD
        + """
percentageOfNodesToScore: 50
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
clientConnection: {kubeconfig: /etc/kubernetes/scheduler.conf}
leaderElection:
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 5s
  resourceName: my-lease
  resourceNamespace: scheduling
"""
    )
    assert config.percentage_of_nodes_to_score == 50
    assert config.engine_options()["backoff_initial"] == timedelta(seconds=2)
    assert config.engine_options()["backoff_max"] == timedelta(seconds=20)
    assert config.kubeconfig == "/etc/kubernetes/scheduler.conf"
    lease = config.leader_election
    assert (lease.lease_name, lease.lease_namespace) == ("my-lease", "scheduling")
    assert (lease.lease_duration, lease.renew_deadline, lease.retry_period) == (30, 20, 5)
    assert lease.leader_elect is True  # kube-scheduler's default


def profile_with(plugins: str) -> str:
    return HEAD + "profiles:\n- schedulerName: a\n  plugins:\n" + plugins


def test_the_queue_order_compared_across_profiles_is_the_one_the_engine_follows() -> None:
    # By default Coscheduling's order replaces PrioritySort's; a profile naming Coscheduling at
    # queueSort itself sorts the same way, so kube's "same for all profiles" holds.
    explicit = (
        "    queueSort:\n      enabled: [{name: Coscheduling}]\n      disabled: [{name: '*'}]\n"
    )
    text = profile_with(explicit) + "- schedulerName: b\n"
    first, second = profiles(text)
    assert (first.queue_sort.name, second.queue_sort.name) == ("Coscheduling", "PrioritySort")


def test_dynamic_resources_args_reach_the_plugin_enabled_by_a_configuration() -> None:
    # DynamicResources is implemented (issue 45): its kube args are read, its own checks apply.
    args = "  pluginConfig:\n  - name: DynamicResources\n    args: {filterTimeout: 20s}\n"
    enabled = "    multiPoint:\n      enabled: [{name: DynamicResources}]\n"
    (profile,) = profiles(profile_with(enabled) + args)
    (plugin,) = [p for p in profile.filters if p.name == "DynamicResources"]
    assert plugin.args.filter_timeout == 20.0  # type: ignore[attr-defined]
    negative = args.replace("20s", "-1s")
    with pytest.raises(ConfigError, match=r"filterTimeout: Invalid value: -1\.0: must be zero"):
        profiles(profile_with(enabled) + negative)


def test_disabling_a_kube_default_we_lack_is_accepted() -> None:
    (profile,) = profiles(
        profile_with(
            "    multiPoint:\n      disabled: [{name: PodTopologySpread}, {name: VolumeBinding}]\n"
        )
    )
    assert profile.queue_sort.name == "PrioritySort"


class Declared(Filter):
    """Declares Filter but has no `filter` method (a misspelt one, say)."""

    name = "Declared"

    def filtr(self) -> None:  # the misspelling
        return None


class Complete(Filter):
    name = "Complete"

    def filter(self, cycle: Any, pod: Any, nodes: Any, candidates: Any) -> Any:
        return candidates


class Undeclared:
    name = "Undeclared"

    def sort_key(self, pod: PodInfo, queued_at: datetime) -> Any:
        return queued_at


def test_implements_needs_the_declared_protocol_and_its_methods() -> None:
    assert implements(Complete(), "filter")
    assert not implements(Complete(), "score")
    assert not implements(cast(Any, Declared)(), "filter")  # declared, method missing: refused
    assert not implements(Undeclared(), "queueSort")  # the method alone does not count
    assert not implements(Undeclared(), "preBind")


def test_the_documented_configurations_load_and_build() -> None:
    # The configuration files `docs/pod-scheduler.md` shows (and any other page).
    root = Path(__file__).resolve().parents[3]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    kube = [b for b in blocks if "kind: KubeSchedulerConfiguration" in b]
    ours = [b for b in blocks if "kind: PodSchedulerConfiguration" in b]
    assert kube and ours
    for text in kube:
        built = profiles(text)
        assert [p.scheduler_name for p in built] == list(load(text).scheduler_names)
    for text in ours:
        assert len(profiles(text)) == 1
