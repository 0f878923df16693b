"""`placement run`: the controller against a hub, or against an embedded hub when none is given.

Which hub, as controller-runtime finds it (`controllers.kube.config.find_access`):
`--kubeconfig` (and `--context`), else `$KUBECONFIG` (several files merged as kubectl merges
them), else the in-cluster service account when running in a pod, else `~/.kube/config`. An
embedded API server on 127.0.0.1 serving the CRDs of `config/crds` (preloaded with `--load`)
starts when asked (`--embedded`, or `--load` alone) or when none of these exists, which one line
on stderr says; its kubeconfig is printed so kubectl can reach it (the folder of that
kubeconfig is removed at exit). Runs until SIGTERM or SIGINT or
until leadership is lost (exit 1, so the Deployment restarts it as a standby).

Exit codes: 0 after SIGTERM or SIGINT, whether it came during start-up (which stops at once) or
after (a graceful stop), as controller-runtime's managers do, so that Kubernetes does not count a
requested stop as a crash; 1 when start-up fails or leadership is lost; 2 for usage errors. A
start-up failure is one line on stderr saying what failed: the kubeconfig file or its context,
the HTTP address, the embedded hub, or which informers could not list and why.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from controllers.cli.common import EXIT_USAGE, add_log_options
from controllers.cli.lease_flags import LeaseTiming, add_lease_flags, lease_timing
from controllers.kube.errors import ApiError
from controllers.runtime import process
from controllers.runtime.logs import setup_logging

# The hub, the embedded server and the client are imported in the functions that use them: the
# command's parser imports this module, and the offline verbs should not pay for them.
if TYPE_CHECKING:
    from controllers.cli.common import Subparsers
    from controllers.embedded.apiserver import EmbeddedApiServer
    from controllers.hub.manager import Manager
    from controllers.kube.config import ClusterAccess
    from controllers.kube.gateway import Gateway

__all__ = [
    "RunOptions",
    "add_parser",
    "explicit_hub",
    "hub_access",
    "lease_namespace",
    "run_controller",
    "tune_gc",
]

log = logging.getLogger(__name__)


def tune_gc() -> None:
    """The collector as the hub controller runs it (`process.HUB_GC_THRESHOLDS`)."""
    process.tune_gc(process.HUB_GC_THRESHOLDS)


SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_LEASE_NAMESPACE = "open-cluster-management-hub"
# The debug API stays on loopback unless asked: reach it with `kubectl port-forward`.
DEFAULT_DEBUG_ADDR = "127.0.0.1:8081"


@dataclass(frozen=True)
class RunOptions:
    kubeconfig: Path | None = None
    context: str | None = None
    embedded: bool = False
    load: Path | None = None
    workers: int = 16
    leader_elect: bool = False
    lease_namespace: str | None = None
    http_addr: str = "127.0.0.1:8080"
    debug_addr: str | None = DEFAULT_DEBUG_ADDR
    resync: float = 600.0
    sync_timeout: float = 60.0
    lease: LeaseTiming = field(default_factory=LeaseTiming)


def lease_namespace(explicit: str | None) -> str:
    """The flag, else the pod's namespace (downward API or service account), else the
    default."""
    if explicit:
        return explicit
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    with contextlib.suppress(OSError):
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip()
    return DEFAULT_LEASE_NAMESPACE


NO_HUB = (
    "no hub configured (no --kubeconfig, $KUBECONFIG unset, not in a pod, no ~/.kube/config): "
    "starting an embedded hub on 127.0.0.1 (--embedded asks for it explicitly)"
)


def explicit_hub(options: RunOptions) -> bool:
    """Whether the command line or `$KUBECONFIG` names a hub (`--context` alone means the
    default kubeconfig, as for kubectl)."""
    return bool(options.kubeconfig is not None or options.context or os.environ.get("KUBECONFIG"))


def hub_access(options: RunOptions) -> ClusterAccess | None:
    """How to reach the hub; None: start an embedded one (asked for with `--embedded` or
    `--load`, or no hub found)."""
    from controllers.kube.config import find_access

    if options.embedded or options.load is not None:
        return None
    return find_access(options.kubeconfig, options.context)


class _Started:
    """What start-up has opened so far, closed in reverse by `close` however it ended."""

    def __init__(self) -> None:
        self.server: EmbeddedApiServer | None = None
        self.folder: Path | None = None
        self.gateway: Gateway | None = None
        self.manager: Manager | None = None

    async def close(self) -> None:
        if self.manager is not None:
            await self.manager.stop()
        if self.gateway is not None:
            await self.gateway.close()
        if self.server is not None:
            await self.server.stop()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


async def _embedded(load: Path | None, started: _Started) -> ClusterAccess:
    from controllers.cli.crds import CRD_DIR
    from controllers.embedded.apiserver import EmbeddedApiServer
    from controllers.kube.config import ClusterAccess

    if not CRD_DIR.is_dir():
        raise OSError(f"CRD folder {CRD_DIR} is missing (a broken install: reinstall)")
    server = EmbeddedApiServer(snapshot=load)
    url = await server.start()
    started.server = server
    started.folder = Path(tempfile.mkdtemp(prefix="ocm-placement-"))
    kubeconfig = server.kubeconfig(started.folder / "kubeconfig")
    print(f"embedded hub listening on {url}", flush=True)
    print(f"export KUBECONFIG={kubeconfig}", flush=True)
    return ClusterAccess(url=url)


async def _start(options: RunOptions, started: _Started) -> None:
    """Everything up to synced caches; what it opened is in `started`, for the caller to
    close. Raises the one-line errors `run_controller` prints."""
    from controllers.embedded.apiserver import SnapshotError
    from controllers.hub.manager import CONTROLLER_NAME, Manager, ManagerOptions
    from controllers.kube.gateway import Gateway
    from controllers.runtime.controller import StartError
    from controllers.runtime.leader import LeaderConfig

    access = hub_access(options)
    if access is None:
        if not (options.embedded or options.load is not None):
            print(NO_HUB, file=sys.stderr, flush=True)
        try:
            access = await _embedded(options.load, started)
        except (SnapshotError, OSError) as exc:
            raise StartError(f"embedded hub: {exc}") from None
    leader = None
    if options.leader_elect:
        # The identity is LeaderConfig's default: `<hostname>_<8 hex digits>`.
        duration, renew, retry = options.lease.applied(15.0, 10.0, 2.0)
        leader = LeaderConfig(
            name=CONTROLLER_NAME,
            namespace=lease_namespace(options.lease_namespace),
            lease_duration=duration,
            renew_deadline=renew,
            retry_period=retry,
        )
        server = started.server
        if server is not None and not server.store.has_namespace(leader.namespace):
            # A real hub has the Lease's namespace (config/default creates it); an embedded
            # one starts with kube-system and default only.
            from apis.core import Namespace
            from apis.meta import ObjectMeta

            server.add([Namespace(metadata=ObjectMeta(name=leader.namespace))])
    tune_gc()
    started.gateway = await Gateway.connect(access)
    started.manager = Manager(
        started.gateway,
        ManagerOptions(
            workers=options.workers,
            resync=options.resync,
            http_addr=options.http_addr,
            debug_addr=options.debug_addr,
            leader=leader,
        ),
    )
    await started.manager.start(sync_timeout=options.sync_timeout)


async def run_controller(options: RunOptions) -> int:
    """Run until a signal (exit 0) or lost leadership (exit 1). A start-up failure prints one
    line on stderr and returns 1; a signal during start-up stops it at once (exit 0)
    (`controllers.runtime.process`)."""
    from controllers.kube.config import ClusterAccessError
    from controllers.runtime.controller import StartError
    from controllers.runtime.process import run_until_signal

    started = _Started()

    async def start() -> list[Manager]:
        await _start(options, started)
        assert started.manager is not None
        return [started.manager]

    return await run_until_signal(
        start(),
        running=lambda managers: f"controller running; http on {managers[0].http_address}",
        close=started.close,
        start_errors=(StartError, ClusterAccessError, ApiError, OSError),
    )


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    """An argparse type: a number of `kind` above zero (a usage error otherwise)."""

    expected = "a whole number above 0" if kind is int else "a number above 0"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:  # also NaN
            raise argparse.ArgumentTypeError(f"expected {expected} (got {text!r})")
        return value

    return parse


def _listen_address(text: str) -> str:
    """An argparse type: `host:port`, `:port` or `[ipv6]:port`."""
    from controllers.runtime.http import parse_address

    try:
        parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_parser(subparsers: Subparsers) -> None:
    """Add `run` to the command's subparsers."""
    run = subparsers.add_parser(
        "run",
        help="run the placement controller",
        description=(
            "Run the hub placement controller: watch Placements, ManagedClusters, sets, "
            "bindings, PlacementDecisions and AddOnPlacementScores, and write decisions. The "
            "hub is --kubeconfig (and --context), else $KUBECONFIG (a:b merged as kubectl "
            "does), else the in-cluster service account, else ~/.kube/config; with none of "
            "them (or --embedded, or --load) an embedded API server on 127.0.0.1 whose "
            "kubeconfig is printed. SIGTERM or SIGINT stops it cleanly, during start-up too "
            "(exit 0); a start-up failure exits 1 with one line on stderr saying what failed."
        ),
    )
    run.add_argument("--kubeconfig", type=Path, metavar="FILE", help="kubeconfig of the hub")
    run.add_argument(
        "--context",
        metavar="NAME",
        help="kubeconfig context (default: the current one; alone: of $KUBECONFIG or "
        "~/.kube/config)",
    )
    run.add_argument(
        "--embedded", action="store_true", help="start an embedded hub even if one is configured"
    )
    run.add_argument(
        "--load",
        type=Path,
        metavar="DIR",
        help="start an embedded hub with these manifests stored (implies --embedded)",
    )
    run.add_argument(
        "--workers",
        type=_positive(int),
        default=16,
        help="concurrent reconciles (default 16: a reconcile mostly waits on its writes)",
    )
    run.add_argument(
        "--leader-elect",
        action="store_true",
        help="elect a leader over a coordination.k8s.io Lease; only the leader writes",
    )
    run.add_argument(
        "--lease-namespace",
        metavar="NS",
        help="namespace of the Lease (default: $POD_NAMESPACE, the pod's namespace, "
        "or open-cluster-management-hub)",
    )
    run.add_argument(
        "--http-addr",
        type=_listen_address,
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="/healthz, /readyz and /metrics (default 127.0.0.1:8080; "
        "':8080' listens on every interface, port 0 on a free port)",
    )
    run.add_argument(
        "--debug-addr",
        type=lambda text: _listen_address(text) if text else "",
        default=DEFAULT_DEBUG_ADDR,
        metavar="HOST:PORT",
        help=f"OCM's debug API /debug/placements/, unauthenticated: keep it on loopback and "
        f"reach it with kubectl port-forward (default {DEFAULT_DEBUG_ADDR}; '' turns it off)",
    )
    run.add_argument(
        "--resync",
        type=_positive(float),
        default=600.0,
        metavar="SECONDS",
        help="schedule every placement again this often (default 600, as OCM)",
    )
    run.add_argument(
        "--sync-timeout",
        type=_positive(float),
        default=60.0,
        metavar="SECONDS",
        help="give up start-up (exit 1) when a watched kind cannot be listed for this long; "
        "the error says which kinds and why (default 60)",
    )
    add_lease_flags(run, ("default 15s", "default 10s", "default 2s"))
    add_log_options(run)
    run.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    options = RunOptions(
        kubeconfig=args.kubeconfig,
        context=args.context,
        embedded=args.embedded,
        load=args.load,
        workers=args.workers,
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        http_addr=args.http_addr,
        debug_addr=args.debug_addr or None,
        resync=args.resync,
        sync_timeout=args.sync_timeout,
        lease=lease_timing(args),
    )
    try:
        options.lease.applied(15.0, 10.0, 2.0)
    except ValueError as exc:
        print(f"placement run: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if options.load is not None and not options.embedded and explicit_hub(options):
        # argparse's words, as every other usage error of the command.
        print(
            "placement run: error: --load only applies to the embedded hub, and a hub is "
            "configured (--kubeconfig, --context or $KUBECONFIG): add --embedded",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from controllers.hub.reconciler import LOG_SUBJECT

    setup_logging(args.log_format, args.log_level, subject=LOG_SUBJECT)
    return asyncio.run(run_controller(options))
