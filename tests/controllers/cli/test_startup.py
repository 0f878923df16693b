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


def tops(modules: set[str], *names: str) -> set[str]:
    """The modules of `modules` under one of the packages `names` (`apis` for `apis.meta`)."""
    return {m for m in modules if m.split(".")[0] in names or m in names}


# What each verb's `--help` may not import: the engines and models it only needs to work. The
# pod engine (numpy, `placement.pods.scheduler.engine`), the hub scheduler (`placement.scheduler`),
# the models (pydantic, `apis.*` but the plain-Python name rules) and the client.
ENGINES = ("numpy", "placement.pods.scheduler.engine", "placement.scheduler", "placement.framework")
MODELS = ("pydantic", "apis.meta", "apis.registry", "apis.cluster", "apis.placements")
CLIENT = ("kubernetes_asyncio", "aiohttp", "controllers.kube.gateway")
CHEAP_HELP: dict[tuple[str, ...], tuple[str, ...]] = {
    ("validate",): ENGINES + MODELS + CLIENT,
    ("simulate",): ENGINES + MODELS + CLIENT,
    ("explain",): ENGINES + MODELS + CLIENT,
    ("run",): ENGINES + MODELS + CLIENT,
    ("webhook", "run"): ENGINES + MODELS + CLIENT,
    ("webhook", "certs"): ENGINES + MODELS + CLIENT,
    ("demo",): ENGINES + MODELS + CLIENT,
    # the scheduler's parser shows its configuration's defaults (placement.pods.config.settings,
    # which brings the pod framework and numpy): only the client is out of reach here
    ("scheduler", "run"): CLIENT,
    ("scheduler", "simulate"): CLIENT,
}


@pytest.mark.parametrize("words", list(CHEAP_HELP), ids=[" ".join(w) for w in CHEAP_HELP])
def test_a_verbs_help_imports_no_engine_model_or_client(words: tuple[str, ...]) -> None:
    modules = imported_by(*words, "--help")
    refused = CHEAP_HELP[words]
    assert {m for m in modules if m in refused or m.split(".")[0] in refused} == set()


def test_the_top_level_help_imports_no_model_and_no_client() -> None:
    modules = imported_by("--help")
    assert tops(modules, "apis", "placement", "plugins", *CLIENT) == set()
    assert {m for m in modules if m.startswith("controllers.")} <= {
        "controllers.cli",
        "controllers.cli.main",
        "controllers.cli.exits",
    }


def test_one_model_module_does_not_import_every_kind() -> None:
    # `apis` exports its names lazily: the name rules (plain Python) and one kind's module
    # come without the others, and the package's names still resolve
    code = (
        "import json, sys\n"
        "import apis.names\n"
        "first = sorted(sys.modules)\n"
        "from apis import ManagedCluster, parse_object\n"
        "import placement.pods.cluster.requests\n"
        "print(json.dumps([first, sorted(sys.modules), ManagedCluster.KIND]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    first, after, kind = json.loads(done.stdout)
    assert kind == "ManagedCluster"
    assert tops(set(first), "pydantic") == set()
    assert "apis.placements" not in first and "apis.cluster" in after
    assert "numpy" not in after and "placement.pods.scheduler.engine" not in after


def test_the_lazy_packages_list_what_they_export() -> None:
    import apis
    import placement.pods

    for package in (apis, placement.pods):
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)
        assert set(package.__all__) <= set(dir(package))
        with pytest.raises(AttributeError):
            package.no_such_name  # noqa: B018
