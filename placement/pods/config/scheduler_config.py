"""The pod scheduler's configuration (`--config FILE`) and the profiles it builds.

Two kinds are read. kube-scheduler's own `KubeSchedulerConfiguration`
(`kubescheduler.config.k8s.io/v1`: profiles, plugins per extension point and `multiPoint`,
`pluginConfig`, backoff, `leaderElection`, `percentageOfNodesToScore`), checked by the models
of `apis.schedulerconfig` (args: `apis.pluginargs`) and merged with the defaults by
`placement.pods.config.profiles`; and our own small document (`placement.ocm.io/v1alpha1`, kind
`PodSchedulerConfiguration`): the scheduler name, which plugins run (the defaults, minus
`disabled`, plus `enabled`), their score weights and args, the queue's backoff and the leader
election Lease. Every field is checked when it is read and a problem names the field
(`plugins.scoreWeights.NodeAffinity: must be between 1 and 100 (got 0)`), because a scheduler
that starts with a misspelt setting silently ignored places pods by rules nobody asked for.

The plugin registry is a parameter (placement/ does not import plugins/): `load_config` checks
plugin names against it when given one, and `build_profiles` constructs each enabled plugin
once per profile with its args (typed by its model) and puts it at every extension point it
implements.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from types import MappingProxyType
from typing import Any, cast

from apis.configmodel import MAX_DURATION_SECONDS
from apis.names import dns1123_label_problems, dns1123_subdomain_problems, invalid_value
from apis.schedulerconfig import KUBE_SCHEDULER_API_VERSION, KUBE_SCHEDULER_KIND
from placement.pods.config.kubeschedulerconfig import load_kube_config
from placement.pods.config.profiles import (
    ConfigError,
    build_kube_profile,
    check_common_queue_sort,
    plugin_args,
)
from placement.pods.config.settings import (
    CONFIG_API_VERSION,
    CONFIG_KIND,
    DEFAULT_SCHEDULER_NAME,
    LeaderElection,
    RunOptions,
    SchedulerConfig,
)
from placement.pods.framework.interface import (
    Bind,
    EventHandler,
    Filter,
    Permit,
    PostBind,
    PostFilter,
    PreBind,
    PreEnqueue,
    PreFilter,
    Profile,
    QueueSort,
    Reserve,
    Score,
    implements_point,
)

__all__ = [
    "CONFIG_API_VERSION",
    "CONFIG_KIND",
    "DEFAULT_SCHEDULER_NAME",
    "MAX_SCORE_WEIGHT",
    "ConfigError",
    "LeaderElection",
    "PluginFactory",
    "RunOptions",
    "SchedulerConfig",
    "build_profile",
    "build_profiles",
    "enabled_plugins",
    "load_config",
    "renamed",
]

MIN_SCORE_WEIGHT = 1
MAX_SCORE_WEIGHT = 100
DISABLE_ALL = "*"

PluginFactory = Callable[[Mapping[str, Any]], object]
"""A plugin's args (parsed YAML, `{}` when none) -> the plugin; ValueError("field: problem")."""

_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "schedulerName",
    "plugins",
    "pluginArgs",
    "backoff",
    "leaderElection",
)
_PLUGINS_FIELDS = ("enabled", "disabled", "scoreWeights")
_BACKOFF_FIELDS = ("initialSeconds", "maxSeconds", "unschedulableFlushSeconds")
_LEADER_FIELDS = ("leaseName", "leaseNamespace")

# Which methods put a plugin at which extension point of the Profile.
_POINTS: tuple[tuple[str, type], ...] = (
    ("pre_enqueues", PreEnqueue),
    ("pre_filters", PreFilter),
    ("filters", Filter),
    ("post_filters", PostFilter),
    ("reserves", Reserve),
    ("permits", Permit),
    ("pre_binds", PreBind),
    ("binds", Bind),
    ("post_binds", PostBind),
    ("handlers", EventHandler),
)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be a mapping (got {type(value).__name__})")
    return value


def _known_fields(doc: Mapping[str, Any], allowed: Sequence[str], prefix: str) -> None:
    for name in doc:
        if name not in allowed:
            known = ", ".join(allowed)
            raise ConfigError(f"{prefix}{name}: unknown field (known fields: {known})")


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: must be a non-empty string (got {value!r})")
    return value


def _seconds(value: Any, where: str) -> timedelta:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{where}: must be a positive number of seconds (got {value!r})")
    if value > MAX_DURATION_SECONDS:  # also inf: a Go Duration's ~292 years, as kube's files
        raise ConfigError(f"{where}: must be at most {MAX_DURATION_SECONDS} (got {value!r})")
    return timedelta(seconds=value)


def _lease_name(value: Any, field: str) -> str:
    """The Lease's name (a DNS subdomain) or namespace (a DNS label): one the API server would
    refuse is refused here, or the scheduler would never lead."""
    where = f"leaderElection.{field}"
    name = _string(value, where)
    rule = dns1123_subdomain_problems if field == "leaseName" else dns1123_label_problems
    for problem in rule(name):
        raise ConfigError(f"{where}: {invalid_value(name, problem)}")
    return name


def _weight(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: must be an integer (got {value!r})")
    if not MIN_SCORE_WEIGHT <= value <= MAX_SCORE_WEIGHT:
        raise ConfigError(
            f"{where}: must be between {MIN_SCORE_WEIGHT} and {MAX_SCORE_WEIGHT} (got {value})"
        )
    return value


def _plugin_name(value: Any, where: str, registry: Mapping[str, Any] | None) -> str:
    name = _string(value, where)
    if registry is not None and name not in registry and name != DISABLE_ALL:
        known = ", ".join(sorted(registry))
        raise ConfigError(f"{where}: unknown plugin {name!r} (known plugins: {known})")
    return name


def _plugin_list(
    value: Any, where: str, registry: Mapping[str, Any] | None, weights: dict[str, int] | None
) -> tuple[str, ...]:
    """`[{name: X, weight: 5}, ...]` (a bare name is accepted too) -> names; weights noted."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f"{where}: must be a list of {{name: PLUGIN}} (got {value!r})")
    names: list[str] = []
    for index, entry in enumerate(value):
        at = f"{where}[{index}]"
        if isinstance(entry, str):
            entry = {"name": entry}
        entry = _mapping(entry, at)
        _known_fields(entry, ("name", "weight") if weights is not None else ("name",), f"{at}.")
        if "name" not in entry:
            raise ConfigError(f"{at}.name: is required")
        name = _plugin_name(entry["name"], f"{at}.name", registry)
        if name in names:
            raise ConfigError(f"{at}.name: plugin {name!r} is listed twice")
        if weights is not None and "weight" in entry:
            weights[name] = _weight(entry["weight"], f"{at}.weight")
        names.append(name)
    return tuple(names)


def _plugins(
    doc: Mapping[str, Any], registry: Mapping[str, Any] | None
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, int]]:
    _known_fields(doc, _PLUGINS_FIELDS, "plugins.")
    weights: dict[str, int] = {}
    enabled = _plugin_list(doc.get("enabled"), "plugins.enabled", registry, weights)
    if DISABLE_ALL in enabled:
        raise ConfigError(f"plugins.enabled: {DISABLE_ALL!r} is only meaningful in disabled")
    disabled = _plugin_list(doc.get("disabled"), "plugins.disabled", registry, None)
    for name, raw in _mapping(doc.get("scoreWeights"), "plugins.scoreWeights").items():
        where = f"plugins.scoreWeights.{name}"
        _plugin_name(name, where, registry)
        weight = _weight(raw, where)
        if weights.get(name, weight) != weight:
            raise ConfigError(
                f"{where}: {weight} contradicts the weight {weights[name]} in enabled"
            )
        weights[name] = weight
    return enabled, disabled, weights


def load_config(
    doc: Mapping[str, Any] | None, registry: Mapping[str, Any] | None = None
) -> SchedulerConfig:
    """Check a configuration document (None or empty: every default) and return it typed.
    With a `registry`, plugin names are checked against it here rather than at `build_profile`.
    Raises ConfigError naming the field at fault."""
    doc = _mapping(doc, "configuration")
    if (
        doc.get("kind") == KUBE_SCHEDULER_KIND
        or doc.get("apiVersion") == KUBE_SCHEDULER_API_VERSION
    ):
        return load_kube_config(doc, registry)
    _known_fields(doc, _TOP_FIELDS, "")
    for name, expected in (("apiVersion", CONFIG_API_VERSION), ("kind", CONFIG_KIND)):
        if name in doc and doc[name] != expected:
            raise ConfigError(f"{name}: must be {expected!r} (got {doc[name]!r})")
    scheduler_name = DEFAULT_SCHEDULER_NAME
    if "schedulerName" in doc:
        scheduler_name = _string(doc["schedulerName"], "schedulerName")
    enabled, disabled, weights = _plugins(_mapping(doc.get("plugins"), "plugins"), registry)
    args: dict[str, Mapping[str, Any]] = {}
    for name, value in _mapping(doc.get("pluginArgs"), "pluginArgs").items():
        _plugin_name(name, f"pluginArgs.{name}", registry)
        args[name] = MappingProxyType(dict(_mapping(value, f"pluginArgs.{name}")))
    problems: list[str] = []  # the args' own checks, every plugin's, at read time
    for name, value in args.items():
        try:
            plugin_args(name, value, f"pluginArgs.{name}")
        except ConfigError as exc:
            problems += str(exc).splitlines()
    if problems:
        raise ConfigError("\n".join(problems))

    backoff = _mapping(doc.get("backoff"), "backoff")
    _known_fields(backoff, _BACKOFF_FIELDS, "backoff.")
    defaults = SchedulerConfig()
    initial, maximum, flush = defaults.backoff_initial, defaults.backoff_max, None
    if "initialSeconds" in backoff:
        initial = _seconds(backoff["initialSeconds"], "backoff.initialSeconds")
    if "maxSeconds" in backoff:
        maximum = _seconds(backoff["maxSeconds"], "backoff.maxSeconds")
    if "unschedulableFlushSeconds" in backoff:
        flush = _seconds(backoff["unschedulableFlushSeconds"], "backoff.unschedulableFlushSeconds")
    if maximum < initial:
        raise ConfigError(
            f"backoff.maxSeconds: must not be less than initialSeconds "
            f"({maximum.total_seconds():g} < {initial.total_seconds():g})"
        )

    leader = _mapping(doc.get("leaderElection"), "leaderElection")
    _known_fields(leader, _LEADER_FIELDS, "leaderElection.")
    lease = LeaderElection(
        lease_name=_lease_name(leader.get("leaseName", scheduler_name), "leaseName"),
        lease_namespace=_lease_name(
            leader.get("leaseNamespace", LeaderElection.lease_namespace), "leaseNamespace"
        ),
    )
    return SchedulerConfig(
        scheduler_name=scheduler_name,
        enabled=enabled,
        disabled=disabled,
        score_weights=MappingProxyType(weights),
        plugin_args=MappingProxyType(args),
        backoff_initial=initial,
        backoff_max=maximum,
        unschedulable_flush=flush or defaults.unschedulable_flush,
        leader_election=lease,
    )


def enabled_plugins(config: SchedulerConfig, defaults: Sequence[str]) -> tuple[str, ...]:
    """The plugins that run, in order, as kube-scheduler merges a profile with its defaults:
    the defaults not disabled (all of them with `*`) in their order, a default listed in
    `enabled` keeping its place, then the other enabled plugins in the order given."""
    disabled = set(config.disabled)
    kept = [] if DISABLE_ALL in disabled else [n for n in defaults if n not in disabled]
    return (*kept, *(n for n in config.enabled if n not in kept))


def build_profile(
    config: SchedulerConfig,
    registry: Mapping[str, PluginFactory],
    *,
    defaults: Sequence[str] = (),
    default_weights: Mapping[str, int] | None = None,
) -> Profile:
    """Construct every enabled plugin once with its args and place it at each extension point
    whose method it has (queue sort: exactly one plugin with `sort_key`). Score weights come
    from the configuration, else `default_weights`, else 1. `defaults` and `default_weights` are
    the registry's DEFAULT_PLUGINS and DEFAULT_SCORE_WEIGHTS (the caller passes them, as it
    passes the registry). A KubeSchedulerConfiguration must have one profile here (see
    `build_profiles`). Raises ConfigError naming the field at fault."""
    if config.profiles:
        if len(config.profiles) != 1:
            raise ConfigError(f"profiles: {len(config.profiles)} profiles where one is expected")
        return build_profiles(config, registry, defaults=defaults, default_weights=default_weights)[
            0
        ]
    names = enabled_plugins(config, defaults)
    for name in (*config.enabled, *config.disabled):
        where = "plugins.enabled" if name in config.enabled else "plugins.disabled"
        _plugin_name(name, where, registry)
    for where, listed in (
        ("pluginArgs", config.plugin_args),
        ("plugins.scoreWeights", config.score_weights),
    ):
        for name in listed:
            _plugin_name(name, f"{where}.{name}", registry)
    for name in config.plugin_args:
        if name not in names:
            raise ConfigError(f"pluginArgs.{name}: plugin {name!r} is not enabled")
    weights = dict(default_weights or {})
    weights.update(config.score_weights)

    plugins: list[tuple[str, object]] = []
    problems: list[str] = []  # every plugin's, one line each
    for name in names:
        try:
            args = plugin_args(name, config.plugin_args.get(name), f"pluginArgs.{name}")
            plugins.append((name, registry[name](args)))
        except ConfigError as exc:
            problems += str(exc).splitlines()
        except ValueError as exc:
            problems.append(f"pluginArgs.{name}.{exc}")
    if problems:
        raise ConfigError("\n".join(problems))

    sorters = [(name, p) for name, p in plugins if implements_point(p, QueueSort)]
    if len(sorters) != 1:
        found = ", ".join(name for name, _ in sorters) or "none"
        raise ConfigError(f"plugins: exactly one QueueSort plugin must be enabled (got {found})")
    for name in config.score_weights:
        plugin = dict(plugins).get(name)
        if plugin is None:
            raise ConfigError(f"plugins.scoreWeights.{name}: plugin {name!r} is not enabled")
        if not implements_point(plugin, Score):
            raise ConfigError(f"plugins.scoreWeights.{name}: {name!r} is not a Score plugin")

    points: dict[str, list[Any]] = {point: [] for point, _ in _POINTS}
    for _, plugin in plugins:
        for point, protocol in _POINTS:
            if implements_point(plugin, protocol):
                points[point].append(plugin)
    queue_sort = cast(QueueSort, sorters[0][1])
    return Profile(
        scheduler_name=config.scheduler_name,
        queue_sort=queue_sort,
        pre_enqueues=tuple(points["pre_enqueues"]),
        pre_filters=tuple(points["pre_filters"]),
        filters=tuple(points["filters"]),
        post_filters=tuple(points["post_filters"]),
        scores=tuple(
            (cast(Score, p), weights.get(n, 1)) for n, p in plugins if implements_point(p, Score)
        ),
        reserves=tuple(points["reserves"]),
        permits=tuple(points["permits"]),
        pre_binds=tuple(points["pre_binds"]),
        binds=tuple(points["binds"]),
        post_binds=tuple(points["post_binds"]),
        handlers=tuple(points["handlers"]),
    )


def build_profiles(
    config: SchedulerConfig,
    registry: Mapping[str, PluginFactory],
    *,
    defaults: Sequence[str] = (),
    default_weights: Mapping[str, int] | None = None,
) -> tuple[Profile, ...]:
    """Every profile of the configuration, each with its own plugin objects (one for our kind).
    Raises ConfigError naming the field at fault."""
    if not config.profiles:
        return (
            build_profile(config, registry, defaults=defaults, default_weights=default_weights),
        )
    profiles = tuple(
        build_kube_profile(spec, registry, defaults=defaults, default_weights=default_weights)
        for spec in config.profiles
    )
    check_common_queue_sort(profiles, config.profiles)
    return profiles


def renamed(config: SchedulerConfig, name: str) -> SchedulerConfig:
    """The configuration serving `name` (`--scheduler-name`): its one profile renamed. A
    KubeSchedulerConfiguration with several profiles names them itself (ConfigError)."""
    if not config.profiles:
        return replace(config, scheduler_name=name)
    if len(config.profiles) != 1:
        names = ", ".join(config.scheduler_names)
        raise ConfigError(
            f"--scheduler-name: the configuration has {len(config.profiles)} profiles "
            f"({names}); their names are the profiles' schedulerName"
        )
    profile = replace(config.profiles[0], scheduler_name=name)
    return replace(config, scheduler_name=name, profiles=(profile,))
