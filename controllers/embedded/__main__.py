"""`python -m controllers.embedded [--port N] [--load DIR]`: run the embedded API server until
interrupted, after printing where it listens and a kubeconfig that points kubectl at it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import tempfile
from pathlib import Path

from controllers.embedded.apiserver import EmbeddedApiServer, SnapshotError

__all__ = ["main"]


async def _serve(port: int, snapshot: Path | None, kubeconfig: Path | None) -> int:
    server = EmbeddedApiServer(port=port, snapshot=snapshot)
    try:
        url = await server.start()
    except (SnapshotError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if kubeconfig is None:
        kubeconfig = Path(tempfile.mkdtemp(prefix="ocm-embedded-")) / "kubeconfig"
    server.kubeconfig(kubeconfig)
    print(f"embedded API server listening on {url}", flush=True)
    print(f"export KUBECONFIG={kubeconfig}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controllers.embedded", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--load", type=Path, help="folder of manifests to store at start")
    parser.add_argument("--kubeconfig", type=Path, help="where to write the kubeconfig")
    args = parser.parse_args(argv)
    return asyncio.run(_serve(args.port, args.load, args.kubeconfig))


if __name__ == "__main__":
    sys.exit(main())
