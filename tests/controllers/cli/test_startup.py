"""The command starts without the imports of the verbs it does not run: `placement --help`
(and a usage error) imports no verb module, a verb imports its own. Start-up times are measured
in perf/, not asserted here; what is asserted is which modules a command imports."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from controllers.cli.main import VERBS, build_parser, main

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("numpy", "pydantic", "kubernetes_asyncio", "aiohttp", "yaml", "cel_expr_python")


def imported_by(*argv: str) -> set[str]:
    """The modules a fresh interpreter holds after `placement ARGV` (its exit swallowed)."""
    code = (
        "import contextlib, io, json, sys\n"
        "from controllers.cli.main import main\n"
        "quiet = io.StringIO()\n"
        "with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):\n"
        "    try:\n"
        f"        main({list(argv)!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout))


def verb_modules(modules: set[str]) -> set[str]:
    return modules & {module for module, _ in VERBS.values()}


def test_placement_help_and_a_usage_error_import_no_verb_and_nothing_heavy() -> None:
    for argv in (["--help"], ["no-such-verb"], []):
        modules = imported_by(*argv)
        assert verb_modules(modules) == set(), argv
        assert {m for m in modules if m.split(".")[0] in HEAVY} == set(), argv


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
def test_a_verb_imports_its_own_module_and_no_other_verb(verb: str) -> None:
    modules = imported_by(verb, "--help")
    # demo runs the controller and the embedded hub: it may import run's module
    allowed = {VERBS[verb][0]} | ({VERBS["run"][0]} if verb == "demo" else set())
    assert VERBS[verb][0] in modules
    assert verb_modules(modules) <= allowed


def test_the_verb_table_says_what_each_verb_module_says() -> None:
    full = build_parser()
    (commands,) = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
    listed = {c.dest: c.help for c in commands._choices_actions}
    assert listed == {name: help_line for name, (_, help_line) in VERBS.items()}


def help_of(argv: list[str], parser: argparse.ArgumentParser | None = None) -> str:
    out = io.StringIO()
    run = main if parser is None else parser.parse_args
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        run(argv)
    return out.getvalue()


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
def test_each_verbs_help_is_the_full_parsers(verb: str) -> None:
    assert help_of([verb, "--help"]) == help_of([verb, "--help"], build_parser())


def test_the_top_level_help_lists_every_verb_as_the_full_parser_does() -> None:
    assert help_of(["--help"]) == help_of(["--help"], build_parser())


def test_version_is_looked_up_when_asked() -> None:
    out = help_of(["--version"])
    assert out.startswith("placement ") and len(out.split()) == 2
    assert out.count("\n") == 1
