"""`placement run`: the controller against a hub, or against an embedded hub when none is given.

Which hub: `--kubeconfig` (and `--context`), else `$KUBECONFIG`, else the in-cluster service
account when running in a pod, else an embedded API server on 127.0.0.1 serving the CRDs of
`config/crds` (optionally preloaded with `--load`), whose kubeconfig is printed so kubectl can
reach it. Runs until SIGTERM or SIGINT (clean stop) or until leadership is lost (exit 1, so the
Deployment restarts it as a standby).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import signal
import socket
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from controllers.cli.common import CliError
from controllers.kube.errors import ApiError
from controllers.runtime.logs import setup_logging

# The hub, the embedded server and the client are imported in the functions that use them: the
# command's parser imports this module, and the offline verbs should not pay for them.
if TYPE_CHECKING:
    from controllers.cli.common import Subparsers
    from controllers.embedded.apiserver import EmbeddedApiServer
    from controllers.kube.config import ClusterAccess

__all__ = ["RunOptions", "add_parser", "lease_namespace", "run_controller", "tune_gc"]

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_LEASE_NAMESPACE = "open-cluster-management-hub"


@dataclass(frozen=True)
class RunOptions:
    kubeconfig: Path | None = None
    context: str | None = None
    embedded: bool = False
    load: Path | None = None
    workers: int = 4
    leader_elect: bool = False
    lease_namespace: str | None = None
    http_addr: str = "127.0.0.1:8080"
    resync: float = 600.0


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


GC_THRESHOLDS = (50_000, 50, 100)


def tune_gc() -> None:
    """Collect young objects less often. The controller keeps hundreds of thousands of
    long-lived models (every cluster, placement, decision and score) and allocates many small
    objects per request; with Python's default thresholds the collector took a third of a
    5,000 x 10,000 cold start (perf/RESULTS.md). Process-wide, so only entry points call it."""
    gc.set_threshold(*GC_THRESHOLDS)


def _access(options: RunOptions) -> ClusterAccess | None:
    """How to reach the hub; None: start an embedded one."""
    from controllers.kube.config import ClusterAccess

    if options.embedded:
        return None
    if options.kubeconfig is not None:
        return ClusterAccess(kubeconfig=options.kubeconfig, context=options.context)
    if os.environ.get("KUBECONFIG"):
        return ClusterAccess(context=options.context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return ClusterAccess(in_cluster=True)
    return None


async def _embedded(load: Path | None) -> tuple[EmbeddedApiServer, ClusterAccess]:
    from controllers.embedded.apiserver import EmbeddedApiServer
    from controllers.kube.config import ClusterAccess

    server = EmbeddedApiServer(snapshot=load)
    url = await server.start()
    kubeconfig = server.kubeconfig(Path(tempfile.mkdtemp(prefix="ocm-placement-")) / "kubeconfig")
    print(f"embedded hub listening on {url}", flush=True)
    print(f"export KUBECONFIG={kubeconfig}", flush=True)
    return server, ClusterAccess(url=url)


async def run_controller(options: RunOptions) -> int:
    """Run until a signal (exit 0) or lost leadership (exit 1)."""
    from controllers.embedded.apiserver import SnapshotError
    from controllers.hub.manager import CONTROLLER_NAME, Manager, ManagerOptions
    from controllers.kube.gateway import Gateway
    from controllers.runtime.leader import LeaderConfig

    access = _access(options)
    server: EmbeddedApiServer | None = None
    if access is None:
        try:
            server, access = await _embedded(options.load)
        except (SnapshotError, OSError) as exc:
            print(f"error: embedded hub: {exc}", file=sys.stderr)
            return 1
    elif options.load is not None:
        print("error: --load only applies to the embedded hub", file=sys.stderr)
        return 1
    leader = None
    if options.leader_elect:
        identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        leader = LeaderConfig(
            name=CONTROLLER_NAME,
            namespace=lease_namespace(options.lease_namespace),
            identity=identity,
        )
    tune_gc()
    gateway = await Gateway.connect(access)
    manager = Manager(
        gateway,
        ManagerOptions(
            workers=options.workers,
            resync=options.resync,
            http_addr=options.http_addr,
            leader=leader,
        ),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    code = 0
    try:
        await manager.start()
        print(f"controller running; http on {manager.http_address}", flush=True)
        stopping = asyncio.create_task(stop.wait())
        lost = asyncio.create_task(manager.wait_stopped())
        await asyncio.wait({stopping, lost}, return_when=asyncio.FIRST_COMPLETED)
        code = 1 if lost.done() else 0
        for task in (stopping, lost):
            task.cancel()
    except (ApiError, OSError, TimeoutError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 1
    finally:
        await manager.stop()
        await gateway.close()
        if server is not None:
            await server.stop()
    return code


def add_parser(subparsers: Subparsers) -> None:
    """Add `run` to the command's subparsers."""
    run = subparsers.add_parser(
        "run",
        help="run the placement controller",
        description=(
            "Run the hub placement controller: watch Placements, ManagedClusters, sets, "
            "bindings, PlacementDecisions and AddOnPlacementScores, and write decisions. The "
            "hub is --kubeconfig (and --context), else $KUBECONFIG, else the in-cluster "
            "service account, else an embedded API server on 127.0.0.1 whose kubeconfig is "
            "printed. Stops cleanly on SIGTERM or SIGINT."
        ),
    )
    run.add_argument("--kubeconfig", type=Path, metavar="FILE", help="kubeconfig of the hub")
    run.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    run.add_argument(
        "--embedded", action="store_true", help="start an embedded hub even if one is configured"
    )
    run.add_argument(
        "--load", type=Path, metavar="DIR", help="embedded hub only: manifests to store at start"
    )
    run.add_argument("--workers", type=int, default=4, help="concurrent reconciles (default 4)")
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
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="/healthz, /readyz, /metrics and /debug/placements (default 127.0.0.1:8080; "
        "':8080' listens on every interface)",
    )
    run.add_argument(
        "--resync",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="schedule every placement again this often (default 600, as OCM)",
    )
    run.add_argument("--log-format", choices=["text", "json"], default="text")
    run.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default="INFO")
    run.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise CliError(f"--workers: must be at least 1 (got {args.workers})")
    if args.resync <= 0:
        raise CliError(f"--resync: must be positive (got {args.resync})")
    from controllers.hub.reconciler import LOG_SUBJECT

    setup_logging(args.log_format, args.log_level, subject=LOG_SUBJECT)
    options = RunOptions(
        kubeconfig=args.kubeconfig,
        context=args.context,
        embedded=args.embedded,
        load=args.load,
        workers=args.workers,
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        http_addr=args.http_addr,
        resync=args.resync,
    )
    return asyncio.run(run_controller(options))
