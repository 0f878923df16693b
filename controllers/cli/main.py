"""The `placement` command line (kubectl conventions: `-f` files or folders, exit code 0 on
success, 1 on an error, 2 on a usage error, errors on stderr naming file, object and field).

This module is the top-level parser and `main`, the console script's entry point; each verb
lives in its own module with its options and its handler (`validate`, `simulate`, `explain`,
`run`, `demo`), and what they share in `controllers.cli.common`.

A stop asked for in the first seconds (Ctrl-C, SIGTERM), while the verbs' modules are still
being imported or before a verb has its own signal handling, ends the command quietly with exit
code 0, as the long-running verbs end after a signal: `main` catches both signals before it
imports anything heavy, which is why the verbs are imported inside `build_parser`, and only
the one being run (`VERBS`), so that each command starts without the others' imports.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from controllers.cli.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "VERBS", "CliError", "build_parser", "main"]

_STOPS = (signal.SIGINT, signal.SIGTERM)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("ocm-placement")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


# Each verb, in the order `placement --help` lists them: its module (the parser and the
# handler) and the line `--help` shows, which must be the one the module gives it (a test
# compares them). Only the module of the verb being run is imported: `placement --help` and a
# usage error import none, `placement validate` never imports the controller or the client.
VERBS: dict[str, tuple[str, str]] = {
    "validate": (
        "controllers.cli.validate",
        "check manifests against the API models and CRD rules",
    ),
    "simulate": (
        "controllers.cli.simulate",
        "schedule every Placement in the manifests, offline",
    ),
    "explain": ("controllers.cli.explain", "show why a Placement selects what it selects"),
    "run": ("controllers.cli.run", "run the placement controller"),
    "demo": (
        "controllers.cli.demo",
        "embedded hub + controller + sample fleet: show the decisions, then a live change",
    ),
    "scheduler": (
        "controllers.cli.scheduler",
        "the local-cluster pod scheduler: simulate offline, or run against a cluster",
    ),
    "webhook": (
        "controllers.cli.webhook",
        "the spot/on-demand mutating webhook: run it, or mint its certificates",
    ),
}


class _Version(argparse.Action):
    """`--version`: the installed version, looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def build_parser(only: str | None = None, *, every: bool = True) -> argparse.ArgumentParser:
    """The `placement` parser. With `every`, each verb's full parser (its module imported);
    else only verb `only`'s, the others listed by name and help line alone."""
    parser = argparse.ArgumentParser(
        prog="placement",
        description="OCM-compatible multi-cluster placement controller and tools.",
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for name, (module, help_line) in VERBS.items():
        if every or name == only:
            importlib.import_module(module).add_parser(commands)
        else:
            commands.add_parser(name, help=help_line)
    return parser


def _verb(argv: Sequence[str]) -> str | None:
    """The verb `argv` names: its first word that is not an option, when it is one."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in VERBS else None


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
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_verb(words), every=False)
    args = parser.parse_args(words)
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
