"""`placement webhook run` once its flags are parsed (`controllers.cli.webhook`): the cluster,
the informers, the HTTPS server and the probes, started in that order and stopped in reverse.

Which cluster, as kubectl finds it: `--kubeconfig` (and `--context`), `$KUBECONFIG`, the pod's
service account, `~/.kube/config`; with none of them one line says every place looked, exit 1
(`controllers.kube.config.looked_in`). The file, context and server chosen are logged at INFO.

The webhook answers only once its caches hold the cluster. Until then an unreachable or failing
cluster is retried, one WARNING line per round naming the kinds and why; after `--sync-timeout`
seconds one line says which kinds did not sync and why, exit 1, as `placement run` does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from controllers.cli.common import EXIT_ERROR, EXIT_OK

if TYPE_CHECKING:
    from controllers.runtime.cache import Informer

__all__ = ["cmd_run"]


def cmd_run(args: argparse.Namespace) -> int:
    from controllers.runtime.logs import setup_logging
    from controllers.runtime.process import freeze_at_exit

    setup_logging(args.log_format, args.log_level)
    freeze_at_exit()  # the exit after SIGTERM does not walk the caches
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        return EXIT_OK


async def _synced(
    informers: Sequence[Informer[Any, Any]], timeout: float, stop: asyncio.Event
) -> bool:
    """Wait for every informer's first list (True) or `stop` (False), whichever comes first;
    `StartError` after `timeout` seconds (which kinds and why)."""
    from controllers.runtime.controller import RetryRounds, sync_informers

    rounds = RetryRounds(informers)
    for informer in informers:
        informer.on_retry = rounds
    sync = asyncio.ensure_future(sync_informers(informers, timeout))
    stopping = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({sync, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if sync not in done:
        sync.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sync
        return False
    sync.result()
    return True


async def _run(args: argparse.Namespace) -> int:
    from controllers.addons.webhook import AnswerDelay, SpotWebhook, WebhookMetrics
    from controllers.addons.webhook_certs import ReloadingContext
    from controllers.addons.webhook_server import WebhookServer
    from controllers.addons.webhook_state import ClusterView, LeaseReservations
    from controllers.kube.config import find_access, looked_in
    from controllers.kube.gateway import Gateway
    from controllers.runtime.controller import StartError
    from controllers.runtime.http import HttpServer
    from placement.spot.ledger import Ledger
    from placement.spot.mutation import MutationConfig

    config = MutationConfig(
        capacity_label=args.capacity_label,
        on_demand_value=args.on_demand_value,
        spot_value=args.spot_value,
        min_available_annotation=args.annotation,
        spot_tolerations=tuple(args.spot_toleration),
    )
    try:
        tls = ReloadingContext(args.tls_cert_file, args.tls_key_file)
    except (OSError, ValueError) as exc:
        print(f"webhook: TLS certificate {args.tls_cert_file}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    access = find_access(args.kubeconfig, args.context)
    if access is None:
        print(f"webhook: no cluster to connect to: {looked_in()}", file=sys.stderr)
        return EXIT_ERROR
    try:
        gateway = await Gateway.connect(access)
    except Exception as exc:
        print(f"webhook: cannot reach the cluster: {exc}", file=sys.stderr)
        return EXIT_ERROR
    metrics = WebhookMetrics()
    gateway.observe_requests = metrics.request_observer(gateway.host)
    ledger = Ledger(ttl=args.reservation_ttl)
    view = ClusterView(gateway, ledger, config, time.time)
    identity = os.environ.get("POD_NAME") or socket.gethostname()
    shared = None if args.no_shared_count else LeaseReservations(gateway, identity)
    delay = AnswerDelay(args.fault_delay, args.fault_delay_first) if args.fault_delay else None
    webhook = SpotWebhook(
        view,
        ledger,
        config=config,
        shared=shared,
        metrics=metrics,
        deadline=args.deadline,
        delay=delay,
        recount=view.recount,
    )

    def ready() -> tuple[bool, str]:
        return (True, "caches synced") if view.synced else (False, "caches not synced")

    server = WebhookServer(webhook, tls, address=args.addr, ready=ready)
    http = HttpServer(address=args.http_addr, metrics=metrics, ready=ready, name="webhook probes")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        try:
            await http.start()
            # Answer only once the caches hold the cluster: an empty pod cache would count
            # no on-demand pod and grant places the running pods already hold.
            if not await _synced(view.informers, args.sync_timeout, stop):
                return EXIT_OK
            await server.start()
        except OSError as exc:
            print(f"webhook: cannot listen: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERROR
        except StartError as exc:
            print(f"webhook: {exc}", file=sys.stderr)
            return EXIT_ERROR
        await stop.wait()
        return EXIT_OK
    finally:
        await server.stop()
        await http.stop()
        await view.stop()
        await gateway.close()
