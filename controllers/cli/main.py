"""The `placement` command line (kubectl conventions: `-f` files or folders, exit code 0 on
success, 1 on an error, 2 on a usage error, errors on stderr naming file, object and field).

This module is the top-level parser and `main`, the console script's entry point; each verb
lives in its own module with its options and its handler (`validate`, `simulate`, `explain`,
`run`, `demo`), and what they share in `controllers.cli.common`.

A stop asked for in the first seconds (Ctrl-C, SIGTERM), while the verbs' modules are still
being imported or before a verb has its own signal handling, ends the command quietly with exit
code 0, as the long-running verbs end after a signal: `main` catches both signals before it
imports anything heavy, which is why the verbs are imported inside `build_parser`.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from controllers.cli.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "CliError", "build_parser", "main"]

_STOPS = (signal.SIGINT, signal.SIGTERM)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("ocm-placement")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    from controllers.cli import demo, explain, run, scheduler, simulate, validate, webhook

    parser = argparse.ArgumentParser(
        prog="placement",
        description="OCM-compatible multi-cluster placement controller and tools.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    # In the order `placement --help` lists them.
    for verb in (validate, simulate, explain, run, demo, scheduler, webhook):
        verb.add_parser(commands)
    return parser


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(EXIT_OK)


@contextmanager
def _quiet_stops() -> Iterator[None]:
    """Ctrl-C and SIGTERM end the command with exit code 0 and no traceback (a verb that runs
    an event loop installs its own handlers meanwhile); the previous handlers afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _stop) for sig in _STOPS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def main(argv: Sequence[str] | None = None) -> int:
    with _quiet_stops():
        try:
            return _main(argv)
        except KeyboardInterrupt:  # raised by asyncio.run on Ctrl-C inside a loop
            return EXIT_OK


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    placement = getattr(args, "placement", None)
    if placement is not None and not all(placement.partition("/")[::2]):
        parser.error(f"--placement: expected NAMESPACE/NAME (got {placement!r})")
    try:
        code: int = args.func(args)
    except CliError as exc:
        print(exc, file=sys.stderr)
        return EXIT_ERROR
    return code


if __name__ == "__main__":
    sys.exit(main())
