"""What every verb's flags share: help text on each (the `--help` of every verb says what each
flag does), `--log-level` and `--log-format` on each long-running verb with the level accepted
in any case, and the spot webhook's metrics and probes on loopback unless asked."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from controllers.cli.main import build_parser

LONG_RUNNING = {
    "run": ["run"],
    "scheduler-run": ["scheduler", "run"],
    "webhook-run": ["webhook", "run", "--tls-cert-file", "c", "--tls-key-file", "k"],
}


def options(parser: argparse.ArgumentParser, path: str = "placement") -> Iterator[tuple[str, str]]:
    """(verb, flag) of every option of every parser below `parser` that has no help text."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from options(sub, f"{path} {name}")
        elif action.help is None and not isinstance(
            action, argparse._HelpAction | argparse._VersionAction
        ):
            yield path, "/".join(action.option_strings) or action.dest


def test_every_flag_of_every_verb_has_help_text() -> None:
    assert list(options(build_parser())) == []


@pytest.mark.parametrize("argv", list(LONG_RUNNING.values()), ids=list(LONG_RUNNING))
@pytest.mark.parametrize("level", ["debug", "Info", "WARNING", "error"])
def test_long_running_verbs_take_a_log_level_in_any_case(argv: list[str], level: str) -> None:
    args = build_parser().parse_args([*argv, "--log-level", level, "--log-format", "json"])
    assert (args.log_level, args.log_format) == (level.upper(), "json")


def test_the_webhook_serves_metrics_and_probes_on_loopback_by_default() -> None:
    args = build_parser().parse_args(LONG_RUNNING["webhook-run"])
    assert args.http_addr == "127.0.0.1:8080"
