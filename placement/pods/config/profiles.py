"""The profiles of a KubeSchedulerConfiguration: checked against the plugin registry, merged with
the default plugins and built into `Profile`s, as kube-scheduler does.

Merging, per extension point and for `multiPoint` alike: the defaults (all of them in
`multiPoint`, with their score weights) minus `disabled` (all of them with `*`), a default that is
also `enabled` keeping its place and taking the entry given (its weight too), then the other
enabled plugins in the order written.

Placing: each plugin is built once (with its `pluginConfig` args, validated by its args model)
and put at every point of `multiPoint` it implements, unless that point disables it (or `*`).
A plugin enabled at a point explicitly must implement it (`implements`), and keeps its place
there: first the explicit entries that are also in `multiPoint`, then the other `multiPoint`
plugins, then the remaining explicit ones. A score weight comes from the `score` entry, else
the `multiPoint` one, else 1 (0 means 1).

Every problem names the field as the user wrote it (`profiles[0].plugins.score.enabled[0].name:
"NodeName" does not implement Score`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from apis.configmodel import suggest
from apis.pluginargs import PLUGIN_ARGS, validate_args
from apis.schedulerconfig import (
    KUBE_DEFAULT_PLUGINS,
    Plugins,
    PluginSet,
)
from placement.pods.framework.interface import (
    Bind,
    EventHandler,
    Filter,
    Permit,
    PodInfo,
    PostBind,
    PostFilter,
    PreBind,
    PreEnqueue,
    PreFilter,
    Profile,
    QueueSort,
    QueueSortOverride,
    Reserve,
    Score,
    declares,
    implements_point,
)

__all__ = [
    "DISABLE_ALL",
    "REMOVED",
    "REMOVED_PLUGINS",
    "ConfigError",
    "ProfileSpec",
    "build_kube_profile",
    "check_common_queue_sort",
    "entries",
    "implements",
    "left_out",
    "name_problem",
    "plugin_args",
]

DISABLE_ALL = "*"
MULTI_POINT = "multiPoint"
DEFAULT_BINDER = "DefaultBinder"
"""kube's binder: the engine's own binding action is it, so naming it changes nothing."""

PluginFactory = Callable[[Any], object]

PREEMPTS_THROUGH = {"CapacityScheduling": "DefaultPreemption"}
"""Plugins whose PostFilter is DefaultPreemption's, with their preemption hooks: enabled at
postFilter (as scheduler-plugins' CapacityScheduling files do, replacing DefaultPreemption
there), they put DefaultPreemption at postFilter, built with its own args."""


class ConfigError(ValueError):
    """A configuration that cannot be used; the message starts with the field at fault (one
    line per problem)."""


# Which Protocol makes a plugin implement each extension point (the methods listed are the
# ones the point calls). PreScore is part of our Score.
_POINTS: dict[str, tuple[str, type | None, tuple[str, ...]]] = {
    "preEnqueue": ("PreEnqueue", PreEnqueue, ("pre_enqueue",)),
    "queueSort": ("QueueSort", QueueSort, ("sort_key",)),
    "preFilter": ("PreFilter", PreFilter, ("pre_filter",)),
    "filter": ("Filter", Filter, ("filter",)),
    "postFilter": ("PostFilter", PostFilter, ("post_filter",)),
    "preScore": ("PreScore", Score, ("score",)),
    "score": ("Score", Score, ("score",)),
    "reserve": ("Reserve", Reserve, ("reserve", "unreserve")),
    "permit": ("Permit", Permit, ("permit",)),
    "preBind": ("PreBind", PreBind, ("pre_bind",)),
    "bind": ("Bind", Bind, ("bind",)),
    "postBind": ("PostBind", PostBind, ("post_bind",)),
}


def implements(plugin: object, point: str) -> bool:
    """Whether `plugin` implements the extension point `point` (its wire name, `filter`): its
    class subclasses the point's Protocol of `placement.pods.framework.interface` and defines the
    Protocol's methods (`implements_point`). A method without the declaration does not count:
    the profile places plugins by what they declare."""
    _, protocol, _ = _POINTS[point]
    return protocol is not None and implements_point(plugin, protocol)


def _sorts_by_override(plugin: object) -> bool:
    """A QueueSortOverride (Coscheduling): its order may stand in for a QueueSort."""
    return implements_point(plugin, QueueSortOverride)


@dataclass(frozen=True)
class _OverrideSort:
    """A QueueSortOverride enabled at queueSort itself (scheduler-plugins' Coscheduling
    files): its order as the profile's QueueSort."""

    plugin: Any

    @property
    def name(self) -> str:
        return str(self.plugin.name)

    def sort_key(self, pod: PodInfo, queued_at: datetime) -> Any:
        return self.plugin.queue_sort_key(pod, queued_at)


@dataclass(frozen=True)
class ProfileSpec:
    """One profile of a KubeSchedulerConfiguration, checked: its name, the plugin sets as
    written and each plugin's args (validated models, or the mapping written for a plugin
    without an args model). `where` is its path (`profiles[1]`)."""

    scheduler_name: str
    where: str
    plugins: Plugins
    args: Mapping[str, Any]
    percentage_of_nodes_to_score: int | None = None


# --- checks against the registry ---------------------------------------------------------------


REMOVED_PLUGINS = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})
"""Plugins kube-scheduler removed before `kubescheduler.config.k8s.io/v1`: it refuses a file
that enables them or configures their args."""
REMOVED = (
    'was invalid in version "v1" (KubeSchedulerConfiguration is version '
    '"kubescheduler.config.k8s.io/v1")'
)


def name_problem(name: str, enabled: bool, point: str, registry: Mapping[str, Any]) -> str:
    if name in REMOVED_PLUGINS:  # disabling one changes nothing, as in kube
        return f'Invalid value: "{name}": {REMOVED}' if enabled else ""
    if name in registry or (name == DISABLE_ALL and not enabled):
        return ""
    if name == DISABLE_ALL:
        return f'"{DISABLE_ALL}" is only meaningful in disabled'
    if name == DEFAULT_BINDER and point in ("bind", MULTI_POINT):
        return ""
    if name in KUBE_DEFAULT_PLUGINS:
        if not enabled:
            return ""  # disabling a kube default we do not have: nothing to do
        return f'plugin "{name}" is a kube-scheduler plugin this scheduler does not implement'
    return f'unknown plugin "{name}"{suggest(name, sorted(registry))}'


def entries(plugins: Plugins, where: str) -> list[tuple[str, str, str, bool]]:
    """(point, path, name, enabled) for every entry written in a profile's plugins."""
    found = []
    for point in (*Plugins.POINTS, MULTI_POINT):
        pset = plugins.at(point)
        for kind, refs in (("enabled", pset.enabled), ("disabled", pset.disabled)):
            for index, ref in enumerate(refs):
                found.append(
                    (point, f"{where}.plugins.{point}.{kind}[{index}]", ref.name, kind == "enabled")
                )
    return found


def left_out(name: str, plugins: Plugins) -> bool:
    """A kube default plugin we lack, disabled in `multiPoint` (by name or `*`): its args in
    `pluginConfig` change nothing and are accepted unchecked."""
    disabled = {ref.name for ref in plugins.multi_point.disabled}
    return name in KUBE_DEFAULT_PLUGINS and bool({name, DISABLE_ALL} & disabled)


def plugin_args(name: str, raw: Any, where: str) -> Any:
    """A plugin's args checked by its model (PLUGIN_ARGS), or `raw` as written for a plugin
    without one (a test's or third party's registry). ConfigError naming the field."""
    model = PLUGIN_ARGS.get(name)
    if model is None:
        return {} if raw is None else raw
    try:
        return validate_args(model, raw, where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


# --- merging and placing -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    name: str
    weight: int | None
    where: str  # the entry's path; "" for a default


def _merge(
    defaults: Sequence[_Entry], custom: PluginSet, where: str
) -> tuple[list[_Entry], set[str]]:
    """kube's merge of one point's set with its defaults: (enabled in order, disabled names)."""
    disabled = {ref.name for ref in custom.disabled}
    written = [
        _Entry(ref.name, ref.weight, f"{where}.enabled[{i}]")
        for i, ref in enumerate(custom.enabled)
    ]
    by_name = {entry.name: entry for entry in written}
    replaced: set[int] = set()
    merged: list[_Entry] = []
    if DISABLE_ALL not in disabled:
        for default in defaults:
            if default.name in disabled:
                continue
            mine = by_name.get(default.name)
            if mine is not None:
                replaced.add(id(mine))
            merged.append(mine or default)
    merged.extend(entry for entry in written if id(entry) not in replaced)
    return merged, disabled


def _unique(entries: Sequence[_Entry], point: str) -> None:
    seen: set[str] = set()
    for entry in entries:
        if entry.name in seen:
            raise ConfigError(
                f'{entry.where}.name: plugin "{entry.name}" is listed twice at {point}'
            )
        seen.add(entry.name)


def build_kube_profile(
    spec: ProfileSpec,
    registry: Mapping[str, PluginFactory],
    *,
    defaults: Sequence[str] = (),
    default_weights: Mapping[str, int] | None = None,
) -> Profile:
    """The Profile of one checked profile (module docstring). ConfigError naming the field."""
    where = spec.where
    for point, path, name, enabled in entries(spec.plugins, where):
        problem = name_problem(name, enabled, point, registry)
        if problem:
            raise ConfigError(f"{path}.name: {problem}")
    weights = default_weights or {}
    merged = {
        point: _merge(
            [_Entry(n, weights.get(n), "") for n in defaults] if point == MULTI_POINT else [],
            spec.plugins.at(point),
            f"{where}.plugins.{point}",
        )
        for point in (*Plugins.POINTS, MULTI_POINT)
    }
    multi, _ = merged[MULTI_POINT]
    _unique(multi, MULTI_POINT)
    post_filters, post_disabled = merged["postFilter"]
    through = [
        _Entry(PREEMPTS_THROUGH.get(e.name, e.name), e.weight, e.where) for e in post_filters
    ]
    kept = [e for i, e in enumerate(through) if e.name not in {x.name for x in through[:i]}]
    merged["postFilter"] = (kept, post_disabled)

    built: dict[str, object] = {}
    for merged_entries, _ in merged.values():
        for entry in merged_entries:
            if entry.name in built or entry.name not in registry:
                continue  # DefaultBinder: the engine binds
            args = spec.args.get(entry.name)
            if args is None:
                args = plugin_args(entry.name, None, f"{where}.pluginConfig")
            try:
                built[entry.name] = registry[entry.name](args)
            except ValueError as exc:
                raise ConfigError(f"{where}.pluginConfig.{entry.name}.args: {exc}") from None

    placed: dict[str, list[_Entry]] = {}
    for point in Plugins.POINTS:
        explicit, disabled = merged[point]
        explicit = [e for e in explicit if e.name in built]
        _unique(explicit, point)
        for entry in explicit:
            plugin = built[entry.name]
            if not implements(plugin, point) and not (
                point == "queueSort" and _sorts_by_override(plugin)
            ):
                label = _POINTS[point][0]
                raise ConfigError(f'{entry.where}.name: "{entry.name}" does not implement {label}')
        if DISABLE_ALL in disabled:
            placed[point] = explicit
            continue
        expanded = [
            e
            for e in multi
            if e.name in built and e.name not in disabled and implements(built[e.name], point)
        ]
        if point == "queueSort" and not expanded and not explicit:
            expanded = [
                e
                for e in multi
                if e.name in built and e.name not in disabled and _sorts_by_override(built[e.name])
            ][:1]
        names = {e.name for e in expanded}
        written = {e.name for e in explicit}
        placed[point] = [
            *(e for e in explicit if e.name in names),
            *(e for e in expanded if e.name not in written),
            *(e for e in explicit if e.name not in names),
        ]
    return _profile(spec, built, placed, merged["score"][0], multi)


def _profile(
    spec: ProfileSpec,
    built: Mapping[str, object],
    placed: Mapping[str, list[_Entry]],
    score_entries: Sequence[_Entry],
    multi: Sequence[_Entry],
) -> Profile:
    sorts = placed["queueSort"]
    if len(sorts) != 1:
        found = ", ".join(e.name for e in sorts) or "none"
        raise ConfigError(
            f"{spec.where}.plugins.queueSort: exactly one QueueSort plugin must be enabled "
            f"(got {found})"
        )
    sorter = built[sorts[0].name]
    queue_sort: Any = sorter if implements(sorter, "queueSort") else _OverrideSort(sorter)

    weights: dict[str, int] = {}
    for entry in (*score_entries, *multi):
        weights.setdefault(entry.name, entry.weight or 1)

    def at(point: str) -> tuple[Any, ...]:
        return tuple(built[e.name] for e in placed[point])

    used = {e.name for entries in placed.values() for e in entries}
    handlers: tuple[EventHandler, ...] = tuple(
        plugin  # type: ignore[misc]
        for name, plugin in built.items()
        if name in used and implements_point(plugin, EventHandler)
    )
    return Profile(
        scheduler_name=spec.scheduler_name,
        queue_sort=queue_sort,
        pre_enqueues=at("preEnqueue"),
        pre_filters=at("preFilter"),
        filters=at("filter"),
        post_filters=at("postFilter"),
        scores=tuple((built[e.name], weights.get(e.name, 1)) for e in placed["score"]),  # type: ignore[misc]
        reserves=at("reserve"),
        permits=at("permit"),
        pre_binds=at("preBind"),
        binds=at("bind"),
        post_binds=at("postBind"),
        handlers=handlers,
    )


def _queue_order(profile: Profile) -> str:
    """The plugin whose order the engine's queue follows: the QueueSort, or a plugin of the
    profile that replaces it (Coscheduling beside PrioritySort)."""
    sort = profile.queue_sort.name
    plugins = (*profile.pre_filters, *profile.filters, *profile.permits, *profile.handlers)
    for plugin in plugins:
        if declares(plugin, QueueSortOverride):
            override = cast(QueueSortOverride, plugin)
            if override.replaces_queue_sort == sort:
                return override.name
    return sort


def check_common_queue_sort(profiles: Sequence[Profile], specs: Sequence[ProfileSpec]) -> None:
    """kube-scheduler's rule: every profile orders its queue with the same plugin."""
    first = _queue_order(profiles[0]) if profiles else ""
    for profile, spec in zip(profiles[1:], specs[1:], strict=True):
        order = _queue_order(profile)
        if order != first:
            raise ConfigError(
                f"{spec.where}.plugins.queueSort: must be the same for all profiles "
                f'("{order}" here, "{first}" in {specs[0].where})'
            )
