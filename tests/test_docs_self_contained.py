"""What users read (README.md, docs/, the samples' READMEs) points only at files inside the
repository: no `../` path out of it, no section of a design document users do not have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\.\./shared|\bDESIGN(?:\.md)?\b|(?<![\w/])\.\./(?!\.\.)")


def user_pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pages += sorted((ROOT / "config").rglob("README.md"))
    pages += sorted((ROOT / "config").glob("*.md"))
    return [page for page in pages if page.is_file()]


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_user_page_points_only_inside_the_repository(page: Path) -> None:
    problems = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        for match in OUTSIDE.finditer(line):
            # A relative link out of a subfolder is fine while it stays inside the repository.
            if match.group(0) == "../":
                target = line[match.start() :].split(")")[0].split("`")[0].split()[0]
                if (page.parent / target).resolve().is_relative_to(ROOT):
                    continue
            problems.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()}")
    assert problems == []


def test_the_pattern_catches_what_it_is_for() -> None:
    assert OUTSIDE.search("see `../shared/DESIGN.md`")
    assert OUTSIDE.search("as DESIGN §9 says")
    assert not OUTSIDE.search("the designs' examples (`config/samples/designs/`)")
