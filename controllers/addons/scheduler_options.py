"""How `placement scheduler run` is configured: its options, the configuration file read and
checked, the profiles it builds over the built-in plugins, and which cluster it talks to. Split
from `controllers.addons.scheduler` (the controller itself) so that module stays about the
scheduling loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from controllers.kube.config import DEFAULT_KUBECONFIG, ClusterAccess
from controllers.kube.yamlfiles import YamlFileError, read_single_document
from controllers.runtime.leader import LeaderConfig
from placement.pods.config.scheduler_config import (
    DEFAULT_SCHEDULER_NAME,
    ConfigError,
    RunOptions,
    SchedulerConfig,
    build_profiles,
    load_config,
    renamed,
)
from placement.pods.framework.interface import Profile
from plugins.pods import DEFAULT_PLUGINS, DEFAULT_SCORE_WEIGHTS, POD_PLUGINS

__all__ = [
    "DEFAULT_HTTP_ADDR",
    "SchedulerOptions",
    "cluster_access",
    "configured",
    "effective_config",
    "leader_config",
    "load_scheduler_config",
    "scheduler_options",
    "scheduler_profiles",
]

DEFAULT_HTTP_ADDR = "127.0.0.1:10251"
"""kube-scheduler's old insecure port: probes and metrics, on loopback unless asked."""


@dataclass(frozen=True)
class SchedulerOptions:
    """How `placement scheduler run` runs. `scheduler_name` overrides the configuration's
    `schedulerName` unless left at the default."""

    kubeconfig: Path | None = None
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    leader_elect: bool = False
    http_addr: str | None = DEFAULT_HTTP_ADDR
    config: Path | None = None
    context: str | None = None
    url: str | None = None
    """An API server by URL, no credentials (the embedded server of the demo and the tests)."""
    bind_concurrency: int = 32
    """Binding (and other) writes in flight at once."""
    batch_seconds: float = 0.05
    """A scheduling pass yields to the event loop after this long."""
    sync_timeout: float = 60.0
    stop_timeout: float = 0.5
    """How long a stop waits for the writes on the wire (then cancelled: their pods stay
    pending, or are bound if the request had landed)."""
    lease_namespace: str | None = None
    """Overrides the configuration's `leaderElection.leaseNamespace`."""
    embedded: bool = False
    """Asks for an embedded API server, which this module cannot start (the addons room does
    not import the embedded server): the caller starts it and passes `url`."""
    kubelet: bool = False
    loaded: SchedulerConfig | None = None
    """The configuration already read (the command line reads `--config` itself)."""
    status_controller: str = "on"
    """`on`: the status controller (`controllers.addons.status`) runs beside the scheduler, with
    its own client and (with `leader_elect`) its own Lease `<lease>-status`; `off`: not;
    `only`: it runs alone, serving the HTTP endpoint, and nothing is scheduled."""


def load_scheduler_config(path: Path | None) -> SchedulerConfig:
    """The configuration file checked (ConfigError naming the file and the field), or the
    defaults without one."""
    if path is None:
        return load_config(None, POD_PLUGINS)
    try:  # the guards of every file we read (nesting, aliases), one line naming the file
        doc = read_single_document(path)
    except YamlFileError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return load_config(doc, POD_PLUGINS)
    except ConfigError as exc:
        raise ConfigError("\n".join(f"{path}: {line}" for line in str(exc).splitlines())) from None


def scheduler_profiles(config: SchedulerConfig) -> tuple[Profile, ...]:
    """The profiles of `config` over the built-in plugins (one per scheduler name)."""
    return build_profiles(
        config, POD_PLUGINS, defaults=DEFAULT_PLUGINS, default_weights=DEFAULT_SCORE_WEIGHTS
    )


def cluster_access(options: SchedulerOptions) -> ClusterAccess:
    """The explicit URL, else the kubeconfig (flag or $KUBECONFIG), else the in-cluster service
    account in a pod, else ~/.kube/config."""
    if options.url:
        return ClusterAccess(url=options.url)
    if options.kubeconfig is not None or options.context or os.environ.get("KUBECONFIG"):
        return ClusterAccess(kubeconfig=options.kubeconfig, context=options.context)
    loaded = options.loaded.kubeconfig if options.loaded is not None else None
    if loaded:  # the KubeSchedulerConfiguration's clientConnection.kubeconfig
        return ClusterAccess(kubeconfig=Path(loaded))
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return ClusterAccess(in_cluster=True)
    return ClusterAccess()


def effective_config(options: SchedulerOptions) -> SchedulerConfig:
    """The configuration `options` run with: the one already read, else the file's, with
    `scheduler_name` applied unless left at the default."""
    if options.loaded is not None:
        return options.loaded
    config = load_scheduler_config(options.config)
    named = options.scheduler_name != DEFAULT_SCHEDULER_NAME or options.config is None
    if named and options.scheduler_name not in config.scheduler_names:
        config = renamed(config, options.scheduler_name)
    return config


def scheduler_options(options: SchedulerOptions | RunOptions) -> SchedulerOptions:
    """`SchedulerOptions` as they are, or made from the command line's `RunOptions` (whose
    configuration is read already, `--scheduler-name` applied)."""
    if isinstance(options, SchedulerOptions):
        return options
    return SchedulerOptions(
        kubeconfig=Path(options.kubeconfig) if options.kubeconfig else None,
        context=options.context,
        scheduler_name=options.config.scheduler_name,
        leader_elect=options.leader_elect,
        http_addr=options.http_addr,
        config=Path(options.config_path) if options.config_path else None,
        embedded=options.embedded,
        kubelet=options.kubelet,
        loaded=options.config,
        status_controller=options.status_controller,
        sync_timeout=options.sync_timeout,
    )


def configured(options: SchedulerOptions) -> bool:
    """Whether `options` (or the environment) name a cluster to talk to."""
    return bool(
        options.url
        or options.kubeconfig
        or options.context
        or os.environ.get("KUBECONFIG")
        or os.environ.get("KUBERNETES_SERVICE_HOST")
        or (options.loaded is not None and options.loaded.kubeconfig)
        or DEFAULT_KUBECONFIG.expanduser().is_file()
    )


def leader_config(
    config: SchedulerConfig, options: SchedulerOptions, suffix: str = ""
) -> LeaderConfig | None:
    """The Lease of the configuration's leader election (`suffix` for the status controller's
    own), or None when neither the file nor `--leader-elect` asks for one."""
    lease = config.leader_election
    if not (options.leader_elect or lease.leader_elect):
        return None
    return LeaderConfig(
        name=lease.lease_name + suffix,
        namespace=options.lease_namespace or lease.lease_namespace,
        lease_duration=lease.lease_duration,
        renew_deadline=lease.renew_deadline,
        retry_period=lease.retry_period,
    )
