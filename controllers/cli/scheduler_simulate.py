"""`placement scheduler simulate`'s work (its parser is in `controllers.cli.scheduler`): read
the manifests' nodes, pods, workloads, PodGroups, ElasticQuotas and PriorityClasses, run them
through a fresh engine on a virtual clock, print the result. A module of its own so that
`placement scheduler run` never imports the simulator."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from typing import Any

from apis.meta import KubeObject
from controllers.cli.common import EXIT_OK, CliError, emit, parse_now, print_warnings
from controllers.cli.manifests import load_paths
from controllers.cli.scheduler_output import foreign_pods_line, simulation_list, simulation_table
from controllers.cli.strictness import Validation
from placement.pods.config.scheduler_config import SchedulerConfig
from placement.pods.framework.interface import Profile
from placement.pods.simulator.simulation import (
    DEFAULT_MAX_TIME,
    OBJECT_KINDS,
    SimulationError,
    SimulationResult,
    simulate,
)
from placement.pods.simulator.workloads import WORKLOAD_KINDS

__all__ = ["cmd_simulate", "simulate_objects"]

# Kinds read from the manifests; Namespaces are accepted quietly (the samples ship theirs).
_READ_KINDS = frozenset({"Node", "Pod", *OBJECT_KINDS, *WORKLOAD_KINDS})
_QUIET_KINDS = frozenset({"Namespace"})


def _objects(paths: list[str], validation: Validation) -> list[KubeObject]:
    result = load_paths(paths, validation)
    print_warnings(result.warnings)
    if result.errors:
        raise CliError("\n".join(str(e) for e in result.errors))
    skipped: dict[str, int] = {}
    objects = []
    for loaded in result.objects:
        kind = loaded.obj.KIND
        if kind in _READ_KINDS:
            objects.append(loaded.obj)
        elif kind not in _QUIET_KINDS:
            skipped[kind] = skipped.get(kind, 0) + 1
    if skipped:
        listed = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
        print(f"warning: skipped objects of other kinds: {listed}", file=sys.stderr)
    return objects


def simulate_objects(
    objects: list[KubeObject],
    config: SchedulerConfig,
    profiles: tuple[Profile, ...],
    now: Any,
    max_time: timedelta = DEFAULT_MAX_TIME,
) -> SimulationResult:
    """Run the objects through a fresh engine with this configuration and its profiles
    (`controllers.cli.scheduler.scheduler_profiles`; one engine each,
    `placement.pods.scheduler.engines`)."""
    from placement.pods.scheduler.engines import engine_for

    engine = engine_for(profiles, **config.engine_options())
    try:
        return simulate(
            objects, engine, now, scheduler_name=config.scheduler_name, max_time=max_time
        )
    except (SimulationError, ValueError) as exc:
        raise CliError(f"simulate: {exc}") from None


def cmd_simulate(
    args: argparse.Namespace, config: SchedulerConfig, profiles: tuple[Profile, ...]
) -> int:
    """The verb, with the configuration `--config` gave and its profiles."""
    now = parse_now(args.now)
    objects = _objects(args.filename, args.validate)
    result = simulate_objects(objects, config, profiles, now, args.max_time or DEFAULT_MAX_TIME)
    if args.output in ("table", "wide"):
        wide = args.output == "wide"
        sys.stdout.write(simulation_table(result, wide, config.scheduler_names))
    else:
        emit(simulation_list(result), args.output)
    foreign = foreign_pods_line(result, config.scheduler_names)
    if foreign is not None:  # last, after the output; still exit 0: such a run is valid
        sys.stdout.flush()
        print(foreign, file=sys.stderr)
    return EXIT_OK
