"""`python -m controllers.embedded [--port N] [--load DIR] [--kubelet [--kubelet-start-delay S]
[--kubelet-grace-cap S]]`: run the embedded API server until interrupted, after printing where
it listens and a kubeconfig that points kubectl at it (in a temporary folder removed at exit
unless `--kubeconfig` says where). `--kubelet` simulates the nodes' kubelets (bound pods run,
nodes are Ready, deleted pods go after their grace period)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from controllers.embedded.apiserver import EmbeddedApiServer, SnapshotError
from controllers.embedded.kubelet import KubeletOptions

__all__ = ["main"]


async def _serve(
    port: int, snapshot: Path | None, kubeconfig: Path | None, kubelet: KubeletOptions | None
) -> int:
    # Caught before anything is printed: whoever reads the kubeconfig line may stop us at once.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    server = EmbeddedApiServer(port=port, snapshot=snapshot, kubelet=kubelet)
    try:
        await server.start()
    except (SnapshotError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    folder = None
    if kubeconfig is None:
        folder = Path(tempfile.mkdtemp(prefix="ocm-embedded-"))
        kubeconfig = folder / "kubeconfig"
    try:
        return await _until_stopped(server, kubeconfig, kubelet, stop)
    finally:
        await server.stop()
        if folder is not None:  # ours: removed at exit, as `placement run` removes its own
            shutil.rmtree(folder, ignore_errors=True)


async def _until_stopped(
    server: EmbeddedApiServer, kubeconfig: Path, kubelet: KubeletOptions | None, stop: asyncio.Event
) -> int:
    url = server.url
    server.kubeconfig(kubeconfig)
    print(f"embedded API server listening on {url}", flush=True)
    if kubelet is not None:
        cap = "none" if kubelet.grace_cap is None else f"{kubelet.grace_cap:g}s"
        print(
            f"kubelet simulation: pods start {kubelet.start_delay:g}s after binding, "
            f"grace period cap {cap}",
            flush=True,
        )
    print(f"export KUBECONFIG={kubeconfig}", flush=True)
    await stop.wait()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controllers.embedded", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--load", type=Path, help="folder of manifests to store at start")
    parser.add_argument("--kubeconfig", type=Path, help="where to write the kubeconfig")
    parser.add_argument(
        "--kubelet",
        action="store_true",
        help="simulate kubelets: bound pods run, nodes are Ready, deleted pods go after their "
        "grace period",
    )
    parser.add_argument(
        "--kubelet-start-delay",
        type=_seconds,
        default=0.5,
        metavar="S",
        help="seconds from a pod's binding to its running (default 0.5)",
    )
    parser.add_argument(
        "--kubelet-grace-cap",
        type=_seconds,
        default=None,
        metavar="S",
        help="longest wait of a pod's graceful deletion, in seconds (default: its own period)",
    )
    args = parser.parse_args(argv)
    if not args.kubelet and (args.kubelet_start_delay != 0.5 or args.kubelet_grace_cap is not None):
        parser.error("--kubelet-start-delay and --kubelet-grace-cap need --kubelet")
    kubelet = (
        KubeletOptions(args.kubelet_start_delay, args.kubelet_grace_cap) if args.kubelet else None
    )
    # Every stored object is a long-lived dict: young collections less often, as the
    # controller's `run` has them (controllers.cli.run.tune_gc).
    gc.set_threshold(50_000, 50, 100)
    return asyncio.run(_serve(args.port, args.load, args.kubeconfig, kubelet))


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds (got {text})")
    return value


if __name__ == "__main__":
    sys.exit(main())
