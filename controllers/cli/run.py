"""`placement run`: the controller against a hub, or against an embedded hub when none is given.

Which hub: `--kubeconfig` (and `--context`), else `$KUBECONFIG`, else the in-cluster service
account when running in a pod, else an embedded API server on 127.0.0.1 serving the CRDs of
`config/crds` (optionally preloaded with `--load`), whose kubeconfig is printed so kubectl can
reach it. Runs until SIGTERM or SIGINT (clean stop) or until leadership is lost (exit 1, so the
Deployment restarts it as a standby).
"""

from __future__ import annotations

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

from controllers.embedded.apiserver import EmbeddedApiServer, SnapshotError
from controllers.hub.manager import Manager, ManagerOptions
from controllers.kube.config import ClusterAccess
from controllers.kube.errors import ApiError
from controllers.kube.gateway import Gateway
from controllers.runtime.leader import LeaderConfig

__all__ = ["RunOptions", "lease_namespace", "run_controller", "tune_gc"]

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
    server = EmbeddedApiServer(snapshot=load)
    url = await server.start()
    kubeconfig = server.kubeconfig(Path(tempfile.mkdtemp(prefix="ocm-placement-")) / "kubeconfig")
    print(f"embedded hub listening on {url}", flush=True)
    print(f"export KUBECONFIG={kubeconfig}", flush=True)
    return server, ClusterAccess(url=url)


async def run_controller(options: RunOptions) -> int:
    """Run until a signal (exit 0) or lost leadership (exit 1)."""
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
        leader = LeaderConfig(namespace=lease_namespace(options.lease_namespace), identity=identity)
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
