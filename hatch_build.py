"""The wheel's build hook: everything under one top-level package, `ocm_placement`.

The repository keeps `apis`, `placement`, `plugins` and `controllers` at its root, and its modules
import each other by those names (`from controllers.kube.gateway import Gateway`). Installed as
they are, those four names would sit at the top of site-packages, where a project with its own
`controllers` (or `placement`, `apis`, `plugins`) package shadows them or is shadowed by them.
So the wheel carries them as `ocm_placement.apis`, `ocm_placement.placement`, ... and this hook
writes each of their modules (and `ocm_placement`'s own) with the project's names rewritten:

* Import statements, found with `ast`: `from controllers.kube import x` becomes
  `from ocm_placement.controllers.kube import x`, `import apis.meta as meta` becomes
  `import ocm_placement.apis.meta as meta`. A bare `import apis.meta` (which binds `apis`) has
  no one-name equivalent, so the build refuses it and names the file and line.
* String literals that name a module of the project, found as tokens: a literal that is exactly
  a dotted module name that exists (`importlib.import_module("controllers.addons.scheduler")`,
  the lazy exports of `ocm_placement/__init__.py`), and `python -m <module>` inside a string
  (argparse `prog=`, help and docstrings), so the wheel's help names the command that works
  there (`python -m ocm_placement.controllers.embedded`). Other strings that merely look
  dotted (`"plugins.enabled"`, a config path; `"plugins.balance.per_row"`, a memo key) name no
  module and stay, and so do the strings holding one of the configured `keep-strings` (the
  header the CRD generator writes into config/, which the wheel's copies of the CRDs carry).
  tests/test_packaging.py pins the list of renamed strings, so a new one is reviewed rather
  than renamed unseen. Today: `import_module("controllers.addons.scheduler")` and the module
  name its ModuleNotFoundError is compared with (controllers/cli/scheduler.py),
  `resources.files(__package__ or "controllers.cli")` (controllers/cli/crds.py), the lazy
  exports' modules (ocm_placement/__init__.py), and `python -m` in the docstrings and argparse
  `prog` of controllers.embedded, controllers.addons.scheduler, controllers.cli,
  controllers.cli.crds and controllers.cli.addon_templates.

The CRDs and samples (`config/crds`, `config/samples`, their one canonical copy) go in as
package data of `ocm_placement.controllers.cli` (read through importlib.resources). The
editable install is untouched: it puts the repository root on sys.path, where the top-level
names are the packages themselves.

What to move and which data to carry is configured in pyproject.toml
(`[tool.hatch.build.targets.wheel.hooks.custom]`).
"""

import ast
import io
import os
import re
import shutil
import tempfile
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

TOP = "ocm_placement"
PYTHON_M = re.compile(r"(python3? -m )([A-Za-z_][\w.]*)")


@dataclass(frozen=True)
class Rewritten:
    """One string literal renamed: where, and the module name it held."""

    path: str  # relative to the root, "/"-separated
    line: int
    name: str  # the module as the source names it: "controllers.addons.scheduler"


class RewriteError(ValueError):
    """A module the rewrite cannot move without changing its meaning."""


Edit = tuple[int, int, str]  # (start, end) offsets in the source text, the text to put there


@dataclass(frozen=True)
class Rewriter:
    """Renames the project's top-level `packages` to `ocm_placement.<package>` in source text."""

    root: Path
    packages: tuple[str, ...]
    keep: tuple[str, ...] = ()  # strings holding one of these stay as they are

    def moved(self, name: str) -> bool:
        """`name` (a dotted module name) lives in one of the moved packages."""
        return name.split(".")[0] in self.packages

    def is_module(self, name: str) -> bool:
        """`name` is a module or package of the moved packages (checked on disk)."""
        parts = name.split(".")
        if not self.moved(name) or not all(p.isidentifier() for p in parts):
            return False
        base = self.root.joinpath(*parts)
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    def rewrite(self, source: str, path: str) -> tuple[str, list[Rewritten]]:
        """`source` (the module at `path`) with the moved packages renamed, and the string
        literals renamed."""
        tree = ast.parse(source, filename=path)
        lines = source.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))

        def at(row: int, col: int) -> int:
            return offsets[row - 1] + col

        imports: dict[tuple[int, int], ast.Import | ast.ImportFrom] = {}
        for found in statements(tree):
            if isinstance(found, ast.Import | ast.ImportFrom):
                # ast counts columns in UTF-8 bytes, tokenize in characters.
                encoded = lines[found.lineno - 1].encode("utf-8")
                imports[(found.lineno, len(encoded[: found.col_offset].decode("utf-8")))] = found
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        edits: list[Edit] = []
        strings: list[Rewritten] = []
        for i, tok in enumerate(tokens):
            node = imports.get(tok.start) if tok.type == tokenize.NAME else None
            if node is not None:  # `from` or `import` (an INDENT or DEDENT starts there too)
                for first in self._import_firsts(node, tokens, i, path):
                    edits.append((at(*first.start), at(*first.end), f"{TOP}.{first.string}"))
            elif tok.type in _STRING_TOKENS:
                new, names = self._string(tok)
                if names:
                    edits.append((at(*tok.start), at(*tok.end), new))
                    strings += [Rewritten(path, tok.start[0], name) for name in names]
        for start, end, text in sorted(edits, reverse=True):
            source = source[:start] + text + source[end:]
        return source, strings

    def _import_firsts(
        self,
        node: ast.Import | ast.ImportFrom,
        tokens: list[tokenize.TokenInfo],
        at: int,
        path: str,
    ) -> Iterator[tokenize.TokenInfo]:
        """The first-name tokens of the moved modules the import statement at `at` imports."""
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module is not None and self.moved(node.module):
                first = tokens[at + 1]  # the token after `from`
                if first.string != node.module.split(".")[0]:
                    raise RewriteError(f"{path}:{node.lineno}: unexpected token {first.string!r}")
                yield first
            return
        # `import a.b as c, d`: the first name after `import` and after each comma.
        firsts = []
        expect = True
        for tok in tokens[at + 1 :]:
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or tok.string == ";":
                break
            if tok.type == tokenize.NAME and expect:
                firsts.append(tok)
                expect = False
            elif tok.string == ",":
                expect = True
        if len(firsts) != len(node.names):
            raise RewriteError(f"{path}:{node.lineno}: cannot read this import statement")
        for alias, first in zip(node.names, firsts, strict=True):
            if not self.moved(alias.name):
                continue
            if alias.asname is None:
                raise RewriteError(
                    f"{path}:{node.lineno}: `import {alias.name}` binds `{first.string}`, which "
                    f"the wheel moves under {TOP}; use `from ... import` or `import ... as`"
                )
            yield first

    def _string(self, tok: tokenize.TokenInfo) -> tuple[str, list[str]]:
        """A string token with the module names it holds renamed, and those names."""
        text = tok.string
        if tok.type == tokenize.STRING and "." in text and any(p in text for p in self.packages):
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):  # an f-string (one token before Python 3.12)
                value = None
            if isinstance(value, str) and "." in value and self.is_module(value):
                # Exactly a module name: no escapes, so it stands in the literal verbatim.
                opening = text.index(value)
                return f"{text[:opening]}{TOP}.{text[opening:]}", [value]
        names: list[str] = []
        if any(kept in text for kept in self.keep):
            return text, names

        def python_m(match: re.Match[str]) -> str:
            name = match.group(2).rstrip(".")
            if not self.is_module(name):
                return match.group(0)
            names.append(name)
            return f"{match.group(1)}{TOP}.{match.group(2)}"

        return PYTHON_M.sub(python_m, text), names


# f-strings are one STRING token before Python 3.12, FSTRING_MIDDLE pieces since.
_STRING_TOKENS = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}


def statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement of the module, nested ones too (an import is a statement: no need to
    visit expressions)."""
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        for field in ("body", "orelse", "finalbody"):
            nested = getattr(node, field, None)
            if isinstance(nested, list):
                todo += nested
        for clause in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            todo += clause.body


def top_level_imports(source: str, names: Iterable[str]) -> list[str]:
    """The modules `source` imports whose top-level package is one of `names` (absolute
    imports; relative ones stay inside their package)."""
    wanted = set(names)
    found = []
    for node in statements(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [m for m in modules if m.split(".")[0] in wanted]
    return found


def package_files(
    root: Path, package: str, excluded: Callable[[str], bool] | None = None
) -> Iterator[Path]:
    """The files of `package` (a folder of `root`) a wheel carries: not bytecode, not what
    `excluded(relative path)` says (the build's exclusions: .gitignore)."""
    for folder, dirs, files in os.walk(root / package):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if d != "__pycache__"
            and not (excluded and excluded((here / d).relative_to(root).as_posix() + "/"))
        )
        for name in sorted(files):
            path = here / name
            relative = path.relative_to(root).as_posix()
            if path.suffix in (".pyc", ".pyo") or (excluded and excluded(relative)):
                continue
            yield path


def stage(
    root: Path,
    packages: tuple[str, ...],
    out: Path,
    excluded: Callable[[str], bool] | None = None,
    keep: tuple[str, ...] = (),
) -> tuple[dict[str, str], list[Rewritten]]:
    """Writes the wheel's `ocm_placement/` into `out`: `ocm_placement`'s own files and the
    moved `packages` under it, every module rewritten. The map {file written: its path in the
    wheel}, and the strings renamed."""
    rewriter = Rewriter(root, packages, keep)
    placed: dict[str, str] = {}
    strings: list[Rewritten] = []
    for package in (TOP, *packages):
        for path in package_files(root, package, excluded):
            relative = path.relative_to(root).as_posix()
            inside = relative if package == TOP else f"{TOP}/{relative}"
            target = out / inside
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".py":
                text, renamed = rewriter.rewrite(path.read_text(encoding="utf-8"), relative)
                strings += renamed
                left = top_level_imports(text, packages)
                if left:
                    raise RewriteError(f"{relative}: still imports {left} after the rewrite")
                compile(text, inside, "exec")
                target.write_text(text, encoding="utf-8")
            else:
                shutil.copyfile(path, target)
            placed[str(target)] = inside
    return placed, strings


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """The wheel (not the editable install): `ocm_placement/` as `stage` writes it, plus the
    configured data folders."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        packages = tuple(self.config.get("packages", ()))
        data: dict[str, str] = dict(self.config.get("data", {}))
        self._staging = tempfile.mkdtemp(prefix="ocm-placement-wheel-")
        root = Path(self.root)
        config = self.build_config
        keep = tuple(self.config.get("keep-strings", ()))
        placed, _ = stage(root, packages, Path(self._staging), config.path_is_excluded, keep)
        # One entry per file: a staged file then takes the place of the project file at the
        # same path in the wheel (ocm_placement's own modules), which hatchling skips.
        build_data["force_include"].update(placed)
        for source, inside in data.items():
            build_data["force_include"][str(root / source)] = f"{TOP}/{inside}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        staging = getattr(self, "_staging", None)
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
