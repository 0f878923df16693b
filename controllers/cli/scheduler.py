"""`placement scheduler`: the local-cluster pod scheduler (docs/pod-scheduler.md).

* `placement scheduler simulate -f PATH... [-o json|yaml|table|wide] [--now RFC3339]
  [--config FILE]`: nodes, pods, workloads (Deployments, ReplicaSets, StatefulSets and Jobs,
  expanded into the pods their controllers create), PodGroups, ElasticQuotas and
  PriorityClasses through the scheduler's engine on a virtual clock, until nothing can move.
  Prints a `v1 List` of the pods (node, conditions, nominatedNodeName), the evicted pods (their
  last state: deletionTimestamp and DisruptionTarget), the PodGroups and ElasticQuotas with
  their status and the ReplicaSets made from Deployments, then the Events. `-o table`: one row
  per pod in 120 columns; `-o wide`: priority, nominated node and whole messages.
* `placement scheduler run [--kubeconfig FILE] [--scheduler-name NAME] [--leader-elect]
  [--http-addr ADDR] [--config FILE] [--embedded] [--status-controller on|off|only]`: the
  scheduler against a cluster (`controllers.addons.scheduler.run_scheduler`, imported when the
  verb runs), with the PodGroup/ElasticQuota status controller beside it or alone.

Exit codes as for every verb: 0, 1 on bad input (one line per problem on stderr), 2 on usage.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import shutil
import sys
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from controllers.cli.common import (
    CliError,
    add_log_options,
    add_manifest_options,
)
from controllers.cli.lease_flags import add_lease_flags, lease_timing
from placement.pods.config.scheduler_config import (
    ConfigError,
    RunOptions,
    SchedulerConfig,
    build_profiles,
    load_config,
    renamed,
)

if TYPE_CHECKING:
    from controllers.cli.common import Subparsers
    from placement.pods.framework.interface import Profile

__all__ = ["add_parser", "read_config", "scheduler_profiles"]

CONFIG_HELP = "a KubeSchedulerConfiguration (kube-scheduler's file) or PodSchedulerConfiguration"


def add_parser(subparsers: Subparsers) -> None:
    """Add `scheduler` and its sub-commands to the command's subparsers."""
    scheduler = subparsers.add_parser(
        "scheduler",
        help="the local-cluster pod scheduler: simulate offline, or run against a cluster",
        description="The pod scheduler of the local-cluster add-ons (a secondary scheduler).",
    )
    verbs = scheduler.add_subparsers(dest="scheduler_command", metavar="COMMAND")
    verbs.required = True
    _add_simulate(verbs)
    _add_run(verbs)


def _add_simulate(verbs: Subparsers) -> None:
    sim = verbs.add_parser(
        "simulate",
        help="schedule the pods of the manifests offline, on a virtual clock",
        description=(
            "Run nodes, pods, workloads (Deployment, ReplicaSet, StatefulSet, Job, "
            "ReplicationController: expanded into their pods), Services, PodGroups, "
            "ElasticQuotas, PriorityClasses and storage objects through the pod "
            "scheduler on a virtual clock until nothing can move, and print a v1 List of the "
            "pods, the evicted pods, the PodGroups and ElasticQuotas with their status, and "
            "the events. Bound pods start at once; preemption victims go after their grace "
            "period and their controllers recreate them. Deterministic: the same manifests "
            "in any order give the same output. -o table: one row per pod in 120 columns; "
            "-o wide: every column and whole messages."
        ),
    )
    add_manifest_options(sim, ["json", "yaml", "table", "wide"])
    for action in sim._actions:
        if action.dest == "now":  # the shared help speaks of the hub's expiries
            action.help = "the virtual clock's start: creation times, events (default: now)"
    sim.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    sim.add_argument(
        "--max-time",
        type=_seconds,
        metavar="SECONDS",
        help="stop the virtual clock after this long (default 3600)",
    )
    sim.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    # the simulator, the manifest reader and the output are imported only by the verb that
    # uses them: `scheduler run` starts without them
    from controllers.cli.scheduler_simulate import cmd_simulate

    config = read_config(args.config)
    return cmd_simulate(args, config, scheduler_profiles(config))


def _add_run(verbs: Subparsers) -> None:
    run = verbs.add_parser(
        "run",
        help="schedule the pods of a cluster that name this scheduler",
        description=(
            "Schedule the pods whose spec.schedulerName is this scheduler's name, binding them "
            "through the API (pods/binding), until SIGTERM or SIGINT. Which cluster: "
            "--kubeconfig, else $KUBECONFIG, else the pod's service account, else "
            "~/.kube/config, else an embedded API server (--embedded forces it)."
        ),
    )
    run.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig of the cluster")
    run.add_argument("--context", metavar="NAME", help="kubeconfig context")
    run.add_argument("--embedded", action="store_true", help="start an embedded API server")
    run.add_argument(
        "--kubelet",
        action="store_true",
        help="start an embedded API server with simulated kubelets (bound pods run, deleted "
        "pods go); implies --embedded unless a cluster is named",
    )
    run.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="the spec.schedulerName served (default: the config's, else ocm-pod-scheduler)",
    )
    run.add_argument(
        "--leader-elect", action="store_true", help="elect a leader over a Lease (the config's)"
    )
    key = "default: the configuration's leaderElection.{}, else {}"
    add_lease_flags(
        run,
        (
            key.format("leaseDuration", "15s"),
            key.format("renewDeadline", "10s"),
            key.format("retryPeriod", "2s"),
        ),
    )
    run.add_argument(
        "--http-addr",
        type=_listen_address,
        default=RunOptions.http_addr,
        metavar="ADDR",
        help=f"/healthz, /readyz and /metrics (default {RunOptions.http_addr})",
    )
    run.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    run.add_argument(
        "--status-controller",
        choices=["on", "off", "only"],
        default="on",
        help=(
            "the PodGroup and ElasticQuota status controller: beside the scheduler (on, the "
            "default), not at all (off), or alone without scheduling (only)"
        ),
    )
    run.add_argument(
        "--sync-timeout",
        type=lambda text: _seconds(text).total_seconds(),
        default=RunOptions.sync_timeout,
        metavar="SECONDS",
        help="give up start-up (exit 1) when the cluster has not answered for this long; the "
        f"error says which kinds and why (default {RunOptions.sync_timeout:g}); until then an "
        "unreachable cluster is retried, one line per round",
    )
    add_log_options(run)
    run.set_defaults(func=_cmd_run)


def _seconds(text: str) -> timedelta:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0 (got {text!r})")
    return timedelta(seconds=value)


def _listen_address(text: str) -> str:
    from controllers.runtime.http import parse_address

    try:
        parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


# --- configuration ------------------------------------------------------------------------------


def read_config(path: Path | None) -> SchedulerConfig:
    """The configuration file (None: every default), checked against the plugin registry;
    a problem is a CliError naming the file and the field."""
    from controllers.kube.yamlfiles import YamlFileError, read_single_document
    from plugins.pods import POD_PLUGINS

    if path is None:
        return load_config(None, POD_PLUGINS)
    try:  # the guards of every file we read (nesting, aliases), one line naming the file
        doc = read_single_document(path)
    except YamlFileError as exc:
        raise CliError(str(exc)) from None
    try:
        config = load_config(doc, POD_PLUGINS)
        scheduler_profiles(config)  # every profile builds: plugins at their points, args
    except ConfigError as exc:
        raise CliError("\n".join(f"{path}: {line}" for line in str(exc).splitlines())) from None
    return config


def scheduler_profiles(config: SchedulerConfig) -> tuple[Profile, ...]:
    """The profiles of the built-in plugins (`plugins.pods`) with their defaults."""
    from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS

    return build_profiles(
        config, POD_PLUGINS, defaults=DEFAULT_PLUGINS, default_weights=DEFAULT_SCORE_WEIGHTS
    )


# --- simulate -----------------------------------------------------------------------------------


# --- run ----------------------------------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    config = read_config(args.config)
    if args.scheduler_name:
        try:
            config = renamed(config, args.scheduler_name)
        except ConfigError as exc:
            raise CliError(f"scheduler run: {exc}") from None
    lease = config.leader_election
    try:  # the flags given override the file's leaderElection timings
        duration, renew, retry = lease_timing(args).applied(
            lease.lease_duration, lease.renew_deadline, lease.retry_period
        )
    except ValueError as exc:
        raise CliError(f"scheduler run: {exc}") from None
    timed = replace(lease, lease_duration=duration, renew_deadline=renew, retry_period=retry)
    config = replace(config, leader_election=timed)
    explicit = bool(args.kubeconfig or args.context or os.environ.get("KUBECONFIG"))
    # --kubelet simulates an embedded server's kubelets: it asks for one, as --embedded does,
    # unless a cluster is named explicitly (then it is refused below).
    embedded = args.embedded or (args.kubelet and not explicit)
    found = _cluster_configured(args) or bool(config.kubeconfig)
    if not (embedded or found):
        print(
            "no cluster configured (no --kubeconfig, $KUBECONFIG unset, not in a pod, no "
            "~/.kube/config): starting an embedded API server (--embedded asks for it "
            "explicitly)",
            file=sys.stderr,
            flush=True,
        )
    options = RunOptions(
        config=config,
        kubeconfig=args.kubeconfig,
        context=args.context,
        embedded=embedded or not found,
        kubelet=args.kubelet,
        leader_elect=args.leader_elect,
        http_addr=args.http_addr,
        config_path=str(args.config) if args.config else None,
        status_controller=args.status_controller,
        sync_timeout=args.sync_timeout,
    )
    if options.kubelet and not options.embedded:
        raise CliError("scheduler run: --kubelet simulates kubelets of an embedded server only")
    from controllers.runtime.logs import setup_logging

    setup_logging(args.log_format, args.log_level)
    # Imported here: the offline verbs should not pay for the controller and its client.
    try:
        module = importlib.import_module("controllers.addons.scheduler")
    except ModuleNotFoundError as exc:
        if exc.name != "controllers.addons.scheduler":
            raise
        module = None
    if getattr(module, "run_scheduler", None) is None:
        raise CliError("scheduler run: this build has no scheduler controller")
    return asyncio.run(_run(options))


def _cluster_configured(args: argparse.Namespace) -> bool:
    """A cluster to schedule for, as `placement run` finds a hub: flags, $KUBECONFIG, the
    pod's service account, ~/.kube/config; otherwise an embedded API server is started."""
    from controllers.kube.config import find_access

    kubeconfig = Path(args.kubeconfig) if args.kubeconfig else None
    return find_access(kubeconfig, args.context) is not None


async def _run(options: RunOptions) -> int:
    """The scheduler, with an embedded API server started first when asked for (the addons
    room may not import the embedded server, so the command line owns it and passes its URL)."""
    from controllers.addons.scheduler import run_scheduler
    from controllers.addons.scheduler_options import scheduler_options

    scheduler = scheduler_options(options)
    if not options.embedded:
        return await run_scheduler(scheduler)
    from controllers.embedded.apiserver import EmbeddedApiServer
    from controllers.embedded.kubelet import KubeletOptions

    server = EmbeddedApiServer(kubelet=KubeletOptions() if options.kubelet else None)
    try:
        url = await server.start()
    except OSError as exc:
        print(f"placement scheduler run: error: embedded API server: {exc}", file=sys.stderr)
        return 1
    folder = Path(tempfile.mkdtemp(prefix="ocm-pod-scheduler-"))
    try:
        kubeconfig = server.kubeconfig(folder / "kubeconfig")
        kubelets = " with simulated kubelets" if options.kubelet else ""
        print(f"embedded API server{kubelets} listening on {url}", flush=True)
        print(f"export KUBECONFIG={kubeconfig}", flush=True)
        return await run_scheduler(replace(scheduler, url=url, embedded=False))
    finally:
        await server.stop()
        shutil.rmtree(folder, ignore_errors=True)
