"""The repository explains itself: nothing in it points at a document it does not hold.

The project was built from design notes that live outside the repository. A reader of the code
or the docs does not have them, so a pointer such as "DESIGN §4.2" or "reference pod-level.md
§1.3" tells them nothing: what such a pointer meant is written into docs/, and code points there
("docs/replacing-ocm.md, 'Differences from OCM'"). Two tests keep it so: the pages users read
(README.md, docs/, the samples' READMEs) link only to files inside the repository, and no text
file of the repository (code, docs, manifests, configuration) points at the design notes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

POINTER = re.compile(
    r"\.\./shared"  # the folder beside the repository that holds the notes
    r"|\bDESIGN(?:\.md)?\b"  # the design document (not the names DESIGNS, DESIGN_FORM ...)
    r"|\breference\s+(?:notes|pod-level)"  # the reference notes by name
    r"|\b(?:ocm-placement|pod-level|spread-and-perf)\.md\b"  # ... and by file
    r"|§"  # a numbered section of one of them ("OCM §2.1", "reference §1.9", a bare "§2.3")
)
"""A pointer at the design notes the repository was built from."""
KEYS = (
    "../shared",
    "DESIGN",
    "reference",
    "§",
    "pod-level.md",
    "spread-and-perf.md",
    "ocm-placement.md",
)
"""Text without any of these holds no `POINTER`: a fast test before the regular expression."""
STANDARD = re.compile(r"\bRFC\s?\d+\s*$")
"""What a `§` may follow: a section of a public standard ("RFC 6902 §4.1") is fine."""
CLIMB = re.compile(r"(?<![\w/.])\.\./[^\s)`'\"\]>#]*")
"""A relative path that climbs a folder; in Markdown it must still end inside the repository."""

SCANNED = {".py", ".md", ".yaml", ".yml", ".toml", ".cfg", ".txt"}
SKIPPED_DIRS = {
    ".git",
    ".venv",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".benchmarks",
    ".hypothesis",
    "build",
    "dist",
    "site",
    "node_modules",
}
# Recorded outputs (harness reports of past runs, kept as measured) and generated copies.
SKIPPED_PATHS = {"perf/reports", "controllers/cli/data"}
SELF = Path(__file__).resolve()


def pointers(line: str) -> list[str]:
    """The pointers out of the repository in one line of text."""
    found: list[str] = []
    for match in POINTER.finditer(line):
        if match.group(0) == "§" and STANDARD.search(line[: match.start()]):
            continue
        found.append(match.group(0))
    return found


def escapes(line: str, folder: Path) -> list[str]:
    """The relative paths in a Markdown line that lead out of the repository from `folder`."""
    return [
        path for path in CLIMB.findall(line) if not (folder / path).resolve().is_relative_to(ROOT)
    ]


def text_files() -> Iterator[Path]:
    """Every text file of the source tree, recorded harness outputs and caches left out."""
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        relative = here.relative_to(ROOT).as_posix()
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIPPED_DIRS
            and not d.endswith(".egg-info")
            and f"{relative}/{d}".removeprefix("./") not in SKIPPED_PATHS
            and not (relative == "perf" and d.startswith("results"))
        )
        for name in sorted(files):
            path = here / name
            if path.suffix in SCANNED and path != SELF:
                yield path


def problems(path: Path) -> list[str]:
    """One line per pointer out of the repository in `path`: `file:line: text`."""
    markdown = path.suffix == ".md"
    fenced = False  # inside a code block, a path is relative to where the reader puts the file
    out: list[str] = []
    text = path.read_text(encoding="utf-8", errors="replace")
    may_point = any(key in text for key in KEYS) and POINTER.search(text) is not None
    if not may_point and not (markdown and "../" in text):
        return out  # nearly every file: a few substring tests, no line by line
    for number, line in enumerate(text.splitlines(), start=1):
        if markdown and line.lstrip().startswith("```"):
            fenced = not fenced
        climbs = markdown and not fenced and escapes(line, path.parent)
        if pointers(line) or climbs:
            out.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return out


def user_pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pages += sorted((ROOT / "config").rglob("README.md"))
    pages += sorted((ROOT / "config").glob("*.md"))
    return [page for page in pages if page.is_file()]


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_user_page_points_only_inside_the_repository(page: Path) -> None:
    assert problems(page) == []


def test_no_file_points_at_the_design_notes() -> None:
    """Code comments, docstrings, docs, manifests: each hit is a pointer to replace by the docs
    page (or the file) of this repository that says the same."""
    found = [problem for path in text_files() for problem in problems(path)]
    assert found == []


def test_the_files_scanned_include_code_docs_and_manifests() -> None:
    scanned = {path.relative_to(ROOT).as_posix() for path in text_files()}
    for expected in (
        "README.md",
        "docs/replacing-ocm.md",
        "placement/outcome.py",
        "perf/RESULTS.md",
        "pyproject.toml",
        "config/samples/hub/00-namespaces.yaml",
    ):
        assert expected in scanned
    assert not any(path.startswith(("perf/results/", "perf/results-")) for path in scanned)
    assert "tests/test_docs_self_contained.py" not in scanned


@pytest.mark.parametrize(
    "line",
    [
        "see `../shared/DESIGN.md`",
        "as DESIGN §9 says",
        "the DESIGN says so",
        "a deliberate difference (DESIGN §4.3)",
        "which clusters a placement may choose from (OCM reference §0 steps 2-4, §1.2)",
        "prefer clusters that carry fewer decisions of other placements (OCM §2.1)",
        "OCM's event fan-out (reference §1.9)",
        "the anchor's `core.Manager`, reference pod-level.md §1.2-1.3",
        "The spot/on-demand rules (reference pod-level §3.4 and the §3.5 vectors)",
        "allocatable resources with OCM's truncation (§2.3)",
        "as the reference notes say",
        "see spread-and-perf.md",
    ],
)
def test_the_pattern_catches_what_it_is_for(line: str) -> None:
    assert pointers(line)


@pytest.mark.parametrize(
    "line",
    [
        "the designs' examples (`config/samples/designs/`)",
        'DESIGNS = ROOT / "config" / "samples" / "designs"',
        'DESIGN_FORM = "# The design writes it in the v1alpha1 form"',
        "`add` of an existing member replaces it (RFC 6902 §4.1)",
        '{"controllers/shared/__init__.py": ""}',
        "OCM's spread-policy design (enhancement 70)",
        "docs/replacing-ocm.md, 'Differences from OCM'",
    ],
)
def test_the_pattern_leaves_alone_what_is_in_the_repository(line: str) -> None:
    assert pointers(line) == []


def test_a_markdown_path_may_climb_only_while_it_stays_inside() -> None:
    docs = ROOT / "docs"
    assert escapes("![plot](../perf/results/cycle.png)", docs) == []
    assert escapes("see [the notes](../../shared/DESIGN.md)", docs) == ["../../shared/DESIGN.md"]
    assert escapes("`cd ../..` leaves the repository", docs) == ["../.."]
