"""The container image can be built: every `COPY` source of the Dockerfile is inside the build
context that `.dockerignore` leaves, the context carries every package and data folder the
wheel is built from, and the image's entry point is a console script of the package that parses
the command the image runs by default.

No docker daemon is needed: the context is computed with `pathspec`'s `GitIgnoreSpec` (the
matcher hatchling itself uses for its include and exclude rules) from `.dockerignore`'s lines.
Docker matches each pattern against the path relative to the context root (Go's
`filepath.Match`, with `**` and `!` exceptions, the last matching line winning, a matched
directory taking its contents along), which is gitignore's wildcard syntax anchored at the
root: every pattern is read with a leading `/` unless it starts with `**`.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from importlib import import_module
from pathlib import Path

import pathspec
import pytest
import yaml

from controllers.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"


def ignore_spec(text: str) -> pathspec.GitIgnoreSpec:
    """`.dockerignore`'s lines as a gitignore-style spec anchored at the context root."""
    lines = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.removeprefix("!").lstrip("/")
        if not pattern.startswith("**"):
            pattern = "/" + pattern
        lines.append(("!" if negated else "") + pattern)
    return pathspec.GitIgnoreSpec.from_lines(lines)


def context_files(root: Path) -> set[str]:
    """The files (relative to `root`, POSIX) that docker would send as the build context."""
    spec = ignore_spec((root / ".dockerignore").read_text(encoding="utf-8"))
    every = (
        str(path.relative_to(root).as_posix())
        for path in root.rglob("*")
        if path.is_file() and ".git" not in path.relative_to(root).parts
    )
    return {name for name in every if not spec.match_file(name)}


def instructions(text: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, arguments), continuation lines joined."""
    joined = text.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def copy_sources() -> list[str]:
    """The context paths the Dockerfile's COPY instructions read (not `--from` stages)."""
    sources: list[str] = []
    for keyword, rest in instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if keyword not in ("COPY", "ADD"):
            continue
        words = shlex.split(rest)
        if any(word.startswith("--from") for word in words):
            continue
        sources.extend(word for word in words[:-1] if not word.startswith("--"))
    return sources


def exec_form(keyword: str) -> list[str]:
    """The JSON (exec) form of ENTRYPOINT or CMD."""
    (value,) = [rest for kw, rest in instructions(DOCKERFILE.read_text()) if kw == keyword]
    parsed = json.loads(value)
    assert isinstance(parsed, list), f"{keyword} must be in exec form"
    return [str(word) for word in parsed]


@pytest.fixture(scope="module")
def context() -> set[str]:
    return context_files(ROOT)


def test_the_matcher_reads_dockerignore_as_docker_does() -> None:
    spec = ignore_spec("*\n!apis/\n**/__pycache__\n")
    assert not spec.match_file("apis/core.py")
    assert spec.match_file("apis/__pycache__/core.cpython-311.pyc")
    assert spec.match_file("tests/apis/test_core.py")  # `!apis/` is anchored at the root
    assert spec.match_file("README.md")


def test_every_copy_source_is_in_the_build_context(context: set[str]) -> None:
    sources = copy_sources()
    assert sources
    for source in sources:
        inside = {name for name in context if name == source or name.startswith(source + "/")}
        assert inside, f"COPY {source}: .dockerignore leaves nothing of it in the build context"
        on_disk = {
            str(path.relative_to(ROOT).as_posix())
            for path in (ROOT / source).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        } or {source}
        assert on_disk <= inside, f"COPY {source}: left out: {sorted(on_disk - inside)[:5]}"


def test_the_context_holds_what_the_wheel_is_built_from(context: set[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    hook = wheel["hooks"]["custom"]  # hatch_build.py: the packages it moves, the data it adds
    readme = project["project"]["readme"]
    needed = [
        *wheel["packages"],
        *hook["packages"],
        *hook["data"],
        hook.get("path", "hatch_build.py"),
        "pyproject.toml",
        readme,
    ]
    copied = copy_sources()
    for path in needed:
        assert path in copied, f"the Dockerfile does not COPY {path}"
        assert any(name == path or name.startswith(path + "/") for name in context), path


def test_the_entry_point_is_a_console_script_that_parses_the_default_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (command,) = exec_form("ENTRYPOINT")
    target = project["project"]["scripts"][command]
    module, _, function = target.partition(":")
    assert callable(getattr(import_module(module), function))
    args = build_parser().parse_args(exec_form("CMD"))
    assert args.command == "run"


def containers(node: object) -> list[dict[str, object]]:
    """Every container running this project's image anywhere in a manifest (Deployments, and
    those inside AddOnTemplates' manifests)."""
    found: list[dict[str, object]] = []
    if isinstance(node, dict):
        image = node.get("image")
        if isinstance(image, str) and image.split(":")[0].endswith("/placement"):
            found.append(node)
        for value in node.values():
            found += containers(value)
    elif isinstance(node, list):
        for value in node:
            found += containers(value)
    return found


def test_every_container_of_the_image_in_config_runs_a_command_that_parses() -> None:
    seen = 0
    for path in sorted((ROOT / "config").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            for container in containers(doc):
                args = container.get("args") or exec_form("CMD")
                assert isinstance(args, list)
                build_parser().parse_args([str(a) for a in args])  # SystemExit(2) if not
                seen += 1
    assert seen >= 4  # the hub controller, the pod scheduler, the webhook, and their templates
