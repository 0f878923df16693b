"""docs/pod-scheduler.md names the kube-scheduler release we follow and keeps a table of the
rules that changed between kube releases: each row gives a release (or the kube PR) and either
names, in backticks, something our code or docs really have, or says plainly that we do not
follow it, so a row cannot claim a feature we never touched."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "pod-scheduler.md"
HEADING = "## Which kube-scheduler we follow"
RELEASE = re.compile(r"\b1\.[23]\d\b|#\d{5,6}\b")


def section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(HEADING)
    end = text.index("\n## ", start + len(HEADING))
    return text[start:end]


def version_rows(text: str) -> list[list[str]]:
    """The rows of the table whose header is `| rule | kube release | what we do |`."""
    lines = text.splitlines()
    start = lines.index("| rule | kube release | what we do |")
    rows: list[list[str]] = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def product_text() -> str:
    """Our code and the docs outside the version section."""
    parts = [section_free_docs()]
    for folder in ("placement", "plugins", "controllers", "apis"):
        parts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / folder).rglob("*.py"))]
    return "\n".join(parts)


def section_free_docs() -> str:
    texts = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        texts.append(text.replace(section(), "") if page == PAGE else text)
    return "\n".join(texts)


def test_the_page_names_kube_scheduler_v1_36_as_the_reference() -> None:
    text = section()
    assert "kube-scheduler **v1.36**" in text
    for topic in ("messages", "scores", "defaults", "queueing"):
        assert topic in text.split("\n\n")[1]


def test_each_version_row_gives_a_release_and_names_something_we_have() -> None:
    rows = version_rows(section())
    assert len(rows) >= 10
    known = product_text()
    problems = []
    for rule, release, ours in rows:
        if not RELEASE.search(release):
            problems.append(f"no release or PR: {rule}")
        if not ours:
            problems.append(f"says nothing of what we do: {rule}")
        if ours.startswith("**not followed**"):
            continue  # said plainly: nothing of ours to name
        named = re.findall(r"`([^`]+)`", rule + " " + ours)
        if not any(name in known for name in named):
            problems.append(f"names nothing of ours: {rule}")
    assert problems == []


def test_the_rule_sees_what_it_is_for() -> None:
    made_up = [["`NoSuchGateAnywhere`", "1.36", "followed"], ["`minDomains`", "soon", "x"]]
    known = product_text()
    assert not any(name in known for name in re.findall(r"`([^`]+)`", made_up[0][0]))
    assert not RELEASE.search(made_up[1][1])
