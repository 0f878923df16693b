"""The checks of a KubeSchedulerConfiguration's profiles that need the plugin registry, as
kube-scheduler's validation makes them: a schedulerName per profile (only a lone profile may
leave it out) and no two alike, plugin names the registry knows (or kube defaults disabled),
one queue sort at most, `pluginConfig` once per plugin and its args checked by the plugin's
model. Every problem is a line naming the field as written (`profiles[1].schedulerName:
Required value`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.schedulerconfig import KubeSchedulerConfiguration, Plugins
from placement.pods.config.profiles import (
    REMOVED,
    REMOVED_PLUGINS,
    ConfigError,
    ProfileSpec,
    entries,
    left_out,
    name_problem,
    plugin_args,
)

__all__ = ["resolve_profiles"]


def resolve_profiles(
    config: KubeSchedulerConfiguration,
    registry: Mapping[str, Any] | None,
    default_name: str,
) -> tuple[ProfileSpec, ...]:
    """The profiles of a validated KubeSchedulerConfiguration (none: one profile of every
    default named `default_name`), with plugin names checked against `registry` when given
    and every plugin's args checked. ConfigError with one line per problem."""
    problems: list[str] = []
    specs: list[ProfileSpec] = []
    seen: dict[str, int] = {}
    for index, profile in enumerate(config.profiles or [None]):
        where = f"profiles[{index}]"
        if profile is None:
            specs.append(ProfileSpec(default_name, where, Plugins(), {}))
            break
        if profile.scheduler_name is None and len(config.profiles) > 1:
            problems.append(f"{where}.schedulerName: Required value")  # kube: only one defaults
        name = profile.scheduler_name or default_name
        if name in seen:
            problems.append(
                f'{where}.schedulerName: Duplicate value: "{name}" (profiles[{seen[name]}] has it)'
            )
        seen.setdefault(name, index)
        plugins = profile.plugins or Plugins()
        if registry is not None:
            for point, path, plugin, enabled in entries(plugins, where):
                problem = name_problem(plugin, enabled, point, registry)
                if problem.startswith("Invalid value"):
                    problems.append(f"{path}: {problem}")  # kube's path: the entry
                elif problem:
                    problems.append(f"{path}.name: {problem}")
        sorts = len(plugins.queue_sort.enabled)
        if sorts > 1:
            problems.append(
                f"{where}.plugins.queueSort.enabled: Invalid value: {sorts}: only one queue sort "
                "plugin can be enabled"
            )
        args: dict[str, Any] = {}
        configured: set[str] = set()
        for at, entry in enumerate(profile.plugin_config):
            path = f"{where}.pluginConfig[{at}]"
            if entry.name in configured:
                problems.append(f'{path}: Duplicate value: "{entry.name}"')
                continue
            configured.add(entry.name)
            if entry.name in REMOVED_PLUGINS:
                problems.append(f'{path}: Invalid value: "{entry.name}": {REMOVED}')
                continue
            if registry is not None and entry.name not in registry:
                if not left_out(entry.name, plugins):
                    problem = name_problem(entry.name, True, "", registry)
                    problems.append(f"{path}.name: {problem}")
                continue
            try:
                args[entry.name] = plugin_args(entry.name, entry.args, f"{path}.args")
            except ConfigError as exc:
                problems.extend(str(exc).splitlines())
        specs.append(ProfileSpec(name, where, plugins, args, profile.percentage_of_nodes_to_score))
    if not problems:
        problems = _queue_sort_args(config, specs)
    if problems:
        raise ConfigError("\n".join(problems))
    return tuple(specs)


def _queue_sort_args(config: KubeSchedulerConfiguration, specs: list[ProfileSpec]) -> list[str]:
    """kube's rule: the args of the queue sort plugin profiles[0] enables are the same in every
    profile that configures it (one queue serves them all)."""
    first = config.profiles[0].plugins if config.profiles else None
    if first is None or not first.queue_sort.enabled:
        return []
    name = first.queue_sort.enabled[0].name

    def effective(spec: ProfileSpec) -> Any:
        return spec.args[name] if name in spec.args else plugin_args(name, None, "")

    problems = []
    for index, profile in enumerate(config.profiles[1:], start=1):
        for at, entry in enumerate(profile.plugin_config):
            if entry.name == name and effective(specs[index]) != effective(specs[0]):
                problems.append(
                    f"profiles[{index}].pluginConfig[{at}].args: queueSort must be the same for "
                    f'all profiles (the args of "{name}" differ from profiles[0]\'s)'
                )
    return problems
